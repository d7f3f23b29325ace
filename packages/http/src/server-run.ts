import type { AgentEvent, AgentEventOf } from "@agent-core/core";
import { EventLog } from "./event-log.js";
import { digest, type HookTokens } from "./hook-tokens.js";
import { HttpError } from "./http-error.js";
import type { BackendRun, RunOwner } from "./run-backend.js";

/** A client tool call the run waits for: what its token must match. */
interface WaitingCall {
  toolName: string;
  args: string;
}

/**
 * One run as the server keeps it: the backend's run, its event log (what every attached stream
 * reads), the client calls it waits for, and how many streams are attached. Its events are logged
 * by one subscriber, which signs a hook token into every client `tool_call` before any stream
 * sees it.
 */
export class ServerRun {
  readonly runId: string;
  readonly owner: RunOwner;
  readonly run: BackendRun;
  readonly log: EventLog;
  /** Resolves once the events the run had when the server took it up are in the log. */
  readonly caughtUp: Promise<void>;
  readonly outliveStream: boolean;
  endedAt: number | undefined;
  /** Set when it ended as `awaiting_client_tool`: its client calls wait beyond the run. */
  suspended = false;
  /** The run that resumed this suspended one, once every client call had its result (`resumedAs`). */
  continuedAs: string | undefined;
  readonly #waiting = new Map<string, WaitingCall>();
  /** The client calls announced with a hook token that have no result yet: their `tool_call` events. */
  readonly #tokened = new Map<string, AgentEventOf<"tool_call">>();
  /** A suspended run's `agent_end` as it went out first: every call it lists with its hook token. */
  #suspendedEnd: AgentEventOf<"agent_end"> | undefined;
  #stopListening: (() => void) | undefined;
  #attached = 0;
  readonly #maxStreams: number;
  #detachTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #onWaitOver: (run: ServerRun) => void;

  constructor(
    run: BackendRun,
    options: {
      maxEvents: number;
      maxStreams: number;
      outliveStream: boolean;
      tokens: HookTokens;
      tokenTtlMs: number;
      suspendedTtlMs: number;
      now: () => number;
      onEnd: (run: ServerRun) => void;
      /** A suspended run waits no more: resumed, or its batch given up by a cancel. */
      onWaitOver: (run: ServerRun) => void;
    },
  ) {
    this.runId = run.runId;
    this.owner = run.owner;
    this.run = run;
    this.outliveStream = options.outliveStream;
    this.#onWaitOver = options.onWaitOver;
    this.#maxStreams = options.maxStreams;
    this.log = new EventLog(options.maxEvents);
    const onEvent = (event: AgentEvent) => {
      const wire = this.#wire(event, options);
      if (wire.type === "tool_result") {
        this.#waiting.delete(wire.toolCallId);
        this.#tokenless(wire.toolCallId);
      }
      if (event.type === "tool_call" && wire !== event) this.#tokened.set(event.toolCallId, event);
      this.log.append(wire, JSON.stringify(wire));
      if (wire.type !== "agent_end") return;
      this.#stopListening?.();
      this.suspended = wire.stopReason === "awaiting_client_tool";
      if (this.suspended) this.#suspendedEnd = wire;
      else this.#waiting.clear();
      this.endedAt = options.now();
      this.log.close();
      clearTimeout(this.#detachTimer);
      options.onEnd(this);
    };
    const subscription = run.subscribe(onEvent);
    this.caughtUp = subscription.caughtUp;
    // Awaited by a request for a run another process started, which answers its failure; a run
    // started here streams what comes either way.
    this.caughtUp.catch(() => {});
    if (this.log.closed) subscription.stop();
    else this.#stopListening = () => subscription.stop();
  }

  /**
   * A client call got its result: later readers of the log get its `tool_call` without the hook
   * token, as a call that takes no result is announced, so a client that re-attaches (a page
   * reloaded) does not run the tool again.
   */
  #tokenless(toolCallId: string): void {
    const call = this.#tokened.get(toolCallId);
    if (call === undefined) return;
    this.#tokened.delete(toolCallId);
    this.log.rewrite(call.seq, JSON.stringify(call));
  }

  /**
   * Whether the call is the last a suspended run waits for: taking its result resumes the run as a
   * new one. (A run another server process also takes results for may count more calls waiting.)
   */
  resumesWith(toolCallId: string): boolean {
    return (
      this.suspended &&
      this.continuedAs === undefined &&
      this.#waiting.size === 1 &&
      this.#waiting.has(toolCallId)
    );
  }

