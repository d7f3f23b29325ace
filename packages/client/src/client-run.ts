import { ClientToolRunner, isCallList } from "./client-tool-runner.js";
import type { AgentEndEvent, ClientRun } from "./client-types.js";
import { ClientError, type ClientEvent, describe } from "./errors.js";
import { EventQueue } from "./event-queue.js";
import { postCancel, postMessage } from "./run-commands.js";
import { RunConnection, type StartRequest } from "./run-connection.js";
import { onAbortShared } from "./shared-abort.js";
import { type Config, ignore, type Transport } from "./transport.js";

type Plan =
  | { kind: "start"; start: StartRequest; previous: Promise<unknown> }
  | { kind: "attach"; runId: string; after: number };

/** A start as posted, and the read of its answer. */
interface PostedStart {
  request: StartRequest;
  reading: Promise<void>;
}

/** Events a consumer may have waiting before the client stops reading the network. */
const HIGH_WATER_MARK = 32;

type Listener = (event: ClientEvent) => void;

export class Run implements ClientRun {
  readonly runId: Promise<string>;
  readonly #transport: Transport;
  readonly #config: Config;
  /** The first run's id, once known (what `runId` resolves with). */
  #knownRunId: string | undefined;
  /** The run followed now: the first one, then each that resumed a suspended one. */
  #current: string | undefined;
  /** The `agent_end` of the current run when it suspended for client tools, until the next run is known. */
  #suspended: AgentEndEvent | undefined;
  #resolveRunId!: (runId: string) => void;
  #rejectRunId!: (error: ClientError) => void;
  readonly #result: Promise<AgentEndEvent>;
  #resolveResult!: (event: AgentEndEvent) => void;
  #rejectResult!: (error: ClientError) => void;
  #end: AgentEndEvent | undefined;
  #failure: ClientError | undefined;
  /** Aborted when the run is cancelled or fails: the connection, the client tools, their posts. */
  readonly #abort = new AbortController();
  /** The events on their way to the iterating consumer; the connection waits on its `demand()`. */
  readonly #events = new EventQueue<ClientEvent>(HIGH_WATER_MARK);
  readonly #listeners = new Map<string, Set<Listener>>();
  /** Runs the client tools the events ask for; their `client_error` events come back through `#emit`. */
  readonly #clientTools: ClientToolRunner;
  /** Reads the events off the network; they come back through `#receive`. */
  readonly #connection: RunConnection;
  readonly #onSettled: (() => void)[] = [];
  #cancelled: Promise<void> | undefined;
  /**
   * The start once posted, and the read of its answer, until an answer named the run: a cancel
   * waits for the name, or asks for it.
   */
  #starting: PostedStart | undefined;

