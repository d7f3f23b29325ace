import { AwaitingApprovalError, FatalToolError, StallError } from "../errors.js";
import type { AgentMessage, ToolCall, ToolResultMessage } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { ExecuteToolsOptions } from "../orchestrator/contract.js";
import type { Tool } from "../tools/define-tool.js";
import {
  executeToolCall,
  type FatalToolSink,
  NOT_RUN_ABORTED,
  SKIPPED_BY_STEERING,
  toolResult,
} from "../tools/execute-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { StallDetector } from "../tools/stall-detector.js";
import type { AgentHooks, ToolCallContext } from "./hooks.js";
import type { MessageInbox } from "./message-queue.js";

export interface ToolTimeouts {
  toolMs?: number;
  /** Per tool name; wins over `toolMs`. */
  tools?: Record<string, number>;
}

/** An approval decision, from `agent.approve()` / `deny()`. */
export interface ApprovalDecision {
  approved: boolean;
  reason?: string;
}

/** What a batch needs from its run. */
export interface BatchHost {
  readonly runId: string;
  readonly tools: ToolRegistry;
  readonly history: AgentMessage[];
  readonly scope: AbortScope;
  readonly graceMs: number;
  readonly timeouts: ToolTimeouts;
  readonly hooks: AgentHooks;
  readonly steering: MessageInbox;
  readonly stall: StallDetector | undefined;
  /** Calls of a model reply that was cut off: their arguments may be incomplete. */
  readonly cutOffCalls: ReadonlySet<string>;
  sealed(): boolean;
  emitCall(call: ToolCall): void;
  emitResult(result: ToolResultMessage): void;
}

export const CUT_OFF =
  "not run: the model's reply was cut off (finish reason: length), so these arguments may be incomplete. Make a shorter call, or raise maxOutputTokens.";

/**
 * One `executeTools` call: runs the calls one at a time or `concurrency` at once. Results enter
 * the history in call order as soon as all earlier ones have, whatever order they finish in.
 * A tool marked `sequential` runs alone without serializing the others; a `FatalToolError` stops
 * the batch (running siblings aborted, queued ones skipped); steering skips the queued calls and
 * lets running ones finish.
 */
export class ToolBatch implements FatalToolSink {
  readonly results: (ToolResultMessage | undefined)[];
  steering: AgentMessage[] = [];
  /** Set when the batch must stop: a stall, or a fatal tool error. */
  stopped: { reason: "stall"; error: StallError } | { reason: "fatal"; message: string } | undefined;
  #flushed = 0;
  #next = 0;
  /** The run's scope, or (in a concurrent batch) a child that a fatal error can abort alone. */
  #scope: AbortScope;
  #verdicts: Map<string, { block: string } | ApprovalDecision> | undefined;

  constructor(
    private readonly host: BatchHost,
    readonly calls: readonly ToolCall[],
    private readonly options: ExecuteToolsOptions & { approvals?: ReadonlyMap<string, ApprovalDecision> },
  ) {
    this.results = new Array(calls.length);
    this.#scope = host.scope;
  }

  /** Runs the batch; returns nothing (no promise, no microtask) when every tool was synchronous. */
  run(concurrency: number): void | Promise<void> {
    if (this.host.hooks.beforeToolCall)
      return this.#askBeforeToolCall().then(() => this.#runCalls(concurrency));
    return this.#runCalls(concurrency);
  }

