import { FatalToolError, StallError } from "../errors.js";
import type { AgentMessage, ToolCall, ToolResultMessage } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { ExecuteToolsOptions } from "../orchestrator/contract.js";
import type { Tool } from "../tools/define-tool.js";
import { type FatalToolSink, notRunResult, SKIPPED_BY_STEERING, toolResult } from "../tools/execute-tool.js";
import { askBeforeToolCall, mayNeedApproval, refusedResult, refuses, type Verdict } from "./approvals.js";
import {
  type BatchOutcome,
  type BatchSetup,
  type BatchStop,
  CUT_OFF,
  callContext,
  checkedResult,
  toolTimeoutMs,
} from "./batch-contract.js";
import { BatchHooks } from "./batch-hooks.js";
import { type ClientToolOutcome, waitsForClient } from "./client-tools.js";
import { ExclusiveGate } from "./exclusive-gate.js";
import { notJson } from "./orchestrator-input.js";
import { withOverride } from "./result-override.js";
import type { ApprovalDecision, Resumed, Wait } from "./suspension.js";
import { toolCallEvent, toolResultEvent } from "./tool-events.js";

/**
 * One `executeTools` call: runs the calls one at a time or `concurrency` at once, announces each
 * (`tool_call`), records its result with the transcript keeper and publishes it (`tool_result`).
 * A tool marked `sequential` runs alone without serializing the others; a `FatalToolError` stops
 * the batch (running siblings aborted, queued ones skipped); steering skips the queued calls and
 * lets running ones finish. Once the run has ended nothing more starts, and nothing more is
 * recorded or published.
 */
export class ToolBatch implements FatalToolSink {
  readonly #setup: BatchSetup;
  readonly #calls: readonly ToolCall[];
  readonly #options: ExecuteToolsOptions;
  readonly #results: ToolResultMessage[];
  #steering: AgentMessage[] = [];
  #stopped: BatchStop | undefined;
  #next = 0;
  readonly #hooks: BatchHooks | undefined;
  /** The run's scope, or (in a concurrent batch) a child that a fatal error can abort alone. */
  #scope: AbortScope;
  #verdicts: Map<string, Verdict> | undefined;
  /** Client results delivered while the batch was suspended, by call id. */
  #delivered: ReadonlyMap<string, ClientToolOutcome> | undefined;
  /** Approvals decided while the batch was suspended, by call id. */
  #decided: ReadonlyMap<string, ApprovalDecision> | undefined;

  constructor(setup: BatchSetup, calls: readonly ToolCall[], options: ExecuteToolsOptions) {
    this.#setup = setup;
    this.#calls = calls;
    this.#options = options;
    this.#hooks = BatchHooks.of(options);
    this.#results = new Array(calls.length);
    this.#scope = setup.scope;
  }