  constructor(transport: Transport, plan: Plan, signal: AbortSignal | undefined) {
    this.#transport = transport;
    this.#config = transport.config;
    this.#clientTools = new ClientToolRunner(transport, this.#abort.signal, (event) => this.#emit(event));
    this.#connection = new RunConnection(
      transport,
      {
        signal: this.#abort.signal,
        currentRunId: () => this.#current,
        done: () => this.#settled || this.#suspended !== undefined,
        demand: () => this.#events.demand(),
        learnRunId: (runId) => this.#setRunId(runId),
        receive: (event) => this.#receive(event),
      },
      plan.kind === "attach" ? { runId: plan.runId, after: plan.after } : undefined,
    );
    this.runId = new Promise<string>((resolve, reject) => {
      this.#resolveRunId = resolve;
      this.#rejectRunId = reject;
    });
    this.#result = new Promise<AgentEndEvent>((resolve, reject) => {
      this.#resolveResult = resolve;
      this.#rejectResult = reject;
    });
    // Nobody has to ask for them: a failure must not be an unhandled rejection.
    this.runId.catch(ignore);
    this.#result.catch(ignore);
    if (plan.kind === "attach") this.#setRunId(plan.runId);
    if (signal !== undefined) {
      const onAbort = () => void this.cancel();
      if (signal.aborted) onAbort();
      else this.whenSettled(onAbortShared(signal, onAbort));
    }
    if (!this.#settled) void this.#follow(plan);
  }

  get #settled(): boolean {
    return this.#end !== undefined || this.#failure !== undefined;
  }

  /** Calls `callback` once the run has ended, failed or been cancelled. */
  whenSettled(callback: () => void): void {
    if (this.#settled) callback();
    else this.#onSettled.push(callback);
  }

  get currentRunId(): string | undefined {
    return this.#current;
  }

  result(): Promise<AgentEndEvent> {
    return this.#result;
  }

  on(type: string, listener: (event: never) => void): () => void {
    const listeners = this.#listeners.get(type) ?? new Set<Listener>();
    this.#listeners.set(type, listeners);
    const added = listener as Listener;
    listeners.add(added);
    return () => void listeners.delete(added);
  }

  steer(message: string): Promise<void> {
    return this.#send("steer", message);
  }

  followUp(message: string): Promise<void> {
    return this.#send("follow-up", message);
  }

  cancel(): Promise<void> {
    if (this.#cancelled !== undefined) return this.#cancelled;
    const runId = this.#current;
    const ended = this.#end !== undefined;
    const suspended = this.#suspended !== undefined;
    this.#fail(new ClientError("cancelled", "The run was cancelled."));
    if (ended) this.#cancelled = Promise.resolve();
    else if (runId === undefined) this.#cancelled = this.#cancelUnnamed(this.#starting);
    // A suspended run's cancel gives its calls up: left waiting, they would let a page that attaches
    // later (a reload) run them and resume the run. A result post under way may resume it first:
    // that run is cancelled too.
    else if (suspended)
      this.#cancelled = Promise.all([
        postCancel(this.#transport, runId),
        this.#clientTools.cancelResumed((resumed) => postCancel(this.#transport, resumed)),
      ]).then(ignore);
    else this.#cancelled = postCancel(this.#transport, runId);
    return this.#cancelled;
  }

  [Symbol.asyncIterator](): AsyncIterator<ClientEvent> {
    const reader = this.#events.reader();
    if (reader === undefined)
      throw new TypeError(
        "A ClientRun is iterated by one consumer at a time: use run.on('*', …) to watch it too.",
      );
    return reader;
  }

  // --- following the run ----------------------------------------------------------------------

  /**
   * Follows the run to its end, and on through the runs that resume it each time it suspends for
   * client tools, until the last `agent_end`, a failure or a cancel.
   */
  async #follow(plan: Plan): Promise<void> {
    try {
      if (plan.kind === "start") await plan.previous;
      let start = plan.kind === "start" ? plan.start : undefined;
      // Ends the wait for a suspended run's answers (tools that ignore their signal included).
      const cancelled = whenAborted(this.#abort.signal);
      cancelled.catch(ignore);
      while (!this.#settled) {
        const reading = this.#connection.read(start);
        if (start !== undefined) this.#starting = { request: start, reading };
        await reading;
        this.#starting = undefined;
        start = undefined;
        const suspended = this.#suspended;
        if (this.#settled || suspended === undefined) return;
        const next = await Promise.race([this.#clientTools.answer(suspended), cancelled]);
        if (this.#settled) return;
        if (next === undefined) return this.#finish(suspended);
        this.#current = next;
        this.#suspended = undefined;
      }
    } catch (error) {
      this.#fail(
        error instanceof ClientError
          ? error
          : new ClientError("network", `The run failed: ${describe(error)}`, { cause: error }),
      );
    }
  }

  /**
   * An event the connection read: to the consumer and the listeners, a client `tool_call` to its
   * tool, and an `agent_end` ends the run or suspends it for client tools.
   */
  #receive(event: ClientEvent): void {
    // Taken before the listeners hear of it: one that cancels the run on its agent_end finds it ended.
    const unreadable = event.type === "agent_end" && !isCallList(event.pendingClientTools);
    if (event.type === "agent_end") {
      // Suspended for client tools: the client answers them, and follows the run that resumes it.
      if (
        event.stopReason === "awaiting_client_tool" &&
        !unreadable &&
        (event.pendingClientTools?.length ?? 0) > 0
      )
        this.#suspended = event;
      else this.#finish(event);
    }
    this.#emit(event);
    if (unreadable)
      this.#emit({
        type: "client_error",
        code: "malformed-event",
        message:
          "The run's agent_end lists its pendingClientTools as something else than a list of calls (objects with a string toolCallId and toolName): none of them can be run.",
        line: JSON.stringify(event),
      });
    // A client call announced without a token takes no result (refused, or answered already when a
    // re-attach replays it): not the client's to run.
    if (event.type === "tool_call" && event.execution === "client" && event.hookToken !== undefined)
      this.#clientTools.run({ ...event, runId: this.#current ?? event.runId }, event);
    // The call has its result: the client's own (its tool is done then), or the server's (a timeout).
    if (event.type === "tool_result") this.#clientTools.endCall(event.toolCallId, event.status);
  }

  #emit(event: ClientEvent): void {
    this.#events.push(event);
    for (const type of [event.type, "*"]) {
      const listeners = this.#listeners.get(type);
      if (listeners === undefined) continue;
      for (const listener of [...listeners]) {
        try {
          listener(event);
        } catch (error) {
          this.#logListenerError(error, event, type);
        }
      }
    }
  }

  /**
   * A logger that throws in turn, or an async one whose line rejects, loses the line: the other
   * listeners and the run go on as before, and no rejection is left unhandled.
   */
  #logListenerError(error: unknown, event: ClientEvent, listenerType: string): void {
    try {
      // Typed to return nothing, yet an async logger's line is a promise: any thenable, not only
      // `instanceof Promise` (a logger made in another realm, a vm context, returns that realm's).
      const written: unknown = this.#config.logger.error(
        { runId: this.#current, eventType: event.type, listenerType, err: error },
        "@agent-core/client: a listener threw",
      );
      if (typeof written === "object" && written !== null) {
        const { then } = written as { then?: unknown };
        if (typeof then === "function") then.call(written, undefined, () => {});
      }
    } catch {
      // The line is lost, nothing else.
    }
  }

  #setRunId(runId: string): void {
    if (this.#knownRunId !== undefined) return;
    this.#knownRunId = runId;
    this.#current = runId;
    this.#resolveRunId(runId);
  }

  #finish(end: AgentEndEvent): void {
    if (this.#settled) return;
    this.#end = end;
    this.#resolveResult(end);
    this.#clientTools.endAll(new Error("the run ended"));
    this.#settle();
  }

  #fail(error: ClientError): void {
    if (this.#settled) return;
    this.#failure = error;
    this.#rejectResult(error);
    if (this.#knownRunId === undefined) this.#rejectRunId(error);
    this.#abort.abort(error);
    this.#settle();
  }

  #settle(): void {
    // A cancel was asked for: the iteration just ends (result() says why); other failures are thrown to it.
    if (this.#failure === undefined || this.#failure.code === "cancelled") this.#events.close();
    else this.#events.fail(this.#failure);
    for (const callback of this.#onSettled.splice(0)) callback();
  }

  // --- commands -------------------------------------------------------------------------------

  async #send(action: "steer" | "follow-up", message: string): Promise<void> {
    if (typeof message !== "string") throw new TypeError(`${action} needs the message as a string.`);
    await this.runId;
    await postMessage(this.#transport, this.#current as string, action, message);
  }

  /**
   * Cancels on the server a run whose start was posted but not yet named: once its answer names
   * it, or, when no answer did (the post dropped, its attempts were spent), once a post of the start
   * again names it: the server answers a repeat of its key with the run it started, or starts it now
   * if the first post never reached it. Nothing was posted, or the server refused the start (a 4xx,
   * or a 2xx with no stream: its answer came, and it started nothing): nothing to cancel.
   */
  async #cancelUnnamed(starting: PostedStart | undefined): Promise<void> {
    if (starting === undefined) return;
    const refused = await starting.reading.then(
      () => false,
      // A 5xx may be a gateway's, whose server did start the run: that one is asked again.
      (error: unknown) => error instanceof ClientError && error.code === "http" && (error.status ?? 0) < 500,
    );
    if (refused) return;
    const runId = this.#knownRunId ?? (await this.#connection.nameStart(starting.request));
    if (runId !== undefined) await postCancel(this.#transport, runId);
  }
}

/** A never-fulfilled promise that rejects when `signal` aborts. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}
