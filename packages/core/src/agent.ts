import "reflect-metadata";
import type { DependencyContainer } from "tsyringe";
import {
  type AgentConfig,
  defaultLimits,
  type MessageCallback,
  type PromptOptions,
  resolveContextBudget,
  type Timeouts,
} from "./agent-config.js";
import { AgentRun } from "./agent-run.js";
import { validateAgentConfig, validateMessageInput, validatePromptOptions } from "./config.js";
import { AgentBusyError, abortError, TimeoutError } from "./errors.js";
import { ListenerBus } from "./events/listener-bus.js";
import type { AgentEvent, AgentEventOf, AgentEventType } from "./events/schemas.js";
import type { ContextBudgetOptions } from "./history/context-budget.js";
import { type AgentMessage, emptyUsage, type MessageInput, toMessageAt } from "./messages.js";
import { AbortScope } from "./model/abortable.js";
import { defaultRetry, type RetryOptions } from "./model/retry.js";
import { type Logger, silentLogger } from "./observe/logger.js";
import { RunLogLines } from "./observe/run-log-lines.js";
import { bothObservers, type RunObserver } from "./observe/run-observer.js";
import type { Limits, Orchestrator } from "./orchestrator/contract.js";
import { ORCHESTRATOR_REGISTRY, rootContainer, validateOrchestrator } from "./orchestrator/registry.js";
import type { ClientToolOutcome } from "./run/client-tools.js";
import { type RunServiceSet, registerDefaultServices, resolveServices } from "./run/default-services.js";
import { EventPublisher } from "./run/event-publisher.js";
import { MessageInbox, MessageQueue } from "./run/message-queue.js";
import { type RunResult, RunSession } from "./run/run-session.js";
import { CLOCK, type Clock } from "./run/services.js";
import { TranscriptKeeper } from "./run/transcript-keeper.js";
import { WaitingCalls } from "./run/waiting-calls.js";
import { ToolRegistry } from "./tools/registry.js";

/**
 * An agent: a history, a provider, tools and an orchestrator. Prompts are serialized: a prompt
 * made while another runs waits for it (its run starts when the previous one ends), so two runs
 * never race on one history.
 */
export class Agent {
  /** Where the agent's services come from: `config.container` or the root container. */
  readonly #parent: DependencyContainer;
  #container: DependencyContainer | undefined;
  readonly tools: ToolRegistry;
  readonly #config: AgentConfig;
  readonly #orchestrator: Orchestrator;
  readonly #limits: Limits;
  readonly #retry: RetryOptions;
  readonly #transcript = new TranscriptKeeper();
  readonly #steeringQueue = new MessageQueue();
  readonly #followUpQueue = new MessageQueue();
  readonly #listeners: ListenerBus;
  /** The aborts of the runs in progress or waiting: `abort()` fires them all. */
  readonly #scopes = new Set<AbortScope>();
  readonly #contextBudget: ContextBudgetOptions | undefined;
  /** What runs wait for from outside: a suspended batch's approvals and client results, live client calls. */
  readonly #waiting = new WaitingCalls<PromptOptions>();
  /** The history as the last finished run left it (`result().messages` of that run). */
  #settledHistory: readonly AgentMessage[] = [];
  /** Settles when the last run started or queued has ended: the next prompt waits for it. */
  #tail: Promise<unknown> = Promise.resolve();
  #resolved: RunServiceSet | undefined;

  constructor(config: AgentConfig = {}) {
    validateAgentConfig(config);
    this.#config = config;
    // Frozen: every run hands it to its orchestrator (`ctx.limits`), which must not raise its own limits.
    this.#limits = config.limits ? Object.freeze({ ...defaultLimits, ...config.limits }) : defaultLimits;
    this.#retry = { ...defaultRetry, ...config.retry };
    this.tools = config.tools instanceof ToolRegistry ? config.tools : new ToolRegistry(config.tools ?? []);
    this.#contextBudget = resolveContextBudget(config.contextBudget, config.provider);
    this.#listeners = new ListenerBus(
      config.onListenerError ?? ((error, event) => this.#logListenerError(error, event)),
    );
    // Through the keeper, which learns the tool-call ids and checks them as a run's writes are checked.
    for (const message of config.messages ?? []) this.#transcript.append(message);
    this.#settledHistory = this.#transcript.messages.slice();
    this.#parent = config.container ?? rootContainer;
    // The root container has the default services; a container of the app's own may not.
    if (config.container) registerDefaultServices(config.container);
    this.#orchestrator =
      typeof config.orchestrator === "object"
        ? validateOrchestrator(config.orchestrator, "config.orchestrator")
        : this.#parent.resolve(ORCHESTRATOR_REGISTRY).create(config.orchestrator);
  }

