import "reflect-metadata";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import mittModule, { type Emitter, type EventType } from "mitt";
import type { DependencyContainer } from "tsyringe";
import { AgentRun } from "./agent-run.js";
import { AgentBusyError, InvalidConfigError, TimeoutError } from "./errors.js";
import type { AgentEvent, AgentEventOf, AgentEventType } from "./events/schemas.js";
import type { ContextBudgetOptions } from "./history/context-budget.js";
import { knownContextWindow } from "./history/context-windows.js";
import type { ConvertToLlm, HistoryTransform } from "./history/pipeline.js";
import { type AgentMessage, type MessageInput, toMessage } from "./messages.js";
import { AbortScope } from "./model/abortable.js";
import { defaultRetry, type RetryOptions } from "./model/retry.js";
import type { StepTimeouts } from "./model/step-watchdog.js";
import type { ModelCallSettings } from "./model/stream-step.js";
import type { Limits, Orchestrator } from "./orchestrator/contract.js";
import { ORCHESTRATOR_REGISTRY, rootContainer, validateOrchestrator } from "./orchestrator/registry.js";
import type { AgentHooks } from "./run/hooks.js";
import { MessageInbox, MessageQueue } from "./run/message-queue.js";
import { type PendingApproval, RunSession } from "./run/run-session.js";
import type { ApprovalDecision, ToolTimeouts } from "./run/tool-batch.js";
import type { Tool } from "./tools/define-tool.js";
import { ToolRegistry } from "./tools/registry.js";
import type { StallOptions } from "./tools/stall-detector.js";

// mitt's types resolve as CommonJS under NodeNext; its ESM default export is the factory.
const mitt = mittModule as unknown as <E extends Record<EventType, unknown>>() => Emitter<E>;

/** Context handed to the steering and follow-up callbacks. */
export interface QueueCallbackContext {
  runId: string;
  messages: readonly AgentMessage[];
}

export type MessageCallback = (
  context: QueueCallbackContext,
) => readonly MessageInput[] | undefined | Promise<readonly MessageInput[] | undefined>;

/** Time limits, per agent or per prompt. A model or total timeout ends the run as `timeout`; a tool
 * timeout gives that call `status: "timeout"` and the run goes on. */
export interface Timeouts extends StepTimeouts, ToolTimeouts {
  /** The whole run. */
  totalMs?: number;
}

export interface AgentConfig extends AgentHooks {
  systemPrompt?: string;
  /** Any AI SDK language model (specification v4, as every ai@7 provider returns). */
  provider?: LanguageModelV4;
  tools?: ToolRegistry | readonly Tool[];
  /** An orchestrator, or the name of a registered one; default: the registered default ("agentic"). */
  orchestrator?: Orchestrator | string;
  limits?: Partial<Limits>;
  /** Rewrites the history before each model call (see `keepRecent`, `keepFirstAndRecent`). */
  transformContext?: HistoryTransform;
  /** Turns agent messages into model messages; the default drops custom message kinds. */
  convertToLlm?: ConvertToLlm;
  /** Asked at every steering boundary, beside the `steer()` queue. */
  getSteeringMessages?: MessageCallback;
  /** Asked when the run would stop, beside the `followUp()` queue. */
  getFollowUpMessages?: MessageCallback;
  /** Replaces the default tool-use instruction of the agentic orchestrator's first call. */
  steeringInstruction?: string;
  /** Settings for every model call (temperature, maxOutputTokens, providerOptions, …). */
  modelSettings?: ModelCallSettings;
  retry?: Partial<RetryOptions>;
  /** The parent of this agent's container (default: the root container holding the plug-ins). */
  container?: DependencyContainer;
  /** Where listener errors go (default: console.error). */
  onListenerError?: (error: unknown, event: AgentEvent) => void;
  timeouts?: Timeouts;
  /** How the tool calls of one model reply run (default "sequential", one at a time in order). */
  toolExecution?: "sequential" | "parallel";
  /** Calls running at once in parallel execution (default 8). */
  maxConcurrency?: number;
  /** Stall detection: thresholds, or `false` to turn it off (default on: 2 same calls, 3 same results). */
  stall?: StallOptions | false;
  /** Keeps every request under a token budget, dropping the oldest tool results first. */
  contextBudget?: ContextBudgetOptions;
}

