import type { Agent, AgentEvent, AgentRun } from "@agent-core/core";
import { EventLog } from "./event-log.js";
import { digest, type HookTokens } from "./hook-tokens.js";

/** Who a run belongs to, as `authorize` said when it started. */
export interface RunOwner {
  userId: string;
  documentId: string | undefined;
}

/** A client tool call the run waits for: what its token must match. */
interface WaitingCall {
  toolName: string;
  args: string;
}

/**
 * One run as the server keeps it: the agent run, its event log (what every attached stream reads),
 * the client calls it waits for, and how many streams are attached. Its events are logged by one
 * listener, which signs a hook token into every client `tool_call` before any stream sees it.
 */
export class ServerRun {
  readonly runId: string;
  readonly owner: RunOwner;
  readonly agent: Agent;
  readonly run: AgentRun;
  readonly log: EventLog;
  readonly outliveStream: boolean;
  endedAt: number | undefined;
  /** Set when it ended as `awaiting_client_tool`: its client calls wait beyond the run. */
  suspended = false;
  /** The run that resumed this suspended one, once every client call had its result. */
  continuedAs: string | undefined;
  readonly #waiting = new Map<string, WaitingCall>();
  #stopListening: (() => void) | undefined;
  #attached = 0;
  #detachTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    agent: Agent,
    run: AgentRun,
    owner: RunOwner,
    options: {
      maxEvents: number;
      outliveStream: boolean;
      tokens: HookTokens;
      tokenTtlMs: number;
      suspendedTtlMs: number;
      now: () => number;
      onEnd: (run: ServerRun) => void;
    },
  ) {
    this.runId = run.runId;
    this.owner = owner;
    this.agent = agent;
    this.run = run;
    this.outliveStream = options.outliveStream;
    this.log = new EventLog(options.maxEvents);
    const onEvent = (event: AgentEvent) => {
      if (event.runId !== this.runId) return;
      const wire = this.#wire(event, options);
      if (wire.type === "tool_result") this.#waiting.delete(wire.toolCallId);
      this.log.append(wire, JSON.stringify(wire));
      if (wire.type !== "agent_end") return;
      this.#stopListening?.();
      this.suspended = wire.stopReason === "awaiting_client_tool";
      if (!this.suspended) this.#waiting.clear();
      this.endedAt = options.now();
      this.log.close();
      clearTimeout(this.#detachTimer);
      options.onEnd(this);
    };
    // What the run emitted inside `prompt()`, then the rest as it comes: both read synchronously
    // here, so no event falls between them. An agent runs one prompt at a time; the filter skips
    // the events of its runs before and after this one.
    for (const event of run.events) onEvent(event);
    if (!this.log.closed) this.#stopListening = agent.on("*", onEvent);
  }

  /** The call a posted token names, if the run still waits for it. */
  waitingCall(toolCallId: string): WaitingCall | undefined {
    return this.#waiting.get(toolCallId);
  }

  /** A stream attached: a pending abort for lack of streams is called off. */
  attach(): void {
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
    const abort = () => this.run.abort(new Error("the client went away"));
    if (graceMs <= 0) abort();
    else this.#detachTimer = setTimeout(abort, graceMs);
  }

  /** A suspended run's client call got its result: it no longer takes one. */
  answered(toolCallId: string): void {
    if (this.suspended) this.#waiting.delete(toolCallId);
  }

  /**
   * The event as the wire carries it: a client call the run waits for, in a `tool_call` or in the
   * `agent_end` of a suspended run, gets its hook token.
   */
  #wire(
    event: AgentEvent,
    options: { tokens: HookTokens; tokenTtlMs: number; suspendedTtlMs: number; now: () => number },
  ): AgentEvent {
    if (event.type === "tool_call" && event.execution === "client")
      return { ...event, hookToken: this.#sign(event, options.tokens, options.now() + options.tokenTtlMs) };
    if (event.type === "agent_end" && event.pendingClientTools !== undefined) {
      const exp = options.now() + options.suspendedTtlMs;
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
