import type { JSONSchema7, LanguageModelV4 } from "@ai-sdk/provider";
import { zodSchema } from "@ai-sdk/provider-utils";
import type { DependencyContainer } from "tsyringe";
import type { z } from "zod";
import {
  AbortedError,
  AwaitingApprovalError,
  abortError,
  EmptyResponseError,
  MaxCyclesExceededError,
  ReservedEventError,
  StopRequestedError,
  StructuredOutputError,
} from "../errors.js";
import type { OrchestratorEvent } from "../events/schemas.js";
import type { ContextBudgetOptions } from "../history/context-budget.js";
import type { ConvertToLlm, HistoryTransform } from "../history/pipeline.js";
import {
  type AgentMessage,
  type AssistantMessage,
  type AssistantStopReason,
  type LlmMessage,
  type MessageInput,
  type ToolCall,
  textOf,
  toMessage,
} from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { RetryOptions } from "../model/retry.js";
import type { StepTimeouts } from "../model/step-watchdog.js";
import type { ModelCallSettings, ModelStepResult } from "../model/stream-step.js";
import { parseStructured } from "../model/structured-output.js";
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
import { StallDetector, type StallOptions } from "../tools/stall-detector.js";
import type { EventPublisher } from "./event-publisher.js";
import type { AgentHooks } from "./hooks.js";
import type { MessageInbox } from "./message-queue.js";
import type { MetricsRecorder, MetricsSnapshot } from "./metrics.js";
import { ModelCall, type ModelCallSetup } from "./model-call.js";
import { type ModelCallSpec, type ModelRequest, ModelRequestBuilder } from "./model-request.js";
import type { Clock, ModelStep, ToolRunner } from "./services.js";
import type { ApprovalDecision, Suspension } from "./suspension.js";
import { type BatchOutcome, type BatchSetup, ToolBatch, type ToolTimeouts } from "./tool-batch.js";
import type { ClosedCall, TranscriptWriter } from "./transcript-keeper.js";

/** Everything a run is made of: what the agent hands it, as data. */
export interface RunSetup {
  runId: string;
  limits: Limits;
  systemPrompt: string;
  provider: LanguageModelV4 | undefined;
  tools: ToolRegistry;
  hooks: AgentHooks;
  transformContext: HistoryTransform | undefined;
  convertToLlm: ConvertToLlm | undefined;
  contextBudget: ContextBudgetOptions | undefined;
  modelSettings: ModelCallSettings | undefined;
  retry: RetryOptions;
  stepTimeouts: StepTimeouts | undefined;
  toolTimeouts: ToolTimeouts;
  /** Tool calls run at once by default (1: sequential). */
  concurrency: number;
  stall: StallOptions | false;
  steering: MessageInbox;
  followUps: MessageInbox;
  container: DependencyContainer;
  abortScope: AbortScope;
  clock: Clock;
  modelStep: ModelStep;
  toolRunner: ToolRunner;
}

/** What the services tell the run's lifecycle: the run waits for decisions. */
export interface SuspensionListener {
  suspended(suspension: Suspension): void;
}

/**
 * The services of `RunContext`: what an orchestrator does goes through here, and each service
 * keeps the run's guarantees. Events go out through the run's one publisher, messages into the
 * history through its one transcript writer; both refuse writes once the run has ended.
 */
export class RunServices implements RunContext {
  readonly runId: string;
  readonly signal: AbortSignal;
  readonly limits: Readonly<Limits>;
  readonly systemPrompt: string;
  readonly tools: ToolRegistry;
  readonly steering: MessageSource;
  readonly followUps: MessageSource;
  readonly container: DependencyContainer;