export interface PromptOptions {
  /** Aborts this run. */
  signal?: AbortSignal;
  /** Time limits for this run, over the agent's. */
  timeouts?: Timeouts;
}

export const defaultLimits: Limits = { maxCycles: 10, abortGraceMs: 250 };

type Events = { [T in AgentEventType]: AgentEventOf<T> };

/**
 * An agent: a history, a provider, tools and an orchestrator. Prompts are serialized: a prompt
 * made while another runs waits for it (its run starts when the previous one ends), so two runs
 * never race on one history.
 */
export class Agent {
  readonly container: DependencyContainer;
  readonly tools: ToolRegistry;
  readonly #config: AgentConfig;
  readonly #orchestrator: Orchestrator;
  readonly #limits: Limits;
  readonly #retry: RetryOptions;
  readonly #history: AgentMessage[] = [];
  readonly #steeringQueue = new MessageQueue();
  readonly #followUpQueue = new MessageQueue();
  readonly #emitter = mitt<Events>();
  readonly #wildcards = new Map<
    (event: AgentEvent) => void,
    (type: AgentEventType, event: AgentEvent) => void
  >();
  /** The aborts of the runs in progress or waiting: `abort()` fires them all. */
  readonly #scopes = new Set<AbortScope>();
  readonly #contextBudget: ContextBudgetOptions | undefined;
  /** Tool calls the last run left waiting for `approve()` / `deny()`. */
  #pending: PendingApproval | undefined;
  #tail: Promise<void> = Promise.resolve();

  constructor(config: AgentConfig = {}) {
    this.#config = config;
    if (config.provider !== undefined && !isLanguageModel(config.provider))
      throw new InvalidConfigError(
        "provider must be an AI SDK LanguageModel object (specification v4, e.g. openai('gpt-4o') from an ai@7 provider).",
      );
    this.#limits = validLimits({ ...defaultLimits, ...config.limits });
    this.#retry = { ...defaultRetry, ...config.retry };
    this.tools = config.tools instanceof ToolRegistry ? config.tools : new ToolRegistry(config.tools ?? []);
    this.#contextBudget = resolveContextBudget(config.contextBudget, config.provider);
    this.container = (config.container ?? rootContainer).createChildContainer();
    this.#orchestrator =
      typeof config.orchestrator === "object"
        ? validateOrchestrator(config.orchestrator, "config.orchestrator")
        : this.container.resolve(ORCHESTRATOR_REGISTRY).create(config.orchestrator);
  }

  get orchestrator(): Orchestrator {
    return this.#orchestrator;
  }

  /** A copy of the history. */
  get messages(): AgentMessage[] {
    return [...this.#history];
  }

  /** True while a run is in progress or waiting its turn. */
  get busy(): boolean {
    return this.#scopes.size > 0;
  }

  /** Starts a run at once (or as soon as the previous one ends) and returns it. */
  prompt(input: MessageInput | readonly MessageInput[], options: PromptOptions = {}): AgentRun {
    // Calls still waiting for approval are settled first: the approved run, the rest are denied.
    const pending = this.#pending;
    this.#pending = undefined;
    return this.#start((Array.isArray(input) ? input : [input]).map(toMessage), options, pending);
  }

  /** Tool calls the last run stopped for (`stopReason: "awaiting_approval"`). */
  get pendingApprovals(): { toolCallId: string; toolName: string; args: unknown; reason?: string }[] {
    const pending = this.#pending;
    if (!pending) return [];
    return pending.calls
      .filter((call) => pending.needed.has(call.id) && !pending.decisions.has(call.id))
      .map((call) => {
        const reason = pending.needed.get(call.id);
        return { toolCallId: call.id, toolName: call.name, args: call.args, ...(reason ? { reason } : {}) };
      });
  }

  /** Approves a call the run is waiting for; once every call is decided, the run continues (returned). */
  approve(toolCallId: string): AgentRun | undefined {
    return this.#decide(toolCallId, { approved: true });
  }

  /** Denies a call the run is waiting for (the model sees the reason); once all are decided, it continues. */
  deny(toolCallId: string, reason?: string): AgentRun | undefined {
    return this.#decide(toolCallId, reason === undefined ? { approved: false } : { approved: false, reason });
  }

  #decide(toolCallId: string, decision: ApprovalDecision): AgentRun | undefined {
    const pending = this.#pending;
    if (!pending?.needed.has(toolCallId))
      throw new InvalidConfigError(`No tool call "${toolCallId}" is waiting for approval.`);
    if (pending.decisions.has(toolCallId))
      throw new InvalidConfigError(
        `Tool call "${toolCallId}" was already ${pending.decisions.get(toolCallId)?.approved ? "approved" : "denied"}.`,
      );
    pending.decisions.set(toolCallId, decision);
    if (pending.decisions.size < pending.needed.size) return undefined;
    this.#pending = undefined;
    return this.#start([], {}, pending);
  }

