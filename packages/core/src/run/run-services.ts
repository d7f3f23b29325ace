import type { DependencyContainer } from "tsyringe";
import type { z } from "zod";
import {
  AwaitingApprovalError,
  AwaitingClientToolError,
  abortError,
  InvalidHistoryError,
} from "../errors.js";
import type { OrchestratorEvent } from "../events/schemas.js";
import type { AgentMessage, AssistantMessage, MessageInput, ToolCall } from "../messages.js";
import type {
  DecideOptions,
  Decision,
  ExecuteToolsOptions,
  GeneratedObject,
  GenerateObjectOptions,
  Limits,
  MessageLog,
  MessageSource,
  RunContext,
  ToolBatchResult,
} from "../orchestrator/contract.js";
import type { ToolRegistry } from "../tools/registry.js";
import { StallDetector } from "../tools/stall-detector.js";
import { Activity } from "./activity.js";
import type { BatchOutcome, BatchSetup } from "./batch-contract.js";
import type { EventPublisher } from "./event-publisher.js";
import type { MetricsRecorder } from "./metrics.js";
import { batchOptionsProblem } from "./model-call-checks.js";
import { ModelDecisions } from "./model-decisions.js";
import { checkedEvent, checkMessage, checkTurnMessage, copyOf } from "./orchestrator-input.js";
import { RunLog } from "./run-log.js";
import type { RunSetup } from "./run-setup.js";
import { awaitingOf, type Resumed, type Suspension } from "./suspension.js";
import { ToolBatch } from "./tool-batch.js";
import type { TranscriptWriter } from "./transcript-keeper.js";
import { TurnTracker } from "./turn-tracker.js";

/** What the services tell the run's lifecycle: the run waits for decisions (false: it was aborted first). */
export interface SuspensionListener {
  suspended(suspension: Suspension): boolean;
}

/**
 * `RunContext`, the services an orchestrator acts through; each keeps the run's guarantees. The
 * work is done by the run's rooms: model calls (`ModelDecisions`), tool batches (`ToolBatch`),
 * turns (`TurnTracker`) and the write side (`RunLog`: the history through the transcript writer,
 * events through the run's one publisher; both refuse writes once the run has ended).
 */
export class RunServices implements RunContext {
  readonly runId: string;
  readonly signal: AbortSignal;
  readonly limits: Readonly<Limits>;
  readonly systemPrompt: string;
  readonly tools: ToolRegistry;
  readonly steering: MessageSource;
  readonly followUps: MessageSource;
  readonly log: RunLog;
  readonly turns: TurnTracker;
  /** Model calls and tool batches under way: what the run's end must cancel. */
  readonly activity = new Activity();

  readonly #setup: RunSetup;
  readonly #events: EventPublisher;
  readonly #metrics: MetricsRecorder;
  readonly #model: ModelDecisions;
  readonly #suspension: SuspensionListener;
  readonly #transcript: TranscriptWriter;
  #batch: BatchSetup | undefined;
  /** What the next `executeTools` runs with, in a run that resumes through `Orchestrator.resume`. */
  #resumed: Resumed | undefined;
  #messages: RunMessageLog | undefined;

  constructor(
    setup: RunSetup,
    events: EventPublisher,
    transcript: TranscriptWriter,
    metrics: MetricsRecorder,
    suspension: SuspensionListener,
  ) {
    this.#setup = setup;
    this.#events = events;
    this.#metrics = metrics;
    this.#suspension = suspension;
    this.runId = setup.runId;
    this.signal = setup.abortScope.signal;
    this.limits = setup.limits;
    this.systemPrompt = setup.systemPrompt;
    this.tools = setup.tools;
    this.steering = setup.steering;
    this.followUps = setup.followUps;
    const inboxes = [setup.steering, setup.followUps];
    this.log = new RunLog(events, transcript, metrics, setup.abortScope, inboxes, setup.clock);
    this.turns = new TurnTracker(events, metrics, setup.clock, this.log);
    this.#model = new ModelDecisions(setup, this.log, events, metrics, this.activity);
    this.#transcript = transcript;
  }

  /** `ctx.messages`, made when an orchestrator first asks for it. */
  get messages(): MessageLog {
    this.#messages ??= new RunMessageLog(this.log);
    return this.#messages;
  }

  /** The agent's child container: resolve shared services, or register your own. */
  get container(): DependencyContainer {
    return this.#setup.owner.container;
  }

  get cycles(): number {
    return this.#metrics.cycles;
  }