  readonly #setup: RunSetup;
  readonly #events: EventPublisher;
  readonly #transcript: TranscriptWriter;
  readonly #metrics: MetricsRecorder;
  readonly #requests: ModelRequestBuilder;
  readonly #modelCall: ModelCallSetup;
  readonly #batch: { -readonly [K in keyof BatchSetup]: BatchSetup[K] };
  readonly #suspension: SuspensionListener;
  /** Calls of a model reply cut off by the length limit: their arguments may be incomplete. */
  readonly #cutOffCalls = new Set<string>();
  #turn = 0;
  #turnStartedAt: number | undefined;
  #turnFirstMessage = 0;
  #turnMetrics: MetricsSnapshot | undefined;
  /** Model calls and tool batches under way: what the run's end must cancel. */
  inFlight = 0;

  constructor(
    setup: RunSetup,
    events: EventPublisher,
    transcript: TranscriptWriter,
    metrics: MetricsRecorder,
    suspension: SuspensionListener,
  ) {
    this.#setup = setup;
    this.#events = events;
    this.#transcript = transcript;
    this.#metrics = metrics;
    this.#suspension = suspension;
    this.runId = setup.runId;
    this.signal = setup.abortScope.signal;
    this.limits = setup.limits;
    this.systemPrompt = setup.systemPrompt;
    this.tools = setup.tools;
    this.steering = setup.steering;
    this.followUps = setup.followUps;
    this.container = setup.container;
    this.#requests = new ModelRequestBuilder(setup, this.signal, events);
    this.#modelCall = {
      abortScope: setup.abortScope,
      retry: setup.retry,
      timeouts: setup.stepTimeouts,
      events,
      metrics,
      clock: setup.clock,
      activity: this,
    };
    this.#batch = {
      runId: setup.runId,
      tools: setup.tools,
      runner: setup.toolRunner,
      scope: setup.abortScope,
      graceMs: setup.limits.abortGraceMs,
      timeouts: setup.toolTimeouts,
      hooks: setup.hooks,
      steering: setup.steering,
      stall: undefined,
      cutOffCalls: this.#cutOffCalls,
      events,
      transcript,
    };
  }

  /** The stall detector is made with the run's first batch: many runs never call a tool. */
  #batchSetup(): BatchSetup {
    if (this.#batch.stall === undefined && this.#setup.stall !== false)
      this.#batch.stall = new StallDetector(this.#setup.stall);
    return this.#batch;
  }

  #messages: RunMessageLog | undefined;

  /** `ctx.messages`, made when an orchestrator first asks for it. */
  get messages(): MessageLog {
    this.#messages ??= new RunMessageLog(this);
    return this.#messages;
  }

  get cycles(): number {
    return this.#metrics.cycles;
  }

  /** The history (the keeper's array: read only). */
  get history(): readonly AgentMessage[] {
    return this.#transcript.keeper.messages;
  }

  emit(event: OrchestratorEvent): void {
    const service = RESERVED_EVENTS[event.type as keyof typeof RESERVED_EVENTS];
    if (service !== undefined) throw new ReservedEventError(event.type, service);
    this.#events.publish({ ...event });
  }

  startTurn(): number {
    this.#assertOpen();
    if (this.#turnStartedAt !== undefined)
      this.endTurn(this.lastAssistantFrom(this.#turnFirstMessage) ?? this.#emptyAssistant("stop"));
    this.#turn++;
    this.#turnStartedAt = this.#setup.clock.monotonic();
    this.#turnFirstMessage = this.history.length;
    this.#turnMetrics = this.#metrics.snapshot();
    this.#events.publish({ type: "turn_start", turn: this.#turn });
    return this.#turn;
  }

  endTurn(message: AssistantMessage): void {
    if (this.#turnStartedAt === undefined || this.#events.sealed) return;
    const durationMs = this.#setup.clock.monotonic() - this.#turnStartedAt;
    this.#turnStartedAt = undefined;
    const metrics = this.#metrics.since(this.#turnMetrics as MetricsSnapshot, durationMs);
    this.#events.publish({ type: "turn_end", message, durationMs, metrics });
  }

  /** Closes a turn still open at the end of the run, with its last answer (or an empty one). */
  endOpenTurn(stopReason: AssistantStopReason): void {
    if (this.#turnStartedAt === undefined) return;
    this.endTurn(this.lastAssistantFrom(this.#turnFirstMessage) ?? this.#emptyAssistant(stopReason));
  }

  decide(options: DecideOptions = {}): Promise<Decision> {
    const spec: ModelCallSpec = {
      system: options.system,
      tools: options.tools,
      settings: options.settings,
      extraMessages: options.messages,
    };
    return this.#callModel(spec, true, this.#decision);
  }

  /** Records the model's reply and says what it decided; runs as the stream ends. */
  readonly #decision = (step: ModelStepResult): Decision => {
    this.#assertOpen();
    if (step.content.length === 0) throw new EmptyResponseError(step.finishReason);
    const calls = this.#uniqueCalls(step);
    // A reply cut off by the length limit may carry truncated arguments: its calls are not run.
    if (step.finishReason === "length") for (const call of calls) this.#cutOffCalls.add(call.id);
    const steer = calls.length > 0;
    const message: AssistantMessage = {
      role: "assistant",
      content: step.content,
      model: step.modelId,
      stopReason: steer ? "toolUse" : assistantStopReason(step.finishReason),
      usage: step.usage,
      timestamp: this.#setup.clock.now(),
    };
    this.#append(message);
    this.#events.publish({
      type: "steering_mode",
      mode: steer ? "steer" : "respond",
      queueSize: calls.length,
    });
    return steer
      ? { mode: "steer", message, toolCalls: calls }
      : { mode: "respond", message, text: textOf(message) };
  };

  /**
   * Tool-call ids are unique in the history: a provider that repeats one (within a reply, or
   * from an earlier reply) gets a fresh id for the repeat, in the message and in its events.
   */
  #uniqueCalls(step: ModelStepResult): ToolCall[] {
    const keeper = this.#transcript.keeper;
    const calls = step.toolCalls;
    let seen: Set<string> | undefined;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i] as ToolCall;
      let id = keeper.uniqueCallId(call.id);
      if (calls.length > 1) {
        seen ??= new Set();
        while (seen.has(id)) id = keeper.uniqueCallId(`${id}_${i + 1}`);
        seen.add(id);
      }
      if (id === call.id) continue;
      const renamed: ToolCall = { id, name: call.name, args: call.args, originalId: call.id };
      calls[i] = renamed;
      const block = step.content.find((b) => b.type === "toolCall" && b.id === call.id && b !== undefined);
      const index = step.content.indexOf(block as (typeof step.content)[number]);
      step.content[index] = { type: "toolCall", id, name: call.name, args: call.args };
    }
    return calls;
  }

  async generateObject<T>(
    schema: z.ZodType<T>,
    options: GenerateObjectOptions = {},
  ): Promise<GeneratedObject<T>> {
    const attempts = Math.max(1, options.maxAttempts ?? 2);
    const responseFormat = {
      type: "json" as const,
      schema: zodSchema(schema).jsonSchema as JSONSchema7,
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(options.description === undefined ? {} : { description: options.description }),
    };
    const extra: LlmMessage[] = [...(options.messages ?? [])];
    let problem = "";
    let text = "";
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const step = await this.#callModel(
        {
          system: options.system,
          tools: false,
          settings: { ...options.settings, responseFormat },
          extraMessages: extra,
        },
        false,
        (result) => result,
      );
      text = textOf({ role: "assistant", content: step.content });
      const parsed = parseStructured(schema, text);
      if (parsed.success) return { object: parsed.value, text };
      problem = parsed.error;
      extra.push(
        { role: "assistant", content: [{ type: "text", text }] },
        { role: "user", content: `${problem} Reply with only the corrected JSON.` },
      );
    }
    throw new StructuredOutputError(attempts, problem, text);
  }

  executeTools(calls: readonly ToolCall[], options: ExecuteToolsOptions = {}): Promise<ToolBatchResult> {
    try {
      const outcome = this.runBatch(calls, options);
      return outcome instanceof Promise
        ? outcome.then(this.#batchResult)
        : Promise.resolve(this.#batchResult(outcome));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Runs a batch; synchronously when every tool was. Resuming a suspended batch passes `decided`. */
  runBatch(
    calls: readonly ToolCall[],
    options: ExecuteToolsOptions,
    decided?: ReadonlyMap<string, ApprovalDecision>,
  ): BatchOutcome | Promise<BatchOutcome> {
    this.#assertOpen();
    const clock = this.#setup.clock;
    const started = clock.monotonic();
    const batch = new ToolBatch(this.#batchSetup(), calls, options);
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? this.#setup.concurrency));
    this.inFlight++;
    const settle = (outcome: BatchOutcome) => {
      this.inFlight--;
      this.#metrics.toolMs += clock.monotonic() - started;
      if (outcome.kind === "done")
        for (const result of outcome.results) if (result) this.#metrics.count(result.status);
      return outcome;
    };
    let running: BatchOutcome | Promise<BatchOutcome>;
    try {
      running = batch.run(concurrency, decided);
    } catch (error) {
      this.inFlight--;
      throw error;
    }
    if (!(running instanceof Promise)) return settle(running);
    return running.then(settle, (error: unknown) => {
      this.inFlight--;
      throw error;
    });
  }

  readonly #batchResult = (outcome: BatchOutcome): ToolBatchResult => {
    if (outcome.kind === "suspended") {
      this.#suspension.suspended(outcome.suspension);
      // The run ends as suspended (a value the lifecycle holds); this only unwinds the orchestrator.
      throw new AwaitingApprovalError(
        outcome.suspension.calls
          .filter((call) => outcome.suspension.waits.has(call.id))
          .map((call) => ({ id: call.id, name: call.name, args: call.args })),
      );
    }
    this.#assertOpen();
    if (outcome.stall) throw outcome.stall;
    if (outcome.steering.length > 0) this.applySteering(outcome.steering);
    return { results: outcome.results, steering: outcome.steering };
  };

  applySteering(inputs: readonly MessageInput[]): void {
    this.#assertOpen();
    if (inputs.length === 0) return;
    const messages = inputs.map(toMessage);
    for (const message of messages) this.#append(message);
    this.#events.publish({ type: "steering_applied", messages });
  }

  /**
   * Appends to the history through the run's writer. Calls the keeper had to close (a new
   * message while calls were still open) get their events, so every `tool_call` has its result.
   */
  appendMessage(message: AgentMessage): void {
    this.#append(message);
  }

  #append(message: AgentMessage): void {
    const closed = this.#transcript.append(message);
    if (closed.length > 0) this.publishClosed(closed);
    if (message.role === "user") {
      // A new user, follow-up or steering message: the stall window starts again.
      this.#batch.stall?.reset();
      this.#setup.steering.delivered([message]);
      this.#setup.followUps.delivered([message]);
    }
  }

  /** Events for results the keeper made: `tool_call` where none went out, then `tool_result`. */
  publishClosed(closed: readonly ClosedCall[]): void {
    for (const { call, result } of closed) {
      if (!this.#events.announced(call.id))
        this.#events.publish({
          type: "tool_call",
          toolCallId: call.id,
          toolName: call.name,
          args: call.args,
        });
      this.#metrics.count(result.status);
      this.#events.publish({
        type: "tool_result",
        toolCallId: call.id,
        toolName: call.name,
        status: result.status,
        error: result.content,
      });
    }
  }

  /**
   * One model call, for `decide` and `generateObject`: checks abort, `maxCycles` and steering
   * first, builds the request, and hands the step's result to `finish` as the stream ends. Without
   * hooks, a steering callback or a pipeline step, everything before the call is synchronous.
   */
  #callModel<T>(spec: ModelCallSpec, streamsText: boolean, finish: (step: ModelStepResult) => T): Promise<T> {
    try {
      this.#assertOpen();
      const { hooks, steering } = this.#setup;
      if (
        (this.#metrics.cycles > 0 && hooks.shouldStop) ||
        steering.hasCallback ||
        this.#requests.needsPipeline
      )
        return this.#callModelSlowly(spec, streamsText, finish);
      this.#countCycle();
      const taken = steering.takeNow() as AgentMessage[];
      if (taken.length > 0) this.applySteering(taken);
      return this.#stream(this.#requests.fromHistory(spec, this.history), streamsText, finish);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async #callModelSlowly<T>(
    spec: ModelCallSpec,
    streamsText: boolean,
    finish: (step: ModelStepResult) => T,
  ): Promise<T> {
    const { hooks } = this.#setup;
    if (this.#metrics.cycles > 0 && hooks.shouldStop) {
      const stop = await hooks.shouldStop({
        runId: this.runId,
        step: this.#metrics.cycles,
        messages: this.history,
      });
      if (stop) throw new StopRequestedError();
    }
    this.#countCycle();
    const taken = this.#setup.steering.takeNow();
    const steering = Array.isArray(taken) ? taken : await taken;
    if (steering.length > 0) this.applySteering(steering);
    const request = this.#requests.needsPipeline
      ? await this.#requests.throughPipeline(spec, this.history, this.#metrics.cycles)
      : this.#requests.fromHistory(spec, this.history);
    this.#assertOpen();
    return this.#stream(request, streamsText, finish);
  }

  #stream<T>(request: ModelRequest, streamsText: boolean, finish: (step: ModelStepResult) => T): Promise<T> {
    const call = new ModelCall(
      this.#modelCall,
      request.model,
      request.prompt,
      request.tools,
      request.settings,
      streamsText,
      finish,
    );
    return this.#setup.modelStep.run(call);
  }

  #countCycle(): void {
    this.#assertOpen();
    if (this.#metrics.cycles >= this.limits.maxCycles)
      throw new MaxCyclesExceededError(this.limits.maxCycles);
    this.#metrics.cycles++;
    // A new reply: calls made from here on are not held against each other's reply.
    this.#batch.stall?.beginReply();
  }

  #assertOpen(): void {
    if (this.#transcript.closed) throw new AbortedError("the run has already ended");
    if (this.#setup.abortScope.aborted) throw abortError(this.signal.reason);
  }

  lastAssistantFrom(start: number): AssistantMessage | undefined {
    const history = this.history;
    for (let i = history.length - 1; i >= start; i--) {
      const message = history[i];
      if (message?.role === "assistant") return message as AssistantMessage;
    }
    return undefined;
  }

  #emptyAssistant(stopReason: AssistantStopReason): AssistantMessage {
    return { role: "assistant", content: [], stopReason, timestamp: this.#setup.clock.now() };
  }
}

