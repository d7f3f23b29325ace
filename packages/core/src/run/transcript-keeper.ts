import { AbortedError, InvalidHistoryError } from "../errors.js";
import type {
  AgentMessage,
  AssistantMessage,
  ToolCall,
  ToolResultMessage,
  ToolResultStatus,
} from "../messages.js";
import { toolResult } from "../tools/execute-tool.js";

/** A result the keeper made for a call that had none, so the history stays valid. */
export interface ClosedCall {
  call: ToolCall;
  result: ToolResultMessage;
}

const NONE: readonly ClosedCall[] = Object.freeze([]);

/** The result of a call the history moved on from (a user or assistant message, a model call). */
export const WENT_ON = "not completed: the run went on without its result";

/**
 * The only writer of an agent's history. It keeps, on every append, the rules a strict provider
 * enforces: every tool call is answered by exactly one result, right after the message that made
 * it, in call order; a result answers an open call or is refused; tool-call ids are unique.
 * Results that finish early wait until the calls before them are answered. A run writes through
 * its own `TranscriptWriter`, which stops accepting writes when the run ends.
 */
export class TranscriptKeeper {
  readonly #history: AgentMessage[];
  /** Calls of the last assistant message still without a result in the history, in call order. */
  #open: ToolCall[] = [];
  /** Results that finished before the calls ahead of them: flushed in call order. */
  #early: Map<string, ToolResultMessage> | undefined;
  /** Every tool-call id in the history. */
  readonly #callIds = new Set<string>();

  constructor(history: AgentMessage[] = []) {
    this.#history = history;
  }

  get messages(): readonly AgentMessage[] {
    return this.#history;
  }

  /** Calls still waiting for a result (after a run that suspended, for instance). */
  get openCalls(): readonly ToolCall[] {
    return this.#open;
  }

  writer(): TranscriptWriter {
    return new TranscriptWriter(this);
  }

  clear(): void {
    this.#history.length = 0;
    this.#open = [];
    this.#early = undefined;
    this.#callIds.clear();
  }

