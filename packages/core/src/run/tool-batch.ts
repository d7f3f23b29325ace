import { FatalToolError, StallError } from "../errors.js";
import type { EventPayload } from "../events/schemas.js";
import type { AgentMessage, ToolCall, ToolResultMessage } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { ExecuteToolsOptions } from "../orchestrator/contract.js";
import type { Tool, ToolCallContext } from "../tools/define-tool.js";
import {
  type FatalToolSink,
  NOT_RUN_ABORTED,
  SKIPPED_BY_STEERING,
  toolResult,
} from "../tools/execute-tool.js";
import { parseArgsNow } from "../tools/parse-args.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { StallDetector } from "../tools/stall-detector.js";
import { askBeforeToolCall, mayNeedApproval, type Verdict } from "./approvals.js";
import type { ClientToolCalls, ClientToolOutcome } from "./client-tools.js";
import type { EventPublisher } from "./event-publisher.js";
import { ExclusiveGate } from "./exclusive-gate.js";
import type { AgentHooks } from "./hooks.js";
import type { MessageInbox } from "./message-queue.js";
import { withOverride } from "./result-override.js";
import type { ToolRunner } from "./services.js";
import type { ApprovalDecision, Resumed, Suspension, Wait } from "./suspension.js";
import type { TranscriptWriter } from "./transcript-keeper.js";

export interface ToolTimeouts {
  toolMs?: number;
  /** Per tool name; wins over `toolMs` and `clientToolMs`. */
  tools?: Record<string, number>;
  /** How long a client tool call waits for its result (default 60 s); then it ends as `timeout`. */
  clientToolMs?: number;
}

const CLIENT_TOOL_MS = 60_000;

/** What every batch of a run works with; built once per run. */
export interface BatchSetup {
  readonly runId: string;
  readonly tools: ToolRegistry;
  readonly runner: ToolRunner;
  /** Where client tool calls wait for their results. */
  readonly clientTools: ClientToolCalls;
  /** `clientTools: "suspend"`: a batch with client calls suspends instead of waiting in the run. */
  readonly suspendForClientTools: boolean;
  readonly scope: AbortScope;
  readonly graceMs: number;
  readonly timeouts: ToolTimeouts;
  readonly hooks: AgentHooks;
  readonly steering: MessageInbox;
  readonly stall: StallDetector | undefined;
  /** Calls of a model reply that was cut off: their arguments may be incomplete. */
  readonly cutOffCalls: ReadonlySet<string>;
  readonly events: EventPublisher;
  readonly transcript: TranscriptWriter;
}

/** What a batch returns: its results, or the calls it waits on. */
export type BatchOutcome =
  | {
      kind: "done";
      /** One result per call, in call order. */
      results: ToolResultMessage[];
      /** Steering messages taken during the batch (not yet in the history). */
      steering: AgentMessage[];
      /** Set when the batch noticed the run going in circles. */
      stall: StallError | undefined;
    }
  | { kind: "suspended"; suspension: Suspension };

export const CUT_OFF =
  "not run: the model's reply was cut off (finish reason: length), so these arguments may be incomplete. Make a shorter call, or raise maxOutputTokens.";