  /**
   * Runs the batch, deciding approvals first when `beforeToolCall` is set or a tool of the batch
   * has `needsApproval`, then (with `clientTools: "suspend"`) suspending when client calls would
   * wait. `resumed`: what a resumed batch runs with. Returns synchronously when every tool was
   * synchronous.
   */
  run(concurrency: number, resumed?: Resumed): BatchOutcome | Promise<BatchOutcome> {
    this.#delivered = resumed?.results;
    this.#decided = resumed?.decisions;
    const hook = this.#setup.hooks.beforeToolCall;
    if (!mayNeedApproval(this.#calls, hook, (call) => this.#setup.tools.get(call.name))) {
      if (resumed) this.#verdicts = new Map(resumed.decisions);
      return this.#suspendedForClient() ?? this.#runCalls(concurrency);
    }
    const contextOf = (call: ToolCall) => callContext(this.#setup, call);
    return askBeforeToolCall(this.#calls, hook, resumed?.decisions, contextOf, () => this.#ended()).then(
      ({ verdicts, suspension }) => {
        if (suspension) return { kind: "suspended", suspension };
        this.#verdicts = verdicts;
        return this.#suspendedForClient() ?? this.#runCalls(concurrency);
      },
    );
  }

  /** With `clientTools: "suspend"`, the client calls that would wait: the batch suspends on them. */
  #suspendedForClient(): BatchOutcome | undefined {
    if (!this.#setup.suspendForClientTools) return undefined;
    const waits = new Map<string, Wait>();
    for (const call of this.#calls) {
      if (
        !refuses(this.#verdicts?.get(call.id)) &&
        !this.#delivered?.has(call.id) &&
        waitsForClient(call, this.#setup.tools.get(call.name))
      )
        waits.set(call.id, { kind: "client" });
    }
    if (waits.size === 0) return undefined;
    const decided = this.#decided;
    const suspension =
      decided === undefined ? { calls: this.#calls, waits } : { calls: this.#calls, waits, decided };
    return { kind: "suspended", suspension };
  }

  #runCalls(concurrency: number): BatchOutcome | Promise<BatchOutcome> {
    this.#announceToStall();
    if (concurrency <= 1 || this.#calls.length <= 1) {
      const running = this.#runInOrder(0);
      return running === undefined ? this.#outcome() : running.then(() => this.#outcome());
    }
    this.#scope = this.#setup.scope.child();
    const gate = new ExclusiveGate();
    // An orchestrator's callback that throws (`beforeEach`, `afterEach`) stops the batch: no call
    // starts after it, and the batch rejects once the calls already running have ended. Rejecting
    // at once would let the orchestrator run those calls again while they still run.
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      try {
        while (this.#next < this.#calls.length && !this.#ended() && failure === undefined) {
          const index = this.#next++;
          const call = this.#calls[index] as ToolCall;
          if (this.#setup.tools.get(call.name)?.sequential)
            await gate.exclusive(() => (this.#ended() || failure ? undefined : this.#runCall(index)));
          else await gate.shared(() => this.#runCall(index));
        }
      } catch (error) {
        failure ??= { error };
      }
    };
    return Promise.all(Array.from({ length: Math.min(concurrency, this.#calls.length) }, worker)).then(() => {
      this.#scope.dispose();
      if (failure) throw failure.error;
      return this.#outcome();
    });
  }

  #outcome(): BatchOutcome {
    return {
      kind: "done",
      results: this.#results,
      steering: this.#steering,
      stall: this.#stopped?.reason === "stall" ? this.#stopped.error : undefined,
    };
  }

  /**
   * Tells the stall detector which calls it will check, so that a call never made before excuses
   * the repeats of the batch whatever their order. A call refused or cut off is not checked (it
   * changes nothing); one that a fatal error or steering skips later still counts as made.
   */
  #announceToStall(): void {
    const { stall, tools, cutOffCalls } = this.#setup;
    if (stall === undefined || this.#calls.length < 2) return;
    stall.announceCalls(
      this.#calls.filter(
        (call) =>
          !tools.get(call.name)?.allowRepeats &&
          !refuses(this.#verdicts?.get(call.id)) &&
          !cutOffCalls.has(call.id),
      ),
    );
  }

  /** The run has ended: nothing more starts. */
  #ended(): boolean {
    return this.#setup.transcript.closed;
  }

  /** One call after the other; it turns asynchronous only at the first call that is. */
  #runInOrder(from: number): undefined | Promise<void> {
    for (let index = from; index < this.#calls.length && !this.#ended(); index++) {
      const running = this.#runCall(index);
      if (running instanceof Promise) return running.then(() => this.#runInOrder(index + 1));
    }
    return undefined;
  }

  /** Runs call `index`: `tool_call`, the tool (or a result it gets without running), `tool_result`. */
  #runCall(index: number): void | Promise<void> {
    let call = this.#calls[index] as ToolCall;
    this.#hooks?.start(index, call);
    const { events } = this.#setup;
    const tool = this.#setup.tools.get(call.name);
    const early = this.#resultWithoutRunning(call, tool);
    const waits = early === undefined && !this.#delivered?.has(call.id) && waitsForClient(call, tool);
    events.publish(toolCallEvent(call, waits));
    if (early) return this.#end(index, call, early);
    if (typeof call.args === "string" && this.#setup.hooks.repairToolCall)
      return this.#repair(call, tool).then((repaired) => {
        call = repaired;
        return this.#execute(index, call, tool);
      });
    return this.#execute(index, call, tool);
  }

  #execute(index: number, call: ToolCall, tool: Tool | undefined): void | Promise<void> {
    const { timeouts, tools, graceMs, runner, runId, clientTools } = this.#setup;
    const client = tool?.execution === "client";
    const timeoutMs = toolTimeoutMs(timeouts, call.name, client);
    const running = runner.run({
      runId,
      call,
      tool:
        tool === undefined || tool.execution !== "client"
          ? tool
          : clientTools.bind(tool, this.#delivered?.get(call.id)),
      tools,
      scope: this.#scope,
      graceMs,
      timeoutMs,
      fatal: this,
    });
    return running instanceof Promise
      ? running.then((result) => this.#end(index, call, checkedResult(call, result)))
      : this.#end(index, call, checkedResult(call, running));
  }

  /** Whether this batch runs the call (it is one of its calls, whether or not it has started). */
  runs(toolCallId: string): boolean {
    for (const call of this.#calls) if (call.id === toolCallId) return true;
    return false;
  }

  /** The run's end is about to answer one of this batch's calls that never started (see `BatchHooks`). */
  closing(call: ToolCall): void {
    const index = this.#calls.findIndex((candidate) => candidate.id === call.id);
    if (index >= 0) this.#hooks?.startedByTheRunsEnd(index, call);
  }

  /** The run's end answered one of this batch's calls, running or never started (see `BatchHooks`). */
  closedWith(call: ToolCall, result: ToolResultMessage): void {
    const index = this.#calls.findIndex((candidate) => candidate.id === call.id);
    // A call that never started (and whose start `closing` did not announce) has nothing to end.
    if (index < 0 || !this.#hooks?.started(index) || this.#results[index] !== undefined) return;
    this.#results[index] = result;
    this.#hooks.endedByTheRunsEnd(this.#calls[index] as ToolCall, result);
  }

  /** @internal A `FatalToolError`: the batch stops. */
  toolFailedFatally(call: ToolCall): void {
    this.#stop({ reason: "fatal", message: `"${call.name}" failed fatally` });
  }

  #resultWithoutRunning(call: ToolCall, tool: Tool | undefined): ToolResultMessage | undefined {
    if (this.#setup.scope.aborted) return notRunResult(call, this.#setup.scope);
    if (this.#stopped?.reason === "stall") return toolResult(call, "skipped", "not run: the run stalled");
    if (this.#stopped?.reason === "fatal")
      return toolResult(call, "skipped", `not run: ${this.#stopped.message}`);
    if (this.#steering.length > 0) return toolResult(call, "skipped", SKIPPED_BY_STEERING);
    if (this.#setup.cutOffCalls.size > 0 && this.#setup.cutOffCalls.has(call.id))
      return toolResult(call, "error", CUT_OFF);
    const refused = refusedResult(call, this.#verdicts?.get(call.id));
    if (refused) return refused;
    const { stall } = this.#setup;
    if (stall && !tool?.allowRepeats) {
      const verdict = stall.checkCall(call);
      if (verdict.kind === "nudge") {
        this.#setup.events.nudged(call, verdict.message);
        return toolResult(call, "skipped", verdict.message);
      }
      if (verdict.kind === "stall") {
        const error = new StallError(verdict.message);
        this.#stop({ reason: "stall", error });
        return toolResult(call, "error", `not run: ${error.message}`);
      }
    }
    return undefined;
  }

  async #repair(call: ToolCall, tool: Tool | undefined): Promise<ToolCall> {
    if (!tool) return call;
    const repaired = await this.#setup.hooks.repairToolCall?.({
      call,
      tool,
      error: `the arguments are not valid JSON: ${String(call.args)}`,
    });
    if (repaired === undefined) return call;
    // Fixed arguments stand for the JSON the model meant to send: anything else (a Map, a Date, a
    // BigInt, a cycle) would reach the tool as something its schema may pass but no model sends —
    // a Map's entries lost in the tool's copy, say. Refused as a malformed hook result is.
    const problem = notJson(repaired, "arguments");
    if (problem !== undefined) throw new TypeError(`repairToolCall returned invalid arguments: ${problem}.`);
    return { ...call, args: repaired };
  }

  #end(index: number, call: ToolCall, produced: ToolResultMessage): void | Promise<void> {
    if (this.#ended()) return;
    const after = this.#setup.hooks.afterToolCall;
    if (after)
      return Promise.resolve(after({ ...callContext(this.#setup, call), result: produced })).then(
        (override) => this.#record(index, call, withOverride(produced, override)),
      );
    return this.#record(index, call, produced);
  }

  #record(index: number, call: ToolCall, produced: ToolResultMessage): void | Promise<void> {
    const result = this.#checkRepeatedResult(call, produced);
    // Refused once the run has ended, or for a call that has its result: nothing to publish.
    if (!this.#setup.transcript.record(result)) return;
    this.#results[index] = result;
    this.#setup.events.publish(toolResultEvent(result));
    const { toolCallId, toolName, status } = result;
    // The user's side never answered: say so beside the result, for whoever watches the stream.
    if (status === "timeout" && this.#setup.tools.get(toolName)?.execution === "client")
      this.#setup.events.publish({
        type: "error",
        code: "tool-timeout",
        message: result.content,
        toolCallId,
      });
    this.#hooks?.end(call, result);
    if (
      (this.#options.interruptOnSteering ?? true) &&
      this.#steering.length === 0 &&
      !this.#setup.scope.aborted
    ) {
      const taken = this.#setup.steering.takeNow();
      if (!Array.isArray(taken))
        return taken.then((steering) => {
          if (steering.length === 0) return;
          // Taken from the queue: if this batch already has steering, it goes with it, never dropped.
          this.#steering = this.#steering.length === 0 ? steering : [...this.#steering, ...steering];
        });
      if (taken.length > 0) this.#steering = taken;
    }
  }

  /** The same result again and again: the model sees a nudge, then the run stops as stalled. */
  #checkRepeatedResult(call: ToolCall, result: ToolResultMessage): ToolResultMessage {
    const { stall, tools } = this.#setup;
    if (!stall || result.status !== "ok" || tools.get(call.name)?.allowRepeats) return result;
    const verdict = stall.checkResult(call, result.content);
    if (verdict.kind === "ok") return result;
    if (verdict.kind === "stall") this.#stop({ reason: "stall", error: new StallError(verdict.message) });
    else this.#setup.events.nudged(call, verdict.message);
    return { ...result, content: `${result.content}\n\n[note] ${verdict.message}` };
  }

  #stop(stop: BatchStop): void {
    this.#stopped ??= stop;
    // Only a concurrent batch has siblings running; the run's own scope must not be aborted.
    if (stop.reason === "fatal" && this.#scope !== this.#setup.scope)
      this.#scope.abort(new FatalToolError(stop.message));
  }
}