  /**
   * Answers the open calls that `kept` does not hold, as `close` does (returned); those stay open
   * (a suspended batch's, for the run that resumes it), the results still in call order.
   */
  closeAllBut(kept: readonly ToolCall[], status: ToolResultStatus, reason: string): readonly ClosedCall[] {
    const closed: ClosedCall[] = [];
    for (const call of this.#open.slice()) {
      if (this.#early?.has(call.id) || kept.some((keep) => keep.id === call.id)) continue;
      const result = toolResult(call, status, reason);
      this.record(result);
      closed.push({ call, result });
    }
    return closed;
  }

  /**
   * The first tool-call id of a prompt's assistant messages that a call of the history already
   * uses (undefined: none). Asked when the prompt's run starts, before any of it is appended: a
   * prompt that waited its turn meets the history the runs before it left.
   */
  takenCallId(prompt: readonly AgentMessage[]): string | undefined {
    if (this.#callIds.size === 0) return undefined;
    for (const message of prompt) {
      if (message.role !== "assistant") continue;
      for (const block of (message as AssistantMessage).content)
        if (block.type === "toolCall" && this.#callIds.has(block.id)) return block.id;
    }
    return undefined;
  }

  /**
   * The calls of a model reply with ids unique in the history and among themselves: a call whose
   * id is taken gets a fresh one (`id_2`, `id_3`, …) and keeps the model's as `originalId`. So
   * does an empty id (`call_1`, `call_2`, …), which names no call: sent back, a provider may refuse
   * it, and a client could not address it. Returns `calls` itself when no id changed.
   */
  withUniqueIds(calls: ToolCall[]): ToolCall[] {
    let renamed: ToolCall[] | undefined;
    let seen: Set<string> | undefined;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i] as ToolCall;
      const empty = call.id === "";
      const base = empty ? "call" : call.id;
      let id = call.id;
      for (let n = empty ? 1 : 2; id === "" || this.#callIds.has(id) || seen?.has(id); n++)
        id = `${base}_${n}`;
      if (calls.length > 1) {
        seen ??= new Set();
        seen.add(id);
      }
      if (id === call.id) continue;
      renamed ??= calls.slice();
      renamed[i] = { id, name: call.name, args: call.args, originalId: call.id };
    }
    return renamed ?? calls;
  }

  /**
   * Appends a message. A user or assistant message while calls are still open first closes them
   * (an `error` result each, returned so the run can report them): the model never sees a call
   * without its result. A tool result goes through `record`.
   */
  append(message: AgentMessage): readonly ClosedCall[] {
    if (message.role === "toolResult") {
      const verdict = this.record(message as ToolResultMessage);
      if (verdict !== "recorded")
        throw new InvalidHistoryError(
          `tool result "${(message as ToolResultMessage).toolCallId}" ${verdict === "duplicate" ? "answers a call that already has its result" : "answers no open tool call"}.`,
        );
      return NONE;
    }
    if (message.role !== "user" && message.role !== "assistant") {
      this.#history.push(message);
      return NONE;
    }
    // Checked before anything changes: a refused message leaves the keeper as it was.
    const calls = message.role === "assistant" ? this.#newCalls(message as AssistantMessage) : undefined;
    const closed = this.#open.length > 0 ? this.close("error", WENT_ON) : NONE;
    if (calls !== undefined) {
      for (const call of calls) this.#callIds.add(call.id);
      this.#open = calls;
    }
    this.#history.push(message);
    return closed;
  }

  /** Records the result of an open call; it enters the history once the calls before it have. */
  record(result: ToolResultMessage): "recorded" | "duplicate" | "unknown" {
    const position = this.#open.findIndex((call) => call.id === result.toolCallId);
    if (position < 0) return this.#callIds.has(result.toolCallId) ? "duplicate" : "unknown";
    if (this.#early?.has(result.toolCallId)) return "duplicate";
    if (position > 0) {
      this.#early ??= new Map();
      this.#early.set(result.toolCallId, result);
      return "recorded";
    }
    this.#history.push(result);
    this.#open.shift();
    this.#flushEarly();
    return "recorded";
  }

  /** Whether the call is open and its result not yet recorded. */
  awaits(toolCallId: string): boolean {
    return !this.#early?.has(toolCallId) && this.#open.some((call) => call.id === toolCallId);
  }

  /**
   * Answers every open call: with its recorded result when it finished, otherwise with a result of
   * `status` (returned, so the run can report it). The history is valid afterwards.
   */
  close(status: ToolResultStatus, reason: string): readonly ClosedCall[] {
    if (this.#open.length === 0) return NONE;
    const closed: ClosedCall[] = [];
    for (const call of this.#open) {
      const early = this.#early?.get(call.id);
      if (early !== undefined) this.#history.push(early);
      else {
        const result = toolResult(call, status, reason);
        this.#history.push(result);
        closed.push({ call, result });
      }
    }
    this.#open = [];
    this.#early = undefined;
    return closed;
  }

  /** The message's tool calls, refused when an id is taken (in the history or within the message). */
  #newCalls(message: AssistantMessage): ToolCall[] | undefined {
    let calls: ToolCall[] | undefined;
    for (const block of message.content) {
      if (block.type !== "toolCall") continue;
      if (this.#callIds.has(block.id) || calls?.some((call) => call.id === block.id))
        throw new InvalidHistoryError(
          `tool call id "${block.id}" is already used in the history; every call needs its own id.`,
        );
      const call = { id: block.id, name: block.name, args: block.args };
      if (calls === undefined) calls = [call];
      else calls.push(call);
    }
    return calls;
  }

  #flushEarly(): void {
    const early = this.#early;
    while (early !== undefined && this.#open.length > 0 && early.size > 0) {
      const next = early.get((this.#open[0] as ToolCall).id);
      if (next === undefined) return;
      early.delete(next.toolCallId);
      this.#history.push(next);
      this.#open.shift();
    }
  }
}

/** A run's pen on the history: it writes through the keeper until the run ends. */
export class TranscriptWriter {
  readonly #keeper: TranscriptKeeper;
  #closed = false;

  constructor(keeper: TranscriptKeeper) {
    this.#keeper = keeper;
  }

  get keeper(): TranscriptKeeper {
    return this.#keeper;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** No writes after this: a late writer of a run that has ended gets an `AbortedError`. */
  close(): void {
    this.#closed = true;
  }

  append(message: AgentMessage): readonly ClosedCall[] {
    this.#assertOpen();
    return this.#keeper.append(message);
  }

  /** Records a result; false when the run has ended or the result answers nothing still open. */
  record(result: ToolResultMessage): boolean {
    return !this.#closed && this.#keeper.record(result) === "recorded";
  }

  closeCalls(status: ToolResultStatus, reason: string): readonly ClosedCall[] {
    return this.#keeper.close(status, reason);
  }

  closeCallsBut(kept: readonly ToolCall[], status: ToolResultStatus, reason: string): readonly ClosedCall[] {
    return this.#keeper.closeAllBut(kept, status, reason);
  }

  /** The history moves on: every open call gets an `error` result (returned, to report). */
  moveOn(): readonly ClosedCall[] {
    this.#assertOpen();
    return this.#keeper.close("error", WENT_ON);
  }

  #assertOpen(): void {
    if (this.#closed) throw new AbortedError("the run has already ended");
  }
}