/**
 * `ctx.messages`. On Node 20 (V8 11.3) an object literal with getters held by the run kept the
 * whole run alive through young-generation collections (see docs/benchmarks.md): a class with
 * prototype getters, and `append` a bound function (an own property, so destructuring it works).
 */
class RunMessageLog implements MessageLog {
  readonly #run: RunServices;
  readonly append: (...messages: AgentMessage[]) => void;

  constructor(run: RunServices) {
    this.#run = run;
    this.append = appendEach.bind(undefined, run);
  }

  get all(): readonly AgentMessage[] {
    return this.#run.history;
  }

  get length(): number {
    return this.#run.history.length;
  }
}

function appendEach(run: RunServices, ...messages: AgentMessage[]): void {
  for (const message of messages) run.appendMessage(message);
}

/** Events only the framework emits, because their ordering rules are its guarantees. */
const RESERVED_EVENTS = {
  agent_start: "the framework (it starts every run)",
  agent_end: "the framework (it ends every run)",
  error: "the framework (throw an AgentError instead)",
  turn_start: "ctx.startTurn()",
  turn_end: "ctx.endTurn(message)",
  steering_mode: "ctx.decide() (every model decision reports it)",
  tool_call: "ctx.executeTools(calls)",
  tool_result: "ctx.executeTools(calls)",
  steering_applied: "ctx.applySteering(messages)",
} as const;

function assistantStopReason(finishReason: string): AssistantStopReason {
  switch (finishReason) {
    case "stop":
      return "stop";
    case "length":
      return "length";
    case "error":
      return "error";
    default:
      return "other";
  }
}
