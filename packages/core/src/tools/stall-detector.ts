import type { ToolCall } from "../messages.js";

export interface StallOptions {
  /** The same tool with the same arguments this many times is a repeat (default 2). */
  repeatedCalls?: number;
  /** The same result this many times in a row is a repeat (default 3). */
  repeatedResults?: number;
}

/** What to do about a call or a result: nothing, tell the model (once), or stop the run. */
export type StallVerdict =
  | { kind: "ok" }
  | { kind: "nudge"; message: string }
  | { kind: "stall"; message: string };

const OK: StallVerdict = { kind: "ok" };

/**
 * Notices a run going in circles: a tool called again with the same (canonical) arguments, or the
 * same result coming back several times in a row. The first time, the model gets a nudge in the
 * tool result; if it keeps going, the run stops as `stalled`. Tools that poll opt out.
 */
export class StallDetector {
  readonly #repeatedCalls: number;
  readonly #repeatedResults: number;
  /** Per tool name, how often each canonical argument text was seen. */
  readonly #callCounts = new Map<string, Map<string, number>>();
  readonly #nudgedCalls = new Set<string>();
  #lastResult: string | undefined;
  #resultStreak = 0;
  #nudgedResult = false;

  constructor(options: StallOptions = {}) {
    this.#repeatedCalls = atLeast(2, options.repeatedCalls ?? 2, "repeatedCalls");
    this.#repeatedResults = atLeast(2, options.repeatedResults ?? 3, "repeatedResults");
  }

  /** Called before a call runs. */
  checkCall(call: ToolCall): StallVerdict {
    const args = canonicalJson(call.args);
    let counts = this.#callCounts.get(call.name);
    if (counts === undefined) {
      counts = new Map();
      this.#callCounts.set(call.name, counts);
    }
    const count = (counts.get(args) ?? 0) + 1;
    counts.set(args, count);
    if (count < this.#repeatedCalls) return OK;
    const signature = `${call.name}\u0000${args}`;
    if (this.#nudgedCalls.has(signature))
      return {
        kind: "stall",
        message: `"${call.name}" was called again with the same arguments after a warning.`,
      };
    this.#nudgedCalls.add(signature);
    return {
      kind: "nudge",
      message: `You already called "${call.name}" with these same arguments; repeating it will not give anything new. Use the result you have, or try something different.`,
    };
  }

  /** Called with each result's text, in completion order. */
  checkResult(call: ToolCall, content: string): StallVerdict {
    if (content === this.#lastResult) this.#resultStreak++;
    else {
      this.#lastResult = content;
      this.#resultStreak = 1;
      this.#nudgedResult = false;
    }
    if (this.#resultStreak < this.#repeatedResults) return OK;
    if (this.#nudgedResult)
      return {
        kind: "stall",
        message: `The same result kept coming back (${this.#resultStreak} times in a row).`,
      };
    this.#nudgedResult = true;
    return {
      kind: "nudge",
      message: `"${call.name}" returned the same result ${this.#resultStreak} times in a row; more of the same calls will not change it. Change your approach or answer with what you have.`,
    };
  }
}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same arguments. Built directly:
 * a stringify replacer would copy every object on each call. */
export function canonicalJson(value: unknown): string {
  // The common case, a flat object whose keys are already in order: the native serializer is
  // canonical there, and fast.
  if (isFlatAndSorted(value)) return JSON.stringify(value);
  if (keysSorted(value)) return JSON.stringify(value) ?? "null";
  return buildCanonical(value);
}

function isFlatAndSorted(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (i > 0 && key < (keys[i - 1] as string)) return false;
    const item = (value as Record<string, unknown>)[key];
    const type = typeof item;
    if (type !== "number" && type !== "string" && type !== "boolean" && item !== null) return false;
  }
  return true;
}

function keysSorted(value: unknown): boolean {
  if (value === null || typeof value !== "object") return typeof value !== "function";
  if (Array.isArray(value)) return value.every(keysSorted);
  let previous = "";
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (key < previous || item === undefined || !keysSorted(item)) return false;
    previous = key;
  }
  return true;
}

function buildCanonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + buildCanonical(value[i] ?? null);
    return `${out}]`;
  }
  const keys = Object.keys(value);
  if (keys.length > 1) keys.sort();
  let out = "{";
  let first = true;
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || typeof item === "function") continue;
    out += `${first ? "" : ","}${JSON.stringify(key)}:${buildCanonical(item)}`;
    first = false;
  }
  return `${out}}`;
}

function atLeast(minimum: number, value: number, name: string): number {
  if (!Number.isInteger(value) || value < minimum)
    throw new RangeError(`stall.${name} must be a whole number >= ${minimum}, got ${value}.`);
  return value;
}
