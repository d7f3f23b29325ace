import { AbortedError, abortError, InvalidHistoryError } from "../errors.js";
import { type AgentMessage, type MessageInput, type ToolCall, toMessageAt } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import { canonicalJsonWithin } from "../tools/canonical-json.js";
import type { StallDetector } from "../tools/stall-detector.js";
import type { EventPublisher } from "./event-publisher.js";
import type { MessageInbox } from "./message-queue.js";
import type { MetricsRecorder } from "./metrics.js";
import type { Clock } from "./services.js";
import type { ToolBatch } from "./tool-batch.js";
import type { ClosedCall, TranscriptWriter } from "./transcript-keeper.js";

/**
 * A run's write side, beyond the tool batches: messages into the history through the transcript
 * writer, with what each one means for the rest of the run (events for calls the keeper had to
 * close, the stall window, the steering and follow-up inboxes). Every room of the run that adds a
 * message goes through here.
 */
export class RunLog {
  readonly #events: EventPublisher;
  readonly #transcript: TranscriptWriter;
  readonly #metrics: MetricsRecorder;
  readonly #scope: AbortScope;
  readonly #inboxes: readonly MessageInbox[];
  readonly #clock: Clock;
  /** Made with the run's first batch (many runs never call a tool). */
  stall: StallDetector | undefined;
  /** The batches under way: a call the run's end answers is reported to its batch. */
  readonly #running: ToolBatch[] = [];
  /** Batches that failed, whose calls the run's end may still answer (see `untrack`). */
  readonly #failed: ToolBatch[] = [];
  /** Set by `markEnding`. */
  #ending = false;

  constructor(
    events: EventPublisher,
    transcript: TranscriptWriter,
    metrics: MetricsRecorder,
    scope: AbortScope,
    inboxes: readonly MessageInbox[],
    clock: Clock,
  ) {
    this.#clock = clock;
    this.#events = events;
    this.#transcript = transcript;
    this.#metrics = metrics;
    this.#scope = scope;
    this.#inboxes = inboxes;
  }

  /** The history (the keeper's array: read only). */
  get history(): readonly AgentMessage[] {
    return this.#transcript.keeper.messages;
  }

  /** The calls of a model reply with ids unique in the history (see `TranscriptKeeper.withUniqueIds`). */
  uniqueIds(calls: ToolCall[]): ToolCall[] {
    return this.#transcript.keeper.withUniqueIds(calls);
  }