  /** The call a posted token names, if the run still waits for it. */
  waitingCall(toolCallId: string): WaitingCall | undefined {
    return this.#waiting.get(toolCallId);
  }

  /** The server forgets the run: its log takes no more events. */
  stop(): void {
    this.#stopListening?.();
    clearTimeout(this.#detachTimer);
    this.log.close();
  }

  /**
   * A stream attached: a pending abort for lack of streams is called off. Refused past
   * `maxStreams` open at once: each holds a connection and a timer, and a client must not open
   * thousands on one run.
   */
  attach(): void {
    if (this.#attached >= this.#maxStreams)
      throw new HttpError(
        429,
        "too-many-streams",
        `Run "${this.runId}" has ${this.#maxStreams} streams open (maxStreamsPerRun); close one first.`,
        { headers: { "retry-after": "1" } },
      );
    this.#attached++;
    clearTimeout(this.#detachTimer);
    this.#detachTimer = undefined;
  }

  /**
   * A stream went away. When it was the last one and the run may not outlive its streams, the
   * run is aborted once `graceMs` passed without a stream re-attaching.
   */
  detach(graceMs: number): void {
    this.#attached--;
    if (this.#attached > 0 || this.outliveStream || this.log.closed) return;
    const abort = () => this.abandon("the client went away");
    if (graceMs <= 0) abort();
    else this.#detachTimer = setTimeout(abort, graceMs);
  }

  /**
   * The client cancels the run. A suspended run has ended already: cancelling it gives up its
   * batch, whose calls then take no more results (nothing is left to resume it).
   */
  async cancel(reason: string): Promise<void> {
    await this.run.cancel(reason);
    if (!this.suspended) return;
    this.#waiting.clear();
    this.#tokenlessEnd();
    this.#onWaitOver(this);
  }

  /** The suspended run was resumed by its last call's result, as the run `runId`. */
  resumedAs(runId: string): void {
    this.continuedAs = runId;
    this.#onWaitOver(this);
  }

  /**
   * The server cancels the run of its own accord (its client went away, the server closes): no
   * request waits for the answer, so a cancel that fails is left as it is.
   */
  abandon(reason: string): void {
    Promise.resolve(this.run.cancel(reason)).catch(() => {});
  }

  /** A suspended run's client call got its result: it no longer takes one. */
  answered(toolCallId: string): void {
    if (!this.suspended) return;
    this.#waiting.delete(toolCallId);
    this.#tokenlessEnd();
  }

  /**
   * A suspended run's calls are announced in its `agent_end`: later readers of the log get the
   * calls that no longer take a result (answered, or given up by a cancel) without their hook
   * token, as a `tool_call` that has its result is replayed, so a page reloaded between two
   * results does not run a tool again.
   */
  #tokenlessEnd(): void {
    const end = this.#suspendedEnd;
    if (end?.pendingClientTools === undefined) return;
    const pendingClientTools = end.pendingClientTools.map((call) => {
      if (this.#waiting.has(call.toolCallId)) return call;
      const { hookToken: _noLongerTaken, ...tokenless } = call;
      return tokenless;
    });
    this.log.rewrite(end.seq, JSON.stringify({ ...end, pendingClientTools }));
  }

  /**
   * The event as the wire carries it: a client call the run waits for, in a `tool_call` or in the
   * `agent_end` of a suspended run, gets its hook token. It expires a set time after the event
   * (not after the signing): every server process signs the same token for it.
   */
  #wire(
    event: AgentEvent,
    options: { tokens: HookTokens; tokenTtlMs: number; suspendedTtlMs: number },
  ): AgentEvent {
    if (event.type === "tool_call" && event.execution === "client")
      return { ...event, hookToken: this.#sign(event, options.tokens, event.ts + options.tokenTtlMs) };
    if (event.type === "agent_end" && event.pendingClientTools !== undefined) {
      const exp = event.ts + options.suspendedTtlMs;
      const pendingClientTools = event.pendingClientTools.map((call) => ({
        ...call,
        hookToken: this.#sign(call, options.tokens, exp),
      }));
      return { ...event, pendingClientTools };
    }
    return event;
  }

  #sign(
    call: { toolCallId: string; toolName: string; args: unknown },
    tokens: HookTokens,
    exp: number,
  ): string {
    const args = digest(call.args);
    this.#waiting.set(call.toolCallId, { toolName: call.toolName, args });
    return tokens.sign({
      runId: this.runId,
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      userId: this.owner.userId,
      ...(this.owner.documentId === undefined ? {} : { documentId: this.owner.documentId }),
      args,
      exp,
    });
  }
}
