import type { DependencyContainer } from "tsyringe";
import type { AgentConfig, MessageCallback, PromptOptions, Timeouts } from "./agent-config.js";
import { AgentRun } from "./agent-run.js";
import {
  type AgentError,
  abortError,
  InvalidConfigError,
  InvalidHistoryError,
  TimeoutError,
} from "./errors.js";
import type { ListenerBus } from "./events/listener-bus.js";
import type { ContextBudgetOptions } from "./history/context-budget.js";
import { type AgentMessage, emptyUsage } from "./messages.js";
import { AbortScope } from "./model/abortable.js";
import type { RetryOptions } from "./model/retry.js";
import { silentLogger } from "./observe/logger.js";
import { RunLogLines } from "./observe/run-log-lines.js";
import { bothObservers, type RunObserver } from "./observe/run-observer.js";
import type { Limits, Orchestrator } from "./orchestrator/contract.js";
import type { RunServiceSet } from "./run/default-services.js";
import { EventPublisher } from "./run/event-publisher.js";
import { MessageInbox, type MessageQueue } from "./run/message-queue.js";
import { type RunResult, RunSession } from "./run/run-session.js";
import type { Clock, ModelStep, ToolRunner } from "./run/services.js";
import type { TranscriptKeeper } from "./run/transcript-keeper.js";
import type { WaitingCalls } from "./run/waiting-calls.js";
import type { ToolRegistry } from "./tools/registry.js";

/** What an agent's runs are made of: the agent's parts, handed once to its `RunQueue`. */
export interface AgentParts {
  readonly config: AgentConfig;
  /** The agent, whose container (`ctx.container`) is made when first asked for. */
  readonly owner: { readonly container: DependencyContainer };
  readonly tools: ToolRegistry;
  readonly orchestrator: Orchestrator;
  /** Every run's `ctx.limits` (frozen). */
  readonly limits: Limits;
  readonly retry: RetryOptions;
  readonly contextBudget: ContextBudgetOptions | undefined;
  readonly transcript: TranscriptKeeper;
  readonly steeringQueue: MessageQueue;
  readonly followUpQueue: MessageQueue;
  readonly listeners: ListenerBus;
  /** What runs wait for from outside: a suspended batch's approvals and client results, live client calls. */
  readonly waiting: WaitingCalls<PromptOptions>;
}

/**
 * An agent's runs, one at a time: a run started while another runs waits for it (it starts when
 * the previous one ends), so two runs never race on one history. The only writer of the runs in
 * progress or waiting, of the promise the next run waits for, and of the history as the last
 * finished run left it.
 */
export class RunQueue {
  readonly #agent: AgentParts;
  /** The aborts of the runs in progress or waiting: `abort()` fires them all. */
  readonly #scopes = new Set<AbortScope>();
  /** The history as the last finished run left it (`result().messages` of that run). */
  #settledHistory: readonly AgentMessage[];
  /** Settles when the last run started or queued has ended: the next prompt waits for it. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(agent: AgentParts) {
    this.#agent = agent;
    this.#settledHistory = agent.transcript.messages.slice();
  }

  /** True while a run is in progress or waiting its turn. */
  get busy(): boolean {
    return this.#scopes.size > 0;
  }

  /** The run `approve()`/`deny()`/`submitToolResult()` start: it only resumes the suspended batch. */
  resume(options: PromptOptions, services: RunServiceSet): AgentRun {
    return this.start(RESUME_ONLY, options, services);
  }

  /**
   * Starts a run at once, or as soon as the runs before it have ended. `services`: the agent's,
   * resolved at its first prompt.
   */
  start(inputs: AgentMessage[], options: PromptOptions, services: RunServiceSet): AgentRun {
    const runId = services.ids.runId();
    // Every event, message and log line of the run carries it, and clients address the run by it.
    if (typeof runId !== "string" || runId === "")
      throw new InvalidConfigError(
        `The ID_SOURCE service's runId() returned ${typeof runId === "string" ? "an empty string" : runId === null ? "null" : `a value of type ${typeof runId}`}: a run id must be a non-empty string.`,
      );
    const scope = new AbortScope(options.signal);
    const run = new AgentRun(runId, (reason) => scope.abort(reason));
    const queued = this.#scopes.size > 0;
    this.#scopes.add(scope);
    // A prompt whose signal is already aborted never starts, busy agent or idle: it ends as one
    // aborted while it waits its turn, and its prompt never enters the history (the model would
    // otherwise read a prompt its caller had called off at the next run).
    if (scope.aborted && inputs !== RESUME_ONLY) {
      this.#endUnstarted(run, scope, services, abortError(scope.signal.reason));
      return run;
    }
    const timeouts = options.timeouts
      ? withPromptTimeouts(this.#agent.config.timeouts, options.timeouts)
      : (this.#agent.config.timeouts ?? NO_TIMEOUTS);
    if (!queued) {
      // Set before the run starts: it publishes its first events at once, and a prompt made from a
      // listener of those must queue behind it. (`run.result()` never rejects.)
      this.#tail = run.result();
      this.#execute(run, inputs, scope, timeouts, options.clientTools, services);
      return run;
    }
    // Aborted while it waits its turn: it ends at once, and its prompt never enters the history.
    const removeQueuedAbort = scope.onAbort(() =>
      this.#endUnstarted(run, scope, services, abortError(scope.signal.reason)),
    );
    this.#tail = this.#tail.then(() => {
      removeQueuedAbort();
      if (run.done) return;
      this.#execute(run, inputs, scope, timeouts, options.clientTools, services);
      return run.result();
    });
    return run;
  }