  #start(inputs: AgentMessage[], options: PromptOptions, resume: PendingApproval | undefined): AgentRun {
    const scope = new AbortScope(options.signal);
    const run = new AgentRun(crypto.randomUUID(), (reason) => scope.abort(reason));
    this.#scopes.add(scope);
    const timeouts = { ...this.#config.timeouts, ...options.timeouts };
    this.#tail = this.#tail.then(() => this.#execute(run, inputs, scope, timeouts, resume));
    return run;
  }

  /** Queues a message delivered at the next steering boundary (between tools, before a model call). */
  steer(message: MessageInput): void {
    this.#steeringQueue.push(message);
  }

  /** Queues a message that continues the run when it would otherwise stop. */
  followUp(message: MessageInput): void {
    this.#followUpQueue.push(message);
  }

  /** Aborts the running run and every run waiting behind it. */
  abort(reason?: unknown): void {
    for (const scope of this.#scopes) scope.abort(reason);
  }

  /** Clears the history and both queues. Not allowed while a run is in progress. */
  reset(): void {
    if (this.busy) throw new AgentBusyError("reset the agent");
    this.#history.length = 0;
    this.#pending = undefined;
    this.#steeringQueue.clear();
    this.#followUpQueue.clear();
  }

  /** Listens to the events of every run of this agent; `"*"` for all types. Returns an unsubscribe. */
  on<T extends AgentEventType>(type: T, handler: (event: AgentEventOf<T>) => void): () => void;
  on(type: "*", handler: (event: AgentEvent) => void): () => void;
  on(type: AgentEventType | "*", handler: (event: never) => void): () => void {
    if (type === "*") {
      const listener = handler as (event: AgentEvent) => void;
      const wrapped = (_type: AgentEventType, event: AgentEvent) => listener(event);
      this.#wildcards.set(listener, wrapped);
      this.#emitter.on("*", wrapped);
      return () => this.off("*", listener);
    }
    this.#emitter.on(type as AgentEventType, handler as never);
    return () => this.off(type, handler as (event: AgentEvent) => void);
  }

  off(type: AgentEventType | "*", handler: (event: never) => void): void {
    if (type === "*") {
      const wrapped = this.#wildcards.get(handler as (event: AgentEvent) => void);
      if (wrapped) this.#emitter.off("*", wrapped);
      this.#wildcards.delete(handler as (event: AgentEvent) => void);
      return;
    }
    this.#emitter.off(type as AgentEventType, handler as never);
  }

  async #execute(
    run: AgentRun,
    input: AgentMessage[],
    abortScope: AbortScope,
    timeouts: Timeouts,
    resume: PendingApproval | undefined,
  ): Promise<void> {
    const { totalMs, stepMs, firstChunkMs, chunkMs, toolMs, tools } = timeouts;
    const total =
      totalMs === undefined
        ? undefined
        : setTimeout(() => abortScope.abort(new TimeoutError("total", totalMs)), totalMs);
    const config = this.#config;
    const session = new RunSession({
      runId: run.runId,
      orchestrator: this.#orchestrator,
      history: this.#history,
      input,
      abortScope,
      limits: this.#limits,
      systemPrompt: this.#config.systemPrompt ?? "",
      steeringInstruction: this.#config.steeringInstruction,
      provider: this.#config.provider,
      tools: this.tools,
      transformContext: this.#config.transformContext,
      convertToLlm: this.#config.convertToLlm,
      modelSettings: this.#config.modelSettings,
      retry: this.#retry,
      steering: this.#inbox(this.#steeringQueue, this.#config.getSteeringMessages, run.runId),
      followUps: this.#inbox(this.#followUpQueue, this.#config.getFollowUpMessages, run.runId),
      container: this.container,
      hooks: config,
      stepTimeouts: (stepMs ?? firstChunkMs ?? chunkMs) ? { stepMs, firstChunkMs, chunkMs } : undefined,
      toolTimeouts: { toolMs, tools },
      concurrency: config.toolExecution === "parallel" ? (config.maxConcurrency ?? 8) : 1,
      stall: config.stall ?? {},
      contextBudget: this.#contextBudget,
      resume,
      publish: (event) => {
        run.push(event);
        if (this.#emitter.all.size > 0) this.#notify(event);
      },
    });
    const result = await session.execute();
    clearTimeout(total);
    this.#pending = session.awaitingApproval;
    abortScope.dispose();
    this.#scopes.delete(abortScope);
    run.end(result);
  }

  #inbox(queue: MessageQueue, callback: MessageCallback | undefined, runId: string): MessageInbox {
    const history = this.#history;
    return new MessageInbox(queue, callback && (() => callback({ runId, messages: history })));
  }