  /**
   * For a service's promise that is failing (`ctx.decide`, `ctx.executeTools`, …): when the run has
   * ended or was aborted, the run caused the failure (it cancels what is in flight), so the promise
   * is marked handled. An orchestrator that did not await the call must not crash the process with
   * an unhandled rejection; one that awaits it still gets the error.
   */
  settleQuietlyIfEnded(failing: Promise<unknown>): void {
    if (this.#transcript.closed || this.#scope.aborted) failing.catch(ignore);
  }

  /**
   * A service call refused before it started (`ctx.decide`, `ctx.executeTools`, …), as the promise
   * it returns. It rejects a timer tick later, not within microtasks: an orchestrator that retries
   * whatever is thrown would otherwise spin without the event loop ever turning, and no timer (the
   * grace period, `totalMs`, the app's own) could end it. Marked like `settleQuietlyIfEnded`'s.
   */
  refuse(error: unknown): Promise<never> {
    let reject!: (reason: unknown) => void;
    const refused = new Promise<never>((_resolve, rejectWith) => {
      reject = rejectWith;
    });
    setTimeout(() => {
      this.settleQuietlyIfEnded(refused);
      reject(error);
    }, 0);
    return refused;
  }

  /**
   * The run is ending (it suspended): nothing more may start or move the history on, while the
   * results of work under way still land until the run's end closes the transcript.
   */
  markEnding(): void {
    this.#ending = true;
  }

  /** Throws when the run has ended, is ending or was aborted: nothing more may start. */
  assertOpen(): void {
    if (this.#transcript.closed || this.#ending) throw new AbortedError("the run has already ended");
    if (this.#scope.aborted) throw abortError(this.#scope.signal.reason);
  }

  append(message: AgentMessage): void {
    // A user or assistant message answers the open calls (see `TranscriptKeeper.append`).
    if (message.role === "user" || message.role === "assistant") this.#assertNoneRunning();
    const closed = this.#transcript.append(message);
    if (closed.length > 0) this.publishClosed(closed);
    // A steering or follow-up message of any kind (an app's own role too) is delivered now.
    for (const inbox of this.#inboxes) inbox.delivered(message);
    if (message.role !== "user") return;
    // A new user, follow-up or steering message: the stall window starts again.
    this.stall?.reset();
  }

  /**
   * Before a model call: the calls of the history still waiting for their result are answered
   * (`error`), so the model never sees a call without its result. Refused while a batch runs one.
   */
  moveOn(): void {
    if (this.#transcript.keeper.openCalls.length === 0) return;
    this.#assertNoneRunning();
    this.publishClosed(this.#transcript.moveOn());
  }

  /** The id of an open call that a batch under way runs, if any. */
  runningOpenCall(): string | undefined {
    if (this.#running.length === 0) return undefined;
    for (const call of this.#transcript.keeper.openCalls) if (this.running(call.id)) return call.id;
    return undefined;
  }

  /**
   * The history cannot move on past a call that is still running: the call would be answered
   * `error` while its tool goes on, and the result it then gives would be dropped.
   */
  #assertNoneRunning(): void {
    const running = this.runningOpenCall();
    if (running !== undefined)
      throw new InvalidHistoryError(
        `tool call "${running}" is still running in an executeTools() batch: await the batch before the history moves on (a message or a model call would answer it while its tool runs).`,
      );
  }

  /** Appends messages that steer the run and emits `steering_applied`. */
  applySteering(inputs: readonly MessageInput[]): void {
    this.assertOpen();
    if (inputs.length === 0) return;
    const now = this.#clock.now();
    const messages = inputs.map((input) => toMessageAt(input, now));
    for (const message of messages) this.append(message);
    this.#events.publish({ type: "steering_applied", messages });
  }

  /**
   * Takes the calls of a batch about to run, or throws an `InvalidHistoryError` (and takes none)
   * when one cannot run: each must be a call of the history still waiting for its result (so its
   * result has a place, right after the message that made it), with that call's name, and not run
   * by another batch under way. A call the orchestrator made up, or one that has its result, would
   * run a tool whose result answers nothing: its side effects would happen, twice for a repeat,
   * and its `tool_call` would never get a `tool_result`.
   */
  claim(calls: readonly ToolCall[]): void {
    if (!Array.isArray(calls))
      throw new InvalidHistoryError("executeTools() takes an array of tool calls ({ id, name, args }).");
    const open = this.#transcript.keeper;
    for (let i = 0; i < calls.length; i++) {
      const problem = this.#cannotRun(calls[i], open.openCalls, i, calls);
      if (problem !== undefined) throw new InvalidHistoryError(problem);
    }
  }

  /** Whether a batch under way runs this call. */
  running(toolCallId: string): boolean {
    for (const batch of this.#running) if (batch.runs(toolCallId)) return true;
    return false;
  }

  #cannotRun(
    call: ToolCall | null | undefined,
    open: readonly ToolCall[],
    index: number,
    calls: readonly ToolCall[],
  ): string | undefined {
    if (
      call === null ||
      typeof call !== "object" ||
      typeof call.id !== "string" ||
      typeof call.name !== "string"
    )
      return `executeTools() got ${JSON.stringify(call) ?? String(call)} at position ${index}, not a tool call ({ id, name, args }).`;
    const made = open.find((candidate) => candidate.id === call.id);
    if (made === undefined || !this.#transcript.keeper.awaits(call.id))
      return `tool call "${call.id}" is not a call of the history waiting for its result: executeTools() runs the calls of the last assistant message (append one that makes them first), each once.`;
    if (made.name !== call.name)
      return `tool call "${call.id}" names "${call.name}", but the assistant message made it for "${made.name}".`;
    if (!sameArguments(call.args, made.args))
      return `tool call "${call.id}" has other arguments than the assistant message made it with: a call runs as it was made.`;
    for (let j = 0; j < index; j++)
      if (calls[j]?.id === call.id)
        return `tool call "${call.id}" is given twice to executeTools(); every call runs once.`;
    if (this.running(call.id))
      return `tool call "${call.id}" is already running in another executeTools() batch; every call runs once.`;
    return undefined;
  }

  track(batch: ToolBatch): void {
    this.#running.push(batch);
  }

  /**
   * The batch has settled. One that failed (a hook threw) left calls without their results, which
   * the run's end (or the next model call) answers: the batch still hears of them, so that its
   * orchestrator's hooks bracket them as they would any call (a plan step's start and end).
   */
  untrack(batch: ToolBatch, failed = false): void {
    this.#running.splice(this.#running.indexOf(batch), 1);
    if (failed) this.#failed.push(batch);
  }

  /**
   * Events for results the keeper made: `tool_call` where none went out, then `tool_result`; the
   * batch the call belongs to hears of both (of a call that never started, before its `tool_call`).
   */
  publishClosed(closed: readonly ClosedCall[]): void {
    const batches = this.#failed.length === 0 ? this.#running : [...this.#running, ...this.#failed];
    for (const { call, result } of closed) {
      if (!this.#events.announced(call.id)) {
        for (const batch of batches) batch.closing(call);
        this.#events.publish({
          type: "tool_call",
          toolCallId: call.id,
          toolName: call.name,
          args: call.args,
        });
      }
      this.#metrics.count(result.status);
      const { toolCallId, toolName, status, content } = result;
      this.#events.publish({ type: "tool_result", toolCallId, toolName, status, error: content });
      for (const batch of batches) batch.closedWith(call, result);
    }
  }
}

function ignore(): void {}

/** Deeper arguments are not written out to compare (the text is built recursively): only the same object is the same. */
const MAX_COMPARED_DEPTH = 1_000;

/**
 * Whether a call given to `executeTools` has the arguments of the history's call: the same object
 * (a decision's own call, the usual case), or the same JSON. Other arguments would run a call the
 * history does not hold.
 */
function sameArguments(given: unknown, made: unknown): boolean {
  if (given === made) return true;
  const text = canonicalJsonWithin(given, MAX_COMPARED_DEPTH);
  return text !== undefined && text === canonicalJsonWithin(made, MAX_COMPARED_DEPTH);
}