  /** Aborts the running run and every run waiting behind it. */
  abort(reason?: unknown): void {
    for (const scope of [...this.#scopes]) scope.abort(reason);
  }

  /** Clears the history; the agent allows it only while no run is in progress. */
  clearHistory(): void {
    this.#agent.transcript.clear();
    this.#settledHistory = [];
  }

  /**
   * A run that ends with `error` before it starts (aborted while it waited its turn, or by a signal
   * aborted before the prompt; a prompt the history refuses): `agent_start`, `error`, `agent_end`,
   * and nothing else.
   */
  #endUnstarted(run: AgentRun, scope: AbortScope, services: RunServiceSet, error: AgentError): void {
    this.#scopes.delete(scope);
    scope.dispose();
    const events = this.#publisher(run, this.#observe(run, scope, services).observer, services);
    const { stopReason } = error;
    events.publish({ type: "agent_start" });
    events.publish({ type: "error", code: error.code, message: error.message });
    const usage = emptyUsage();
    const metrics = { cycles: 0, toolCalls: {}, modelMs: 0, toolMs: 0, frameworkMs: 0, usage };
    events.publish({ type: "agent_end", stopReason, usage, durationMs: 0, metrics });
    // The history as the last run left it: the run in progress may be in the middle of a batch.
    const messages = this.#settledHistory.slice();
    run.end({
      runId: run.runId,
      messages,
      newMessages: [],
      stopReason,
      usage,
      durationMs: 0,
      text: "",
      error,
      metrics,
    });
  }

  /**
   * What observes the run, and the model step and tool runner it runs with: its trace (when the
   * tracing records it) and its log lines (unless the logger, `config.logger` or the container's
   * `LOGGER`, is the silent one) decorate the agent's. Neither: the run pays nothing for them.
   */
  #observe(run: AgentRun, scope: AbortScope, services: RunServiceSet): Observed {
    const { runId } = run;
    const logger = this.#agent.config.logger ?? services.logger;
    const lines = logger === silentLogger ? undefined : new RunLogLines(logger, runId);
    const { modelStep, toolRunner } = services;
    const untraced: Observed = lines
      ? { observer: lines, modelStep: lines.modelStep(modelStep), toolRunner: lines.toolRunner(toolRunner) }
      : { observer: undefined, modelStep, toolRunner };
    // A tracer that throws, or gives no observer whose decorators are a model step and a tool
    // runner: the run goes on untraced, as when its observer throws later (see `EventPublisher`),
    // rather than fail, or never start and leave the agent busy.
    try {
      const traced = services.tracing.startRun({
        runId,
        orchestrator: this.#agent.orchestrator.name,
        signal: scope.signal,
      });
      if (traced === undefined || typeof traced.publish !== "function" || typeof traced.nudged !== "function")
        return untraced;
      const observed: Observed = {
        observer: bothObservers(traced, lines),
        modelStep: traced.modelStep(untraced.modelStep),
        toolRunner: traced.toolRunner(untraced.toolRunner),
      };
      const runs = (service: { run?: unknown } | undefined) => typeof service?.run === "function";
      return runs(observed.modelStep) && runs(observed.toolRunner) ? observed : untraced;
    } catch {
      return untraced;
    }
  }

  /**
   * The run's one publisher: events go to the run's own stream, the listeners, the sink, then
   * the run's observer.
   */
  #publisher(run: AgentRun, observer: RunObserver | undefined, services: RunServiceSet): EventPublisher {
    const { clock, sink } = services;
    return new EventPublisher(run.runId, clock, run, this.#agent.listeners, sink, observer);
  }

