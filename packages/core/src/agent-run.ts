import { EventStream } from "./events/event-stream.js";
import type { AgentEvent, OrchestratorEvent } from "./events/schemas.js";
import type { RunResult } from "./run/run-session.js";

/**
 * One prompt's run: iterate it for live events (as many consumers as you like, each sees every
 * event), or just await `result()`, which never rejects and never waits for a reader.
 */
export class AgentRun implements AsyncIterable<AgentEvent> {
  readonly runId: string;
  readonly #stream = new EventStream<AgentEvent, RunResult>();
  readonly #abort: (reason?: unknown) => void;
  #dropped = 0;

  /** @internal Runs are created by `Agent.prompt()`. */
  constructor(runId: string, abort: (reason?: unknown) => void) {
    this.runId = runId;
    this.#abort = abort;
  }

  [Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    return this.#stream[Symbol.asyncIterator]();
  }

  /** Resolves once, when `agent_end` has been emitted: `{ messages, stopReason, usage, error? }`. */
  result(): Promise<RunResult> {
    return this.#stream.result();
  }

  /** The events emitted so far. */
  get events(): readonly AgentEvent[] {
    return this.#stream.events;
  }

  get done(): boolean {
    return this.#stream.ended;
  }

  /** Aborts this run only (whether it is running or still waiting its turn). */
  abort(reason?: unknown): void {
    this.#abort(reason);
  }

  /**
   * A debug metric: events a late writer published after `agent_end` (an abandoned tool or
   * orchestrator), or a second `tool_call`/`tool_result` for one call. They were dropped, never
   * delivered; a non-zero count points at work that outlived its run.
   */
  get droppedEvents(): number {
    return this.#dropped;
  }

  /** @internal */
  push(event: AgentEvent): void {
    this.#stream.push(event);
  }

  /** @internal */
  dropped(_event: OrchestratorEvent): void {
    this.#dropped++;
  }

  /** @internal */
  end(result: RunResult): void {
    this.#stream.end(result);
  }
}
