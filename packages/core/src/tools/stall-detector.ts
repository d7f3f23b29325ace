import type { ToolCall } from "../messages.js";
import { canonicalHash, canonicalJsonWithin } from "./canonical-json.js";

/**
 * A "call" is a tool name with its arguments compared as canonical JSON. Counts are per reply: the
 * calls of one model reply were requested together, so they never count against each other, and
 * everything starts again at `reset()` (a user, follow-up or steering message).
 */
export interface StallOptions {
  /**
   * A call made in this many replies is a repeat (default 2), counting only the replies since the
   * last one that made a call never made before (anywhere in the reply: see `announceCalls`): such
   * a call (a write, a send) may have changed what earlier calls return. So reading a file, editing
   * it and reading it again is no repeat, while the same reply of calls twice, or a cycle of calls
   * all made before, is. The repeat is not run and the model gets a nudge instead; the same call in
   * a later reply stops the run as `stalled`.
   */
  repeatedCalls?: number;
  /**
   * A call that returns the same result this many times in a row, once per reply, is a repeat
   * (default 3), whatever ran in between; a different result starts its count again. Different
   * calls returning the same text (five emails "sent") never count. The result gets a note for the
   * model; the same result once more in a later reply stops the run as `stalled`.
   */
  repeatedResults?: number;
}

/** What to do about a call or a result: nothing, tell the model (once), or stop the run. */
export type StallVerdict =
  | { kind: "ok" }
  | { kind: "nudge"; message: string }
  | { kind: "stall"; message: string };

const OK: StallVerdict = { kind: "ok" };
const NEVER = -1;

/**
 * Notices a run going in circles: the same call again in a later reply, or a call returning the same
 * result reply after reply. The model is nudged first (in the tool result); only if a later reply
 * does it again — so a model call has seen the nudge — does the run stop as `stalled`. Tools that
 * poll opt out.
 *
 * The host calls `beginReply()` at each model call (what it asks for — one reply's calls, or every
 * wave of one plan — is one reply), `announceCalls` with the calls it is about to check, before the
 * first of them, `checkCall` before each call runs, `checkResult` after each ok result, and
 * `reset()` when a user, follow-up or steering message enters the history.
 */
export class StallDetector {
  readonly #repeatedCalls: number;
  readonly #repeatedResults: number;
  /** Per tool name, the distinct arguments called since the last reset, by their canonical hash. */
  readonly #calls = new Map<string, Map<number, SeenCall>>();
  /**
   * The checked calls waiting for their result: ids and entries side by side, a reply's few calls
   * (a `Map` allocated a new table at every clear, and this is cleared at every model call).
   */
  readonly #runningIds: string[] = [];
  readonly #runningEntries: SeenCall[] = [];
  #reply = 0;
  /** The last reply that made a call never made before: calls of earlier replies are not compared. */
  #windowStart = 0;

  constructor(options: StallOptions = {}) {
    this.#repeatedCalls = atLeast(2, options.repeatedCalls ?? 2, "repeatedCalls");
    this.#repeatedResults = atLeast(2, options.repeatedResults ?? 3, "repeatedResults");
  }

  /** A new model reply's calls are about to run: the calls checked so far become earlier replies. */
  beginReply(): void {
    this.#reply++;
    this.#runningIds.length = 0;
    this.#runningEntries.length = 0;
  }