  emit(event: OrchestratorEvent): void {
    this.#events.publish(checkedEvent(event, this.runId));
  }

  startTurn(): number {
    return this.turns.start();
  }

  endTurn(message: AssistantMessage): void {
    // `turn_end` carries the message: one that is not an assistant message would break its schema.
    // The model's last reply, the usual one, was built by the run and needs no check.
    if (message !== this.#model.lastReply) checkTurnMessage(message);
    this.turns.end(message);
  }

  decide(options: DecideOptions = {}): Promise<Decision> {
    return this.#model.decide(options);
  }

  generateObject<T>(
    schema: z.ZodType<T>,
    options: GenerateObjectOptions<T> = {},
  ): Promise<GeneratedObject<T>> {
    return this.#model.generateObject(schema, options);
  }

  applySteering(messages: readonly MessageInput[]): void {
    if (!Array.isArray(messages))
      throw new InvalidHistoryError("ctx.applySteering() takes an array of messages (or strings).");
    for (const message of messages)
      if (typeof message !== "string") checkMessage(message, "ctx.applySteering()");
    this.log.applySteering(messages);
  }

  /** @internal The run resumes a suspended batch through `Orchestrator.resume`: its first batch runs with these. */
  resumeNextBatch(resumed: Resumed): void {
    this.#resumed = resumed;
  }

  executeTools(calls: readonly ToolCall[], options: ExecuteToolsOptions = {}): Promise<ToolBatchResult> {
    let outcome: BatchOutcome | Promise<BatchOutcome>;
    try {
      this.log.assertOpen();
      const problem = batchOptionsProblem(options);
      if (problem !== undefined) throw new TypeError(`ctx.executeTools() got invalid options: ${problem}.`);
      outcome = this.runBatch(calls, options, this.#resumed);
    } catch (error) {
      return this.log.refuse(error);
    }
    this.#resumed = undefined;
    if (!(outcome instanceof Promise))
      try {
        return Promise.resolve(this.#batchResult(outcome));
      } catch (error) {
        const failed = Promise.reject(error);
        this.log.settleQuietlyIfEnded(failed);
        return failed;
      }
    // Marked in its own handlers (see `RunLog.settleQuietlyIfEnded`): no wrapper, no extra hop.
    const returned: Promise<ToolBatchResult> = outcome.then(
      (done) => {
        try {
          return this.#batchResult(done);
        } catch (error) {
          this.log.settleQuietlyIfEnded(returned);
          throw error;
        }
      },
      (error: unknown) => {
        this.log.settleQuietlyIfEnded(returned);
        throw error;
      },
    );
    return returned;
  }

  /** Runs a batch; synchronously when every tool was. Resuming a suspended batch passes `resumed`. */
  runBatch(
    calls: readonly ToolCall[],
    options: ExecuteToolsOptions,
    resumed?: Resumed,
  ): BatchOutcome | Promise<BatchOutcome> {
    this.log.assertOpen();
    // The batch's own copy: an orchestrator that changes its array or its calls afterwards must
    // not change what runs (a call added later would run without a place in the history).
    const own = Array.isArray(calls) ? calls.map(copyOf) : calls;
    this.log.claim(own);
    const clock = this.#setup.clock;
    const started = clock.monotonic();
    const batch = new ToolBatch(this.#batchSetup(), own, resumed ? runsWhole(options) : options);
    // NaN (or anything that is not a number >= 1) runs the calls one at a time, never none of them.
    const wanted = Math.floor(options.concurrency ?? this.#setup.concurrency);
    const concurrency = Number.isNaN(wanted) ? 1 : Math.max(1, wanted);
    this.activity.inFlight++;
    this.log.track(batch);
    const done = (failed?: true) => {
      this.log.untrack(batch, failed);
      this.activity.settled();
    };
    const settle = (outcome: BatchOutcome) => {
      this.#metrics.toolMs += clock.monotonic() - started;
      if (outcome.kind === "done") {
        for (const result of outcome.results) if (result) this.#metrics.count(result.status);
      } else {
        // A suspension ends the run. Reported before the batch leaves the run's books, so that no
        // step of the orchestrator in between can move the history past the calls it waits on.
        this.#suspension.suspended(outcome.suspension);
      }
      // Last: the run's end may be waiting for this batch, and reads the metrics.
      done();
      return outcome;
    };
    let running: BatchOutcome | Promise<BatchOutcome>;
    try {
      running = batch.run(concurrency, resumed);
    } catch (error) {
      done(true);
      throw error;
    }
    if (!(running instanceof Promise)) return settle(running);
    return running.then(settle, (error: unknown) => {
      done(true);
      throw error;
    });
  }

  /** What every batch of the run works with; made with the first (many runs never call a tool). */
  #batchSetup(): BatchSetup {
    if (this.#batch !== undefined) return this.#batch;
    const setup = this.#setup;
    if (setup.stall !== false) this.log.stall = new StallDetector(setup.stall);
    this.#batch = {
      runId: setup.runId,
      tools: setup.tools,
      runner: setup.toolRunner,
      clientTools: setup.clientTools,
      suspendForClientTools: setup.clientToolMode === "suspend",
      scope: setup.abortScope,
      graceMs: setup.limits.abortGraceMs,
      timeouts: setup.toolTimeouts,
      hooks: setup.hooks,
      steering: setup.steering,
      stall: this.log.stall,
      cutOffCalls: this.#model.cutOffCalls,
      events: this.#events,
      transcript: this.#transcript,
    };
    return this.#batch;
  }

  readonly #batchResult = (outcome: BatchOutcome): ToolBatchResult => {
    if (outcome.kind === "suspended") {
      // Reported as the batch settled; asked again for the verdict (an abort before it wins).
      if (!this.#suspension.suspended(outcome.suspension))
        throw abortError(this.#setup.abortScope.signal.reason);
      // The run ends as suspended (a value the lifecycle holds); this only unwinds the orchestrator.
      const { calls, waits } = outcome.suspension;
      const waiting = calls
        .filter((call) => waits.has(call.id))
        .map((call) => ({ id: call.id, name: call.name, args: call.args }));
      throw awaitingOf(outcome.suspension) === "awaiting_approval"
        ? new AwaitingApprovalError(waiting)
        : new AwaitingClientToolError(waiting);
    }
    this.log.assertOpen();
    if (outcome.stall) {
      this.#model.stalled(outcome.stall);
      throw outcome.stall;
    }
    const { steering } = outcome;
    if (steering.length === 0) return { results: outcome.results, steering };
    // Another batch still runs calls of the same reply: the steering waits for the history to
    // move on past them, queued again for whoever takes it next (that batch, or the next model call).
    if (this.log.runningOpenCall() !== undefined) {
      this.#setup.steering.putBack(steering);
      return { results: outcome.results, steering: [] };
    }
    this.log.applySteering(steering);
    return { results: outcome.results, steering };
  };
}

/**
 * A resumed batch's calls were decided (approved, denied, answered by the client): steering must
 * not skip them, or an approved call would never run and a delivered result be lost. The steering
 * waits in its queue for the orchestrator's next step.
 */
function runsWhole(options: ExecuteToolsOptions): ExecuteToolsOptions {
  return { ...options, interruptOnSteering: false };
}

/**
 * `ctx.messages`. On Node 20 (V8 11.3) an object literal with getters held by the run kept the
 * whole run alive through young-generation collections (see docs/benchmarks.md): a class with
 * prototype getters, and `append` a bound function (an own property, so destructuring it works).
 */
class RunMessageLog implements MessageLog {
  readonly #log: RunLog;
  readonly append: (...messages: AgentMessage[]) => void;
  /** The history as `all` last gave it: a frozen copy, so a plug-in cannot edit the history behind the log's back. */
  #snapshot: readonly AgentMessage[] = NO_MESSAGES;

  constructor(log: RunLog) {
    this.#log = log;
    this.append = appendEach.bind(undefined, log);
  }

  get all(): readonly AgentMessage[] {
    // During a run the history only grows: its length says whether the copy is current.
    const history = this.#log.history;
    if (this.#snapshot.length !== history.length) this.#snapshot = Object.freeze(history.slice());
    return this.#snapshot;
  }

  get length(): number {
    return this.#log.history.length;
  }
}

const NO_MESSAGES: readonly AgentMessage[] = Object.freeze([]);

function appendEach(log: RunLog, ...messages: AgentMessage[]): void {
  log.assertOpen();
  // All checked first: a refused message leaves the history as it was.
  for (const message of messages) {
    checkMessage(message, "ctx.messages.append()");
    const { toolCallId } = message as { toolCallId?: string };
    if (message.role === "toolResult" && log.running(toolCallId as string))
      throw new InvalidHistoryError(
        `ctx.messages.append() got a result for tool call "${toolCallId}", which executeTools() is running: its result comes from the batch.`,
      );
  }
  for (const message of messages) log.append(message);
}
