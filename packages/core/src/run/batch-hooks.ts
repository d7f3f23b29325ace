import type { ToolCall, ToolResultMessage } from "../messages.js";
import type { ExecuteToolsOptions } from "../orchestrator/contract.js";
import { checkHookReturn } from "./batch-contract.js";

/**
 * An orchestrator's hooks on one batch (`beforeEach`, `afterEach` of `ctx.executeTools()`), and
 * the calls they heard start. Every call that starts is told to `beforeEach`, and every call that
 * started is told to `afterEach` once it has its result, also one the run's end answers: so every
 * plan step that starts gets its end. Made only for a batch whose orchestrator set a hook (the
 * agentic loop sets none).
 */
export class BatchHooks {
  readonly #options: ExecuteToolsOptions;
  readonly #started = new Set<number>();

  private constructor(options: ExecuteToolsOptions) {
    this.#options = options;
  }

  static of(options: ExecuteToolsOptions): BatchHooks | undefined {
    return options.beforeEach || options.afterEach ? new BatchHooks(options) : undefined;
  }

  /** Call `index` starts. A hook that throws (or returns a promise) throws: the batch fails. */
  start(index: number, call: ToolCall): void {
    this.#started.add(index);
    if (this.#options.beforeEach) checkHookReturn("beforeEach", this.#options.beforeEach(call));
  }

  /** Call `index` has its result. A hook that throws (or returns a promise) throws. */
  end(call: ToolCall, result: ToolResultMessage): void {
    if (this.#options.afterEach) checkHookReturn("afterEach", this.#options.afterEach(call, result));
  }

  started(index: number): boolean {
    return this.#started.has(index);
  }

  /**
   * The run's end answers call `index`, which never started: `beforeEach` hears of it first, right
   * before its `tool_call`, as of a call that runs, so a plan step's start comes before its call
   * (and its end, through `endedByTheRunsEnd`, after its result). Without a `beforeEach`, nothing
   * started, so `afterEach` hears nothing of it either.
   */
  startedByTheRunsEnd(index: number, call: ToolCall): void {
    if (!this.#options.beforeEach || this.#started.has(index)) return;
    quietly(() => this.start(index, call));
  }

  /** The run's end answered call `index`, which started: `afterEach` hears of it as of any result. */
  endedByTheRunsEnd(call: ToolCall, result: ToolResultMessage): void {
    quietly(() => this.end(call, result));
  }
}

function quietly(hook: () => void): void {
  try {
    hook();
  } catch {
    // The run is ending: an orchestrator hook that throws now has no run left to fail.
  }
}
