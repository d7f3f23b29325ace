import type { ToolCall } from "../messages.js";
import { canonicalHash, canonicalJson } from "./canonical-json.js";

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
  /** Per tool name, the distinct arguments seen so far, by their canonical hash. */
  readonly #calls = new Map<string, Map<number, SeenArguments>>();
  #lastResult: string | undefined;
  #resultStreak = 0;
  #nudgedResult = false;

  constructor(options: StallOptions = {}) {
    this.#repeatedCalls = atLeast(2, options.repeatedCalls ?? 2, "repeatedCalls");
    this.#repeatedResults = atLeast(2, options.repeatedResults ?? 3, "repeatedResults");
  }

  /** Called before a call runs. */
  checkCall(call: ToolCall): StallVerdict {
    let seen = this.#calls.get(call.name);
    if (seen === undefined) {
      seen = new Map();
      this.#calls.set(call.name, seen);
    }
    const hash = canonicalHash(call.args);
    const first = seen.get(hash);
    // The common case, arguments never seen: known from the hash, without building any text.
    if (first === undefined) {
      seen.set(hash, new SeenArguments(call.args));
      return OK;
    }
    const canonical = canonicalJson(call.args);
    let entry: SeenArguments | undefined = first;
    while (entry !== undefined && entry.canonical !== canonical) entry = entry.next;
    if (entry === undefined) {
      first.next = new SeenArguments(call.args, canonical, first.next);
      return OK;
    }
    entry.count++;
    if (entry.count < this.#repeatedCalls) return OK;
    if (entry.nudged)
      return {
        kind: "stall",
        message: `"${call.name}" was called again with the same arguments after a warning.`,
      };
    entry.nudged = true;
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

/** Arguments a tool was called with, how often, and whether the model was warned; arguments whose
 * hashes collide are chained. Their canonical text is only built once a hash is seen twice. */
class SeenArguments {
  count = 1;
  nudged = false;
  #canonical: string | undefined;

  constructor(
    readonly args: unknown,
    canonical?: string,
    public next?: SeenArguments,
  ) {
    this.#canonical = canonical;
  }

  get canonical(): string {
    this.#canonical ??= canonicalJson(this.args);
    return this.#canonical;
  }
}

function atLeast(minimum: number, value: number, name: string): number {
  if (!Number.isInteger(value) || value < minimum)
    throw new RangeError(`stall.${name} must be a whole number >= ${minimum}, got ${value}.`);
  return value;
}