  /**
   * The agent's own child container: register services for this agent only (before its first
   * prompt), or resolve shared ones. Made when first asked for; until then the agent resolves
   * straight from its parent, which holds the same registrations.
   */
  get container(): DependencyContainer {
    this.#container ??= this.#parent.createChildContainer();
    return this.#container;
  }

  get orchestrator(): Orchestrator {
    return this.#orchestrator;
  }

  /** A copy of the history. */
  get messages(): AgentMessage[] {
    return this.#transcript.messages.slice();
  }

  /**
   * The agent's own time limits (`timeouts` of its config; a prompt's go over them), so a server
   * that sets its own defaults can leave the agent's in place.
   */
  get timeouts(): Timeouts {
    return { ...this.#config.timeouts };
  }

  /** True while a run is in progress or waiting its turn. */
  get busy(): boolean {
    return this.#scopes.size > 0;
  }

  /** Starts a run at once (or as soon as the previous one ends) and returns it. */
  prompt(input: MessageInput | readonly MessageInput[], options: PromptOptions = {}): AgentRun {
    validatePromptOptions(options);
    const inputs = Array.isArray(input) ? input : [input];
    for (const message of inputs) validateMessageInput(message, "prompt");
    const now = this.#services().clock.now();
    return this.#start(
      inputs.map((message: MessageInput) => toMessageAt(message, now)),
      options,
    );
  }

  /** Tool calls the last run stopped for (`stopReason: "awaiting_approval"`). */
  get pendingApprovals(): { toolCallId: string; toolName: string; args: unknown; reason?: string }[] {
    return this.#waiting.approvals;
  }

  /** Approves a call the run is waiting for; once every call is decided, the run continues (returned). */
  approve(toolCallId: string): AgentRun | undefined {
    return this.#resume(this.#waiting.decide(toolCallId, { approved: true }));
  }

  /** Denies a call the run is waiting for (the model sees the reason); once all are decided, it continues. */
  deny(toolCallId: string, reason?: string): AgentRun | undefined {
    const decision = reason === undefined ? { approved: false } : { approved: false, reason };
    return this.#resume(this.#waiting.decide(toolCallId, decision));
  }

  /**
   * Client tool calls waiting for a result: those the run in progress waits for, in the order it
   * reached them, or (after a run ended as `awaiting_client_tool`) those its batch is suspended on.
   */
  get pendingClientTools(): { toolCallId: string; toolName: string; args: unknown }[] {
    return this.#waiting.clientCalls;
  }

  /**
   * Delivers the result of a client tool call (`tool_call` with `execution: "client"`); `{ error }`
   * gives the call an error result. A call the run in progress waits for: the run goes on with it
   * (returns undefined). A call of a run that ended as `awaiting_client_tool`: once every such call
   * has its result, a run resumes the batch (returned). Throws `ClientToolError` when no such call
   * waits (unknown id, answered, timed out, run ended), or for an outcome that is not `{ result }` or
   * `{ error: string }` (the call still waits).
   */
  submitToolResult(toolCallId: string, outcome: ClientToolOutcome): AgentRun | undefined {
    return this.#resume(this.#waiting.submit(toolCallId, outcome));
  }