  /** Each listener is isolated: one that throws neither breaks the run nor starves the others. */
  #notify(event: AgentEvent): void {
    const typed = this.#emitter.all.get(event.type);
    if (typed)
      for (const handler of [...typed]) this.#call(() => (handler as (e: AgentEvent) => void)(event), event);
    const wildcards = this.#emitter.all.get("*");
    if (wildcards)
      for (const handler of [...wildcards])
        this.#call(() => (handler as (type: string, e: AgentEvent) => void)(event.type, event), event);
  }

  #call(listener: () => void, event: AgentEvent): void {
    try {
      listener();
    } catch (error) {
      (this.#config.onListenerError ?? ((e) => console.error("agent-core: an event listener threw", e)))(
        error,
        event,
      );
    }
  }
}

function isLanguageModel(provider: unknown): provider is LanguageModelV4 {
  const model = provider as Partial<LanguageModelV4> | null;
  return model !== null && typeof model === "object" && typeof model.doStream === "function";
}

/** Without `maxTokens` or `contextWindow`, the budget is a share of the model's known window. */
function resolveContextBudget(
  budget: ContextBudgetOptions | undefined,
  provider: LanguageModelV4 | undefined,
): ContextBudgetOptions | undefined {
  if (budget === undefined || budget.maxTokens !== undefined || budget.contextWindow !== undefined)
    return budget;
  const contextWindow = provider ? knownContextWindow(provider.modelId) : undefined;
  if (contextWindow === undefined)
    throw new InvalidConfigError(
      `contextBudget needs contextWindow or maxTokens: the context window of model "${provider?.modelId ?? "(none)"}" is not known.`,
    );
  return { ...budget, contextWindow };
}

function validLimits(limits: Limits): Limits {
  if (!Number.isInteger(limits.maxCycles) || limits.maxCycles < 1)
    throw new InvalidConfigError(`limits.maxCycles must be a whole number >= 1, got ${limits.maxCycles}.`);
  if (!Number.isFinite(limits.abortGraceMs) || limits.abortGraceMs < 0)
    throw new InvalidConfigError(`limits.abortGraceMs must be a number >= 0, got ${limits.abortGraceMs}.`);
  return limits;
}