  /** Starts the run; it ends (`run.end`) when its session hands over the result. */
  #execute(
    run: AgentRun,
    input: AgentMessage[],
    abortScope: AbortScope,
    timeouts: Timeouts,
    clientTools: "wait" | "suspend" | undefined,
    services: RunServiceSet,
  ): void {
    const agent = this.#agent;
    // A prompt's tool call whose id a call of the history uses (the history can have changed since
    // the prompt was made) is refused before anything changes: no prompt message in the history,
    // a suspended batch still waiting.
    const taken = agent.transcript.takenCallId(input);
    if (taken !== undefined) {
      const refusal = new InvalidHistoryError(
        `the prompt's tool call id "${taken}" is already used by a tool call of the history; every call needs its own id.`,
      );
      this.#endUnstarted(run, abortScope, services, refusal);
      return;
    }
    // A batch the last run left waiting is resumed first, with the decisions made so far.
    const resume = agent.waiting.takeBatch();
    // A run that only resumes, when a run queued before it has resumed the batch: nothing to do.
    const idle = input === RESUME_ONLY && resume === undefined;
    const { totalMs, stepMs, firstChunkMs, chunkMs, toolMs, tools, clientToolMs } = timeouts;
    const total =
      totalMs === undefined
        ? undefined
        : setTimeout(() => abortScope.abort(new TimeoutError("total", totalMs)), totalMs);
    const config = agent.config;
    const transcript = agent.transcript.writer();
    const { clock } = services;
    const { observer, modelStep, toolRunner } = this.#observe(run, abortScope, services);
    const session = new RunSession(
      {
        runId: run.runId,
        limits: agent.limits,
        systemPrompt: config.systemPrompt ?? "",
        provider: config.provider,
        tools: agent.tools,
        hooks: config,
        transformContext: config.transformContext,
        convertToLlm: config.convertToLlm,
        contextBudget: agent.contextBudget,
        modelSettings: config.modelSettings,
        retry: agent.retry,
        stepTimeouts: (stepMs ?? firstChunkMs ?? chunkMs) ? { stepMs, firstChunkMs, chunkMs } : undefined,
        toolTimeouts: { toolMs, tools, clientToolMs },
        concurrency: config.toolExecution === "parallel" ? (config.maxConcurrency ?? 8) : 1,
        stall: config.stall ?? {},
        steering: this.#inbox(
          agent.steeringQueue,
          config.getSteeringMessages,
          run.runId,
          clock,
          "getSteeringMessages",
        ),
        followUps: this.#inbox(
          agent.followUpQueue,
          config.getFollowUpMessages,
          run.runId,
          clock,
          "getFollowUpMessages",
        ),
        owner: agent.owner,
        abortScope,
        clock,
        modelStep,
        toolRunner,
        clientTools: agent.waiting.clientTools,
        clientToolMode: clientTools ?? config.clientTools ?? "wait",
      },
      { orchestrator: agent.orchestrator, input, resume, idle },
      this.#publisher(run, observer, services),
      transcript,
    );
    session.execute((result: RunResult) => {
      clearTimeout(total);
      agent.waiting.settle(session.suspension, { timeouts, clientTools });
      this.#settledHistory = result.messages;
      abortScope.dispose();
      this.#scopes.delete(abortScope);
      run.end(result);
    });
  }

  #inbox(
    queue: MessageQueue,
    callback: MessageCallback | undefined,
    runId: string,
    clock: Clock,
    what: string,
  ): MessageInbox {
    const transcript = this.#agent.transcript;
    const ask = callback && (() => callback({ runId, messages: transcript.messages }));
    return new MessageInbox(queue, ask, clock, what);
  }
}

/** A run's observer (none when nothing observes it) and the services it decorated. */
interface Observed {
  observer: RunObserver | undefined;
  modelStep: ModelStep;
  toolRunner: ToolRunner;
}

/** The input of a run that only resumes the suspended batch (`resume()`). */
const RESUME_ONLY: AgentMessage[] = [];

const NO_TIMEOUTS: Timeouts = Object.freeze({});

/**
 * The agent's timeouts with a prompt's over them, setting by setting: a per-tool limit too, so
 * that a prompt that limits one tool keeps the agent's limits of the others. A copy, taken when
 * the prompt is made: a run waiting its turn runs with the limits that were checked.
 */
function withPromptTimeouts(agent: Timeouts | undefined, prompt: Timeouts): Timeouts {
  const merged = { ...agent, ...prompt };
  if (prompt.tools !== undefined) merged.tools = { ...agent?.tools, ...prompt.tools };
  return merged;
}
