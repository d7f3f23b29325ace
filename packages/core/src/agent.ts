import "reflect-metadata";
import type { DependencyContainer } from "tsyringe";
import {
  type AgentConfig,
  defaultLimits,
  ownConfig,
  ownPromptOptions,
  type PromptOptions,
  resolveContextBudget,
  type Timeouts,
} from "./agent-config.js";
import type { AgentRun } from "./agent-run.js";
import { checkOwnAgentConfig, checkOwnPromptOptions, checkProviderFields } from "./config.js";
import { show } from "./config-issues.js";
import { AgentBusyError, InvalidConfigError } from "./errors.js";
import { deliver, ListenerBus } from "./events/listener-bus.js";
import type { AgentEvent, AgentEventOf, AgentEventType } from "./events/schemas.js";
import {
  validateMessageInput,
  validatePromptToolResults,
  validateQueuedMessage,
} from "./message-input-checks.js";
import { type AgentMessage, type MessageInput, toMessageAt } from "./messages.js";
import { defaultRetry } from "./model/retry.js";
import { isLogger, type Logger, rejectionsCaught } from "./observe/logger.js";
import type { Orchestrator } from "./orchestrator/contract.js";
import { ORCHESTRATOR_REGISTRY, rootContainer, validateOrchestrator } from "./orchestrator/registry.js";
import type { ClientToolOutcome } from "./run/client-tools.js";
import {
  guardedClock,
  type RunServiceSet,
  registerDefaultServices,
  resolveServices,
  systemClock,
} from "./run/default-services.js";
import { MessageQueue } from "./run/message-queue.js";
import { CLOCK, type Clock } from "./run/services.js";
import { TranscriptKeeper } from "./run/transcript-keeper.js";
import { WaitingCalls } from "./run/waiting-calls.js";
import { RunQueue } from "./run-queue.js";
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
  readonly #transcript = new TranscriptKeeper();
  readonly #steeringQueue = new MessageQueue();
  readonly #followUpQueue = new MessageQueue();
  readonly #listeners: ListenerBus;
  /** What runs wait for from outside: a suspended batch's approvals and client results, live client calls. */
  readonly #waiting = new WaitingCalls<PromptOptions>();
  /** The run in progress and those waiting their turn. */
  readonly #runs: RunQueue;
  #resolved: RunServiceSet | undefined;
  #guard: { clock: Clock; guarded: Clock } | undefined;

  constructor(config: AgentConfig = {}) {
    // The copy is checked, not the caller's object: what is checked is what the agent keeps.
    const own = ownConfig(config);
    checkOwnAgentConfig(own);
    if (own.provider !== undefined) checkProviderFields(own.provider);
    this.#config = own;
    // Frozen: every run hands it to its orchestrator (`ctx.limits`), which must not raise its own limits.
    const limits = own.limits ? Object.freeze({ ...defaultLimits, ...own.limits }) : defaultLimits;
    const retry = { ...defaultRetry, ...own.retry };
    this.tools = own.tools instanceof ToolRegistry ? own.tools : new ToolRegistry(own.tools ?? []);
    const contextBudget = resolveContextBudget(own.contextBudget, own.provider, own.systemPrompt ?? "");
    this.#listeners = new ListenerBus(
      own.onListenerError ?? ((error, event) => this.#logListenerError(error, event)),
    );
    // Through the keeper, which learns the tool-call ids and checks them as a run's writes are checked.
    for (const message of own.messages ?? []) this.#transcript.append(message);
    this.#parent = own.container ?? rootContainer;
    // The root container has the default services; a container of the app's own may not.
    if (own.container) registerDefaultServices(own.container);
    this.#orchestrator =
      typeof own.orchestrator === "object"
        ? validateOrchestrator(own.orchestrator, "config.orchestrator")
        : this.#parent.resolve(ORCHESTRATOR_REGISTRY).create(own.orchestrator);
    this.#runs = new RunQueue({
      config: this.#config,
      owner: this,
      tools: this.tools,
      orchestrator: this.#orchestrator,
      limits,
      retry,
      contextBudget,
      transcript: this.#transcript,
      steeringQueue: this.#steeringQueue,
      followUpQueue: this.#followUpQueue,
      listeners: this.#listeners,
      waiting: this.#waiting,
    });
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
    // A copy down to the per-tool limits: changing what it returns changes none of the agent's.
    return ownConfig({ timeouts: this.#config.timeouts ?? {} }).timeouts as Timeouts;
  }

  /** True while a run is in progress or waiting its turn. */
  get busy(): boolean {
    return this.#runs.busy;
  }

  /** Starts a run at once (or as soon as the previous one ends) and returns it. */
  prompt(input: MessageInput | readonly MessageInput[], options: PromptOptions = {}): AgentRun {
    // As the config: the copy is checked and used.
    const own = ownPromptOptions(options);
    checkOwnPromptOptions(own);
    const inputs = Array.isArray(input) ? input : [input];
    for (const message of inputs) validateMessageInput(message, "prompt");
    validatePromptToolResults(inputs);
    const services = this.#services();
    const now = services.clock.now();
    return this.#runs.start(
      inputs.map((message: MessageInput) => toMessageAt(message, now)),
      own,
      services,
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
    return options === undefined ? undefined : this.#runs.resume(options, this.#services());
  }

  /** Queues a message delivered at the next steering boundary (between tools, before a model call). */
  steer(message: MessageInput): void {
    validateQueuedMessage(message, "steering message");
    this.#steeringQueue.push(message, this.#clock().now());
  }

  /** Queues a message that continues the run when it would otherwise stop. */
  followUp(message: MessageInput): void {
    validateQueuedMessage(message, "follow-up message");
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
    this.#runs.abort(reason);
  }

  /** Clears the history and both queues. Not allowed while a run is in progress. */
  reset(): void {
    if (this.busy) throw new AgentBusyError("reset the agent");
    this.#runs.clearHistory();
    this.#waiting.dropBatch();
    this.#steeringQueue.clear();
    this.#followUpQueue.clear();
  }

  /** Listens to the events of every run of this agent; `"*"` for all types. Returns an unsubscribe. */
  on<T extends AgentEventType>(type: T, handler: (event: AgentEventOf<T>) => void): () => void;
  on(type: "*", handler: (event: AgentEvent) => void): () => void;
  on(type: AgentEventType | "*", handler: (event: never) => void): () => void {
    // Checked here, at once: wrapped and called later, a handler that is no function would only
    // fail at each event, reported to onListenerError (the silent logger by default).
    if (typeof type !== "string" || typeof handler !== "function")
      throw new InvalidConfigError(
        `agent.on(type, handler) takes an event type ("*" for every event) and a function, got ${show(type)} and ${show(handler)}.`,
      );
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
    if (this.#resolved === undefined) {
      const services = resolveServices(this.#container ?? this.#parent);
      // Checked as config.logger is, but only here: the container is read at the first prompt.
      if (this.#config.logger === undefined && !isLogger(services.logger))
        throw new InvalidConfigError(
          "The LOGGER service of the agent's container is no logger: it needs error, warn, info and debug functions.",
        );
      const { sink } = services;
      services.clock = this.#guarded(services.clock);
      this.#resolved = services;
      if (sink !== undefined) {
        // Delivered as the listeners are: a sink that throws or rejects is logged and stops neither
        // the run nor the consumers after it.
        const receive = (event: AgentEvent) => sink.publish(event);
        const onError = (error: unknown, event: AgentEvent) => this.#logSinkError(error, event);
        this.#resolved.sink = { publish: (event) => deliver(receive, event, onError) };
      }
    }
    return this.#resolved;
  }

  /**
   * The clock a queued message is stamped with. Before the first prompt it is looked up without
   * resolving the rest: a runtime may still register its services (a durable one, whose run is
   * prompted after `steer()`).
   */
  #clock(): Clock {
    return this.#resolved?.clock ?? this.#guarded((this.#container ?? this.#parent).resolve(CLOCK));
  }

  /** The clock as runs read it (see `guardedClock`); one guard per clock, so one warning. */
  #guarded(clock: Clock): Clock {
    if (clock === systemClock) return clock;
    if (this.#guard?.clock !== clock) {
      const guarded = guardedClock(clock, (reading, fault) =>
        this.#logger().warn(
          { reading, fault },
          `the CLOCK service's ${reading}() gave no finite number; the system clock stands in`,
        ),
      );
      this.#guard = { clock, guarded };
    }
    return this.#guard.guarded;
  }

  /** `config.logger`, or the container's `LOGGER`, for the agent's rare lines (an async one's rejections caught). */
  #logger(): Logger {
    return rejectionsCaught(this.#config.logger ?? this.#services().logger);
  }

  #logSinkError(error: unknown, event: AgentEvent): void {
    this.#logger().error({ runId: event.runId, eventType: event.type, err: error }, "the event sink threw");
  }

  #logListenerError(error: unknown, event: AgentEvent): void {
    this.#logger().error(
      { runId: event.runId, eventType: event.type, err: error },
      "an event listener threw",
    );
  }
}