/** Why a batch stops early: a stall, or a fatal tool error. */
type BatchStop = { reason: "stall"; error: StallError } | { reason: "fatal"; message: string };

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
  /** The calls that started, kept only for an orchestrator that hears of each end (`afterEach`). */
  #started: Set<number> | undefined;
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
    const contextOf = (call: ToolCall) => this.#context(call);
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
        !this.#refused(call) &&
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

  /** Blocked or denied by `beforeToolCall` or the app: it gets its result without running. */
  #refused(call: ToolCall): boolean {
    const verdict = this.#verdicts?.get(call.id);
    return verdict !== undefined && ("block" in verdict || !verdict.approved);
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
        (call) => !tools.get(call.name)?.allowRepeats && !this.#refused(call) && !cutOffCalls.has(call.id),
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
    if (this.#options.afterEach) {
      this.#started ??= new Set();
      this.#started.add(index);
    }
    this.#options.beforeEach?.(call);
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
    const timeoutMs =
      timeouts.tools?.[call.name] ?? (client ? (timeouts.clientToolMs ?? CLIENT_TOOL_MS) : timeouts.toolMs);
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
      ? running.then((result) => this.#end(index, call, result))
      : this.#end(index, call, running);
  }

  /** Whether this batch runs the call (it is one of its calls, whether or not it has started). */
  runs(toolCallId: string): boolean {
    for (const call of this.#calls) if (call.id === toolCallId) return true;
    return false;
  }

  /**
   * The run's end answered one of this batch's calls (it was still running, or never started):
   * the orchestrator's `afterEach` hears of it like of any result, so e.g. every plan step that
   * started gets its end.
   */
  closedWith(call: ToolCall, result: ToolResultMessage): void {
    const index = this.#calls.findIndex((candidate) => candidate.id === call.id);
    // A call that never started has nothing to end.
    if (index < 0 || !this.#started?.has(index) || this.#results[index] !== undefined) return;
    this.#results[index] = result;
    try {
      this.#options.afterEach?.(this.#calls[index] as ToolCall, result);
    } catch {
      // The run is ending: an orchestrator hook that throws now has no run left to fail.
    }
  }

  /** @internal A `FatalToolError`: the batch stops. */
  toolFailedFatally(call: ToolCall): void {
    this.#stop({ reason: "fatal", message: `"${call.name}" failed fatally` });
  }

  #resultWithoutRunning(call: ToolCall, tool: Tool | undefined): ToolResultMessage | undefined {
    if (this.#setup.scope.aborted) return toolResult(call, "aborted", NOT_RUN_ABORTED);
    if (this.#stopped?.reason === "stall") return toolResult(call, "skipped", "not run: the run stalled");
    if (this.#stopped?.reason === "fatal")
      return toolResult(call, "skipped", `not run: ${this.#stopped.message}`);
    if (this.#steering.length > 0) return toolResult(call, "skipped", SKIPPED_BY_STEERING);
    if (this.#setup.cutOffCalls.size > 0 && this.#setup.cutOffCalls.has(call.id))
      return toolResult(call, "error", CUT_OFF);
    const verdict = this.#verdicts?.get(call.id);
    if (verdict && "block" in verdict) return toolResult(call, "denied", `blocked: ${verdict.block}`);
    if (verdict && !verdict.approved)
      return toolResult(call, "denied", `denied${verdict.reason ? `: ${verdict.reason}` : " by the user"}`);
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
    return repaired === undefined ? call : { ...call, args: repaired };
  }

  #end(index: number, call: ToolCall, produced: ToolResultMessage): void | Promise<void> {
    if (this.#ended()) return;
    const after = this.#setup.hooks.afterToolCall;
    if (after)
      return Promise.resolve(after({ ...this.#context(call), result: produced })).then((override) =>
        this.#record(index, call, withOverride(produced, override)),
      );
    return this.#record(index, call, produced);
  }

  #record(index: number, call: ToolCall, produced: ToolResultMessage): void | Promise<void> {
    const result = this.#checkRepeatedResult(call, produced);
    // Refused once the run has ended, or for a call that has its result: nothing to publish.
    if (!this.#setup.transcript.record(result)) return;
    this.#results[index] = result;
    const { toolCallId, toolName, status } = result;
    // Built whole: adding fields afterwards would give every event a second backing store.
    this.#setup.events.publish(
      result.isError
        ? { type: "tool_result", toolCallId, toolName, status, error: result.content }
        : { type: "tool_result", toolCallId, toolName, status, result: result.details },
    );
    // The user's side never answered: say so beside the result, for whoever watches the stream.
    if (status === "timeout" && this.#setup.tools.get(toolName)?.execution === "client")
      this.#setup.events.publish({
        type: "error",
        code: "tool-timeout",
        message: result.content,
        toolCallId,
      });
    this.#options.afterEach?.(call, result);
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

  #context(call: ToolCall): ToolCallContext {
    return {
      runId: this.#setup.runId,
      call,
      tool: this.#setup.tools.get(call.name),
      messages: this.#setup.transcript.keeper.messages,
    };
  }
}

/**
 * Whether the run will wait for the user's side to run this call: a client tool with arguments
 * that pass its schema. Only such a `tool_call` says `execution: "client"`, so a client never runs
 * a call that was skipped, denied or refused (it gets its `tool_result` at once). A schema that
 * validates asynchronously cannot answer now: its call is taken to wait, and the check made when
 * it runs gives invalid arguments their error result.
 */
function waitsForClient(call: ToolCall, tool: Tool | undefined): boolean {
  return tool?.execution === "client" && (parseArgsNow(tool.inputSchema, call.args)?.success ?? true);
}

function toolCallEvent(call: ToolCall, client: boolean): EventPayload<"tool_call"> {
  const { id: toolCallId, name: toolName, args, originalId } = call;
  if (originalId === undefined && !client) return { type: "tool_call", toolCallId, toolName, args };
  const event: EventPayload<"tool_call"> = { type: "tool_call", toolCallId, toolName, args };
  if (originalId !== undefined) event.originalToolCallId = originalId;
  if (client) event.execution = "client";
  return event;
}