  /**
   * The calls about to be checked, before the first of them. When one was never made before, the
   * reply starts a new window now, for all its calls: a repeat is judged the same whether the new
   * call comes before or after it. A plan announces each wave when it starts (a later wave's
   * arguments may not be known yet), so a new call in a later wave excuses only calls after it.
   */
  announceCalls(calls: readonly ToolCall[]): void {
    // One call decides it alone in `checkCall`; so does a reply already known to make a new call.
    if (calls.length < 2 || this.#windowStart === this.#reply) return;
    for (const call of calls)
      if (this.#neverMade(call)) {
        this.#windowStart = this.#reply;
        return;
      }
  }

  /** A user, follow-up or steering message entered the history: nothing before it counts. */
  reset(): void {
    this.#calls.clear();
    this.#runningIds.length = 0;
    this.#runningEntries.length = 0;
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
    let entry: SeenCall | undefined;
    // The common case, arguments never seen: known from the hash, without building any text.
    if (first === undefined) {
      entry = new SeenCall(call.args, this.#reply);
      seen.set(hash, entry);
    } else {
      const canonical = canonicalOf(call.args);
      entry = first;
      while (entry !== undefined && entry.canonical !== canonical) entry = entry.next;
      if (entry !== undefined) return this.#repeated(entry, call);
      entry = new SeenCall(call.args, this.#reply, canonical, first.next);
      first.next = entry;
    }
    this.#windowStart = this.#reply;
    this.#runningIds.push(call.id);
    this.#runningEntries.push(entry);
    return OK;
  }

  /** Called with the text of each ok result, in any order. */
  checkResult(call: ToolCall, content: string): StallVerdict {
    const index = this.#runningIds.indexOf(call.id);
    // Not checked by `checkCall` in this reply: nothing known to compare it with.
    if (index < 0) return OK;
    const entry = this.#runningEntries[index] as SeenCall;
    // Order does not matter: the last pair takes the place of the one that is done.
    this.#runningIds[index] = this.#runningIds[this.#runningIds.length - 1] as string;
    this.#runningEntries[index] = this.#runningEntries[this.#runningEntries.length - 1] as SeenCall;
    this.#runningIds.pop();
    this.#runningEntries.pop();
    if (content !== entry.result) {
      entry.result = content;
      entry.results = 1;
      entry.resultReply = this.#reply;
      entry.resultNudged = NEVER;
      return OK;
    }
    if (entry.resultReply !== this.#reply) {
      entry.results++;
      entry.resultReply = this.#reply;
    }
    if (entry.results < this.#repeatedResults) return OK;
    if (this.#mayStall(entry.resultNudged))
      return {
        kind: "stall",
        message: `"${call.name}" kept returning the same result after a warning (${entry.results} times in a row).`,
      };
    entry.resultNudged = this.#reply;
    return {
      kind: "nudge",
      message: `"${call.name}" returned the same result ${entry.results} times in a row; more of the same calls will not change it. Change your approach or answer with what you have.`,
    };
  }

  #neverMade(call: ToolCall): boolean {
    const first = this.#calls.get(call.name)?.get(canonicalHash(call.args));
    if (first === undefined) return true;
    const canonical = canonicalOf(call.args);
    for (let entry: SeenCall | undefined = first; entry !== undefined; entry = entry.next)
      if (entry.canonical === canonical) return false;
    return true;
  }

  #repeated(entry: SeenCall, call: ToolCall): StallVerdict {
    if (entry.lastReply < this.#windowStart) {
      entry.replies = 1;
      entry.nudged = NEVER;
    } else if (entry.lastReply !== this.#reply) entry.replies++;
    entry.lastReply = this.#reply;
    this.#runningIds.push(call.id);
    this.#runningEntries.push(entry);
    if (entry.replies < this.#repeatedCalls) return OK;
    if (this.#mayStall(entry.nudged))
      return {
        kind: "stall",
        message: `"${call.name}" was called again with the same arguments after a warning.`,
      };
    entry.nudged = this.#reply;
    return {
      kind: "nudge",
      message: `You already called "${call.name}" with these same arguments; repeating it will not give anything new. Use the result you have, or try something different.`,
    };
  }

  /** Only a later reply than the nudge's can stall: the model has seen the nudge since. */
  #mayStall(nudgedInReply: number): boolean {
    return nudgedInReply !== NEVER && nudgedInReply !== this.#reply;
  }
}

/**
 * A call since the last reset: in which replies it was made, what it returned, and when the model
 * was warned. Arguments whose hashes collide are chained; their canonical text is only built once
 * a hash is seen twice.
 */
class SeenCall {
  /** The replies it was made in, since the calls of its last one went stale. */
  replies = 1;
  nudged = NEVER;
  result: string | undefined;
  /** How many times in a row (once per reply) it returned `result`. */
  results = 0;
  resultReply = NEVER;
  resultNudged = NEVER;
  #canonical: string | undefined;

  constructor(
    readonly args: unknown,
    public lastReply: number,
    canonical?: string,
    public next?: SeenCall,
  ) {
    this.#canonical = canonical;
  }

  get canonical(): string {
    this.#canonical ??= canonicalOf(this.args);
    return this.#canonical;
  }
}

/**
 * Deeper than any real tool call nests, and far from the some 4,000 levels at which writing the
 * canonical text recursively would overflow the stack (and crash the run).
 */
const MAX_COMPARED_DEPTH = 1000;
let tooDeep = 0;

/**
 * The text calls are compared by: their canonical JSON. Arguments nested deeper than
 * `MAX_COMPARED_DEPTH` get a text of their own that is not JSON, so it matches no other call: such
 * a call counts as never made before (it runs, and starts the count of repeats again), the choice
 * that can never refuse a call wrongly. Hashing the model's raw JSON text instead is no way out:
 * the calls hold parsed arguments, and `JSON.stringify` overflows at about the same depth.
 */
function canonicalOf(args: unknown): string {
  return canonicalJsonWithin(args, MAX_COMPARED_DEPTH) ?? `too deep to compare #${tooDeep++}`;
}

function atLeast(minimum: number, value: number, name: string): number {
  if (!Number.isInteger(value) || value < minimum) {
    const shown = typeof value === "string" ? JSON.stringify(value) : String(value);
    throw new RangeError(`stall.${name} must be a whole number >= ${minimum}, got ${shown}.`);
  }
  return value;
}