  #runCalls(concurrency: number): void | Promise<void> {
    if (concurrency <= 1 || this.calls.length <= 1) return this.#runInOrder(0);
    this.#scope = this.host.scope.child();
    const gate = new ExclusiveGate();
    const worker = async () => {
      while (this.#next < this.calls.length && !this.host.sealed()) {
        const index = this.#next++;
        const call = this.calls[index] as ToolCall;
        if (this.host.tools.get(call.name)?.sequential) await gate.exclusive(() => this.#runCall(index));
        else await gate.shared(() => this.#runCall(index));
      }
    };
    return Promise.all(Array.from({ length: Math.min(concurrency, this.calls.length) }, worker)).then(
      () => this.#scope.dispose(),
      (error: unknown) => {
        this.#scope.dispose();
        throw error;
      },
    );
  }

  /** One call after the other; it turns asynchronous only at the first call that is. */
  #runInOrder(from: number): void | Promise<void> {
    for (let index = from; index < this.calls.length && !this.host.sealed(); index++) {
      const running = this.#runCall(index);
      if (running instanceof Promise) return running.then(() => this.#runInOrder(index + 1));
    }
  }

  /**
   * Asks `beforeToolCall` about every call before any runs: if one needs approval that has not
   * been given, the whole batch waits (the run ends as `awaiting_approval`), so no result ever
   * gets ahead of an unanswered call.
   */
  async #askBeforeToolCall(): Promise<void> {
    const pending: { id: string; name: string; args: unknown; reason?: string }[] = [];
    for (const call of this.calls) {
      this.#verdicts ??= new Map();
      const decided = this.options.approvals?.get(call.id);
      if (decided) {
        this.#verdicts.set(call.id, decided);
        continue;
      }
      const verdict = await this.host.hooks.beforeToolCall?.(this.#context(call));
      if (verdict === undefined) continue;
      if ("block" in verdict) this.#verdicts.set(call.id, verdict);
      else
        pending.push({
          id: call.id,
          name: call.name,
          args: call.args,
          ...(verdict.reason ? { reason: verdict.reason } : {}),
        });
    }
    if (pending.length > 0) throw new AwaitingApprovalError(pending);
  }

  /** Runs call `index`: `tool_call`, the tool (or a result it gets without running), `tool_result`. */
  #runCall(index: number): void | Promise<void> {
    let call = this.calls[index] as ToolCall;
    this.options.beforeEach?.(call);
    this.host.emitCall(call);
    const tool = this.host.tools.get(call.name);
    const early = this.#resultWithoutRunning(call, tool);
    if (early) return this.#end(index, call, early);
    if (typeof call.args === "string" && this.host.hooks.repairToolCall)
      return this.#repair(call, tool).then((repaired) => {
        call = repaired;
        return this.#execute(index, call, tool);
      });
    return this.#execute(index, call, tool);
  }

  #execute(index: number, call: ToolCall, tool: Tool | undefined): void | Promise<void> {
    const { timeouts, tools, graceMs } = this.host;
    const timeoutMs = timeouts.tools?.[call.name] ?? timeouts.toolMs;
    const running = executeToolCall(tool, tools, call, this.#scope, graceMs, timeoutMs, this);
    return running instanceof Promise
      ? running.then((result) => this.#end(index, call, result))
      : this.#end(index, call, running);
  }

  /** @internal A `FatalToolError`: the batch stops. */
  toolFailedFatally(call: ToolCall): void {
    this.#stop({ reason: "fatal", message: `"${call.name}" failed fatally` });
  }

  #resultWithoutRunning(call: ToolCall, tool: Tool | undefined): ToolResultMessage | undefined {
    if (this.host.scope.aborted) return toolResult(call, "aborted", NOT_RUN_ABORTED);
    if (this.stopped?.reason === "stall") return toolResult(call, "skipped", "not run: the run stalled");
    if (this.stopped?.reason === "fatal")
      return toolResult(call, "skipped", `not run: ${this.stopped.message}`);
    if (this.steering.length > 0) return toolResult(call, "skipped", SKIPPED_BY_STEERING);
    if (this.host.cutOffCalls.size > 0 && this.host.cutOffCalls.has(call.id))
      return toolResult(call, "error", CUT_OFF);
    const verdict = this.#verdicts?.get(call.id);
    if (verdict && "block" in verdict) return toolResult(call, "denied", `blocked: ${verdict.block}`);
    if (verdict && !verdict.approved)
      return toolResult(call, "denied", `denied${verdict.reason ? `: ${verdict.reason}` : " by the user"}`);
    if (this.host.stall && !tool?.allowRepeats) {
      const stall = this.host.stall.checkCall(call);
      if (stall.kind === "nudge") return toolResult(call, "skipped", stall.message);
      if (stall.kind === "stall") {
        const error = new StallError(stall.message);
        this.#stop({ reason: "stall", error });
        return toolResult(call, "error", `not run: ${error.message}`);
      }
    }
    return undefined;
  }

  async #repair(call: ToolCall, tool: Tool | undefined): Promise<ToolCall> {
    if (!tool) return call;
    const repaired = await this.host.hooks.repairToolCall?.({
      call,
      tool,
      error: `the arguments are not valid JSON: ${String(call.args)}`,
    });
    return repaired === undefined ? call : { ...call, args: repaired };
  }

  #end(index: number, call: ToolCall, produced: ToolResultMessage): void | Promise<void> {
    if (this.host.sealed()) return;
    const after = this.host.hooks.afterToolCall;
    if (after)
      return Promise.resolve(after({ ...this.#context(call), result: produced })).then((override) =>
        this.#record(index, call, override ? { ...produced, ...override } : produced),
      );
    return this.#record(index, call, produced);
  }

  #record(index: number, call: ToolCall, produced: ToolResultMessage): void | Promise<void> {
    if (this.host.sealed()) return;
    const result = this.#checkRepeatedResult(call, produced);
    this.results[index] = result;
    while (this.#flushed < this.calls.length && this.results[this.#flushed] !== undefined)
      this.host.history.push(this.results[this.#flushed++] as ToolResultMessage);
    this.host.emitResult(result);
    this.options.afterEach?.(call, result);
    if (
      (this.options.interruptOnSteering ?? true) &&
      this.steering.length === 0 &&
      !this.host.scope.aborted
    ) {
      const taken = this.host.steering.takeNow();
      if (!Array.isArray(taken))
        return taken.then((steering) => {
          if (this.steering.length === 0 && steering.length > 0) this.steering = steering;
        });
      if (taken.length > 0) this.steering = taken;
    }
  }

  /** The same result again and again: the model sees a nudge, then the run stops as stalled. */
  #checkRepeatedResult(call: ToolCall, result: ToolResultMessage): ToolResultMessage {
    if (!this.host.stall || result.status !== "ok" || this.host.tools.get(call.name)?.allowRepeats)
      return result;
    const verdict = this.host.stall.checkResult(call, result.content);
    if (verdict.kind === "ok") return result;
    if (verdict.kind === "stall") this.#stop({ reason: "stall", error: new StallError(verdict.message) });
    return { ...result, content: `${result.content}\n\n[note] ${verdict.message}` };
  }

  #stop(stop: NonNullable<ToolBatch["stopped"]>): void {
    this.stopped ??= stop;
    // Only a concurrent batch has siblings running; the run's own scope must not be aborted.
    if (stop.reason === "fatal" && this.#scope !== this.host.scope)
      this.#scope.abort(new FatalToolError(stop.message));
  }

  #context(call: ToolCall): ToolCallContext {
    return {
      runId: this.host.runId,
      call,
      tool: this.host.tools.get(call.name),
      messages: this.host.history,
    };
  }
}

/**
 * Lets shared work run side by side and exclusive work run alone: a `sequential` tool waits for
 * the running calls to end, and no call starts while it runs.
 */
class ExclusiveGate {
  #running = 0;
  #exclusive = false;
  /** Exclusive work waiting its turn: later shared work waits behind it, so it is not starved. */
  #queuedExclusive = 0;
  #waiting: (() => void)[] = [];

  async shared<T>(work: () => T | Promise<T>): Promise<T> {
    while (this.#exclusive || this.#queuedExclusive > 0) await this.#wait();
    this.#running++;
    try {
      return await work();
    } finally {
      this.#running--;
      this.#wake();
    }
  }

  async exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    this.#queuedExclusive++;
    while (this.#exclusive || this.#running > 0) await this.#wait();
    this.#queuedExclusive--;
    this.#exclusive = true;
    try {
      return await work();
    } finally {
      this.#exclusive = false;
      this.#wake();
    }
  }

  #wait(): Promise<void> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }
}