  /**
   * Once every call of a suspended batch is answered (`options` given: its prompt's), a run without
   * a prompt resumes the batch (unless a run queued before it resumes it first).
   */
  #resume(options: PromptOptions | undefined): AgentRun | undefined {
    return options === undefined ? undefined : this.#start(RESUME_ONLY, options);
  }

  /** `inputs` is `RESUME_ONLY` for the run `approve()`/`deny()` start: it only resumes the batch. */
  #start(inputs: AgentMessage[], options: PromptOptions): AgentRun {
    const scope = new AbortScope(options.signal);
    const run = new AgentRun(this.#services().ids.runId(), (reason) => scope.abort(reason));
    const queued = this.#scopes.size > 0;
    this.#scopes.add(scope);
    const timeouts = options.timeouts
      ? { ...this.#config.timeouts, ...options.timeouts }
      : (this.#config.timeouts ?? NO_TIMEOUTS);
    if (!queued) {
      // Set before the run starts: it publishes its first events at once, and a prompt made from a
      // listener of those must queue behind it. (`#execute` never rejects.)
      this.#tail = run.result();
      void this.#execute(run, inputs, scope, timeouts, options.clientTools);
      return run;
    }
    // Aborted while it waits its turn: it ends at once, and its prompt never enters the history.
    const removeQueuedAbort = scope.onAbort(() => this.#endQueued(run, scope));
    this.#tail = this.#tail.then(() => {
      removeQueuedAbort();
      if (run.done) return;
      return this.#execute(run, inputs, scope, timeouts, options.clientTools);
    });
    return run;
  }

  /** A run aborted before it started: `agent_start`, `error`, `agent_end`, and nothing else. */
  #endQueued(run: AgentRun, scope: AbortScope): void {
    this.#scopes.delete(scope);
    scope.dispose();
    const events = this.#publisher(run, this.#observe(run, scope));
    const error = abortError(scope.signal.reason);
    events.publish({ type: "agent_start" });
    events.publish({ type: "error", code: error.code, message: error.message });
    const usage = emptyUsage();
    const metrics = { cycles: 0, toolCalls: {}, modelMs: 0, toolMs: 0, frameworkMs: 0, usage };
    events.publish({ type: "agent_end", stopReason: "aborted", usage, durationMs: 0, metrics });
    // The history as the last run left it: the run in progress may be in the middle of a batch.
    const messages = this.#settledHistory.slice();
    run.end({
      runId: run.runId,
      messages,
      newMessages: [],
      stopReason: "aborted",
      usage,
      durationMs: 0,
      text: "",
      error,
      metrics,
    });
  }

  /** Queues a message delivered at the next steering boundary (between tools, before a model call). */
  steer(message: MessageInput): void {
    validateMessageInput(message, "steering message");
    this.#steeringQueue.push(message, this.#clock().now());
  }

  /** Queues a message that continues the run when it would otherwise stop. */
  followUp(message: MessageInput): void {
    validateMessageInput(message, "follow-up message");
    this.#followUpQueue.push(message, this.#clock().now());
  }

  /** Messages queued by `steer()` and `followUp()` (or put back by a run that ended before using them). */
  get queued(): { steering: AgentMessage[]; followUps: AgentMessage[] } {
    return { steering: this.#steeringQueue.peek(), followUps: this.#followUpQueue.peek() };
  }

  /** Removes the queued messages and returns them (to send them yourself, or drop them). */
  takeQueued(): { steering: AgentMessage[]; followUps: AgentMessage[] } {
    return { steering: this.#steeringQueue.drain(), followUps: this.#followUpQueue.drain() };
  }

  /** Aborts the running run and every run waiting behind it. */
  abort(reason?: unknown): void {
    for (const scope of [...this.#scopes]) scope.abort(reason);
  }

  /** Clears the history and both queues. Not allowed while a run is in progress. */
  reset(): void {
    if (this.busy) throw new AgentBusyError("reset the agent");
    this.#transcript.clear();
    this.#settledHistory = [];
    this.#waiting.dropBatch();
    this.#steeringQueue.clear();
    this.#followUpQueue.clear();
  }

  /** Listens to the events of every run of this agent; `"*"` for all types. Returns an unsubscribe. */
  on<T extends AgentEventType>(type: T, handler: (event: AgentEventOf<T>) => void): () => void;
  on(type: "*", handler: (event: AgentEvent) => void): () => void;
  on(type: AgentEventType | "*", handler: (event: never) => void): () => void {
    return this.#listeners.on(type, handler);
  }

  off(type: AgentEventType | "*", handler: (event: never) => void): void {
    this.#listeners.off(type, handler);
  }

  /**
   * The services runs are assembled from, resolved from the agent's container when the agent
   * first needs them (its first prompt): register yours before that.
   */
  #services(): RunServiceSet {
    this.#resolved ??= resolveServices(this.#container ?? this.#parent);
    return this.#resolved;
  }

  /**
   * The clock a queued message is stamped with. Before the first prompt it is looked up without
   * resolving the rest: a runtime may still register its services (a durable one, whose run is
   * prompted after `steer()`).
   */
  #clock(): Clock {
    return this.#resolved?.clock ?? (this.#container ?? this.#parent).resolve(CLOCK);
  }

  /** `config.logger`, or the container's `LOGGER`. */
  #logger(): Logger {
    return this.#config.logger ?? this.#services().logger;
  }

  /**
   * What observes the run: its trace (when the tracing records it) and its log lines (unless the
   * logger is the silent one). Undefined when neither: the run then pays nothing for them.
   */
  #observe(run: AgentRun, scope: AbortScope): RunObserver | undefined {
    const { runId } = run;
    const traced = this.#services().tracing.startRun({
      runId,
      orchestrator: this.#orchestrator.name,
      signal: scope.signal,
    });
    const logger = this.#logger();
    return bothObservers(traced, logger === silentLogger ? undefined : new RunLogLines(logger, runId));
  }

  /**
   * The run's one publisher: events go to the run's own stream, the listeners, the sink, then
   * the run's observer.
   */
  #publisher(run: AgentRun, observer: RunObserver | undefined): EventPublisher {
    const { clock, sink } = this.#services();
    return new EventPublisher(run.runId, clock, run, this.#listeners, sink, observer);
  }

  #logListenerError(error: unknown, event: AgentEvent): void {
    this.#logger().error(
      { runId: event.runId, eventType: event.type, err: error },
      "an event listener threw",
    );
  }

  async #execute(
    run: AgentRun,
    input: AgentMessage[],
    abortScope: AbortScope,
    timeouts: Timeouts,
    clientTools: "wait" | "suspend" | undefined,
  ): Promise<void> {
    // A batch the last run left waiting is resumed first, with the decisions made so far.
    const resume = this.#waiting.takeBatch();
    // A run that only resumes, when a run queued before it has resumed the batch: nothing to do.
    const idle = input === RESUME_ONLY && resume === undefined;
    const { totalMs, stepMs, firstChunkMs, chunkMs, toolMs, tools, clientToolMs } = timeouts;
    const total =
      totalMs === undefined
        ? undefined
        : setTimeout(() => abortScope.abort(new TimeoutError("total", totalMs)), totalMs);
    const config = this.#config;
    const transcript = this.#transcript.writer();
    const { clock, modelStep, toolRunner } = this.#services();
    const observer = this.#observe(run, abortScope);
    const session = new RunSession(
      {
        runId: run.runId,
        limits: this.#limits,
        systemPrompt: config.systemPrompt ?? "",
        provider: config.provider,
        tools: this.tools,
        hooks: config,
        transformContext: config.transformContext,
        convertToLlm: config.convertToLlm,
        contextBudget: this.#contextBudget,
        modelSettings: config.modelSettings,
        retry: this.#retry,
        stepTimeouts: (stepMs ?? firstChunkMs ?? chunkMs) ? { stepMs, firstChunkMs, chunkMs } : undefined,
        toolTimeouts: { toolMs, tools, clientToolMs },
        concurrency: config.toolExecution === "parallel" ? (config.maxConcurrency ?? 8) : 1,
        stall: config.stall ?? {},
        steering: this.#inbox(this.#steeringQueue, config.getSteeringMessages, run.runId, clock),
        followUps: this.#inbox(this.#followUpQueue, config.getFollowUpMessages, run.runId, clock),
        owner: this,
        abortScope,
        clock,
        modelStep: observer ? observer.modelStep(modelStep) : modelStep,
        toolRunner: observer ? observer.toolRunner(toolRunner) : toolRunner,
        clientTools: this.#waiting.clientTools,
        clientToolMode: clientTools ?? config.clientTools ?? "wait",
      },
      { orchestrator: this.#orchestrator, input, resume, idle },
      this.#publisher(run, observer),
      transcript,
    );
    const result: RunResult = await session.execute();
    clearTimeout(total);
    this.#waiting.settle(session.suspension, { timeouts, clientTools });
    this.#settledHistory = result.messages;
    abortScope.dispose();
    this.#scopes.delete(abortScope);
    run.end(result);
  }

  #inbox(
    queue: MessageQueue,
    callback: MessageCallback | undefined,
    runId: string,
    clock: Clock,
  ): MessageInbox {
    const transcript = this.#transcript;
    const ask = callback && (() => callback({ runId, messages: transcript.messages }));
    return new MessageInbox(queue, ask, clock);
  }
}

const RESUME_ONLY: AgentMessage[] = [];

const NO_TIMEOUTS: Timeouts = Object.freeze({});
