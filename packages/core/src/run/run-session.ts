import type {
  JSONSchema7,
  LanguageModelV4,
  LanguageModelV4FunctionTool,
  LanguageModelV4Prompt,
} from "@ai-sdk/provider";
import { zodSchema } from "@ai-sdk/provider-utils";
import type { DependencyContainer } from "tsyringe";
import type { z } from "zod";
import {
  AbortedError,
  AgentError,
  AwaitingApprovalError,
  abortError,
  EmptyResponseError,
  MaxCyclesExceededError,
  NoProviderError,
  OrchestratorError,
  ReservedEventError,
  StopRequestedError,
  StructuredOutputError,
} from "../errors.js";
import type { AgentEvent, OrchestratorEvent, RunMetrics, StopReason } from "../events/schemas.js";
import { type ContextBudgetOptions, contextBudget, estimateTokens } from "../history/context-budget.js";
import { type ConvertToLlm, defaultConvertToLlm, type HistoryTransform } from "../history/pipeline.js";
import {
  type AgentMessage,
  type AssistantMessage,
  type AssistantStopReason,
  addUsage,
  emptyUsage,
  type LlmMessage,
  type MessageInput,
  type ToolCall,
  type ToolResultMessage,
  textOf,
  toMessage,
  type Usage,
} from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import { PromptBuilder, toModelPrompt } from "../model/prompt.js";
import type { RetryOptions } from "../model/retry.js";
import type { StepTimeouts } from "../model/step-watchdog.js";
import { type ModelCallSettings, type ModelStepResult, streamModelStep } from "../model/stream-step.js";
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
  Orchestrator,
  RunContext,
  ToolBatchResult,
} from "../orchestrator/contract.js";
import { toolResult } from "../tools/execute-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import { StallDetector, type StallOptions } from "../tools/stall-detector.js";
import type { AgentHooks } from "./hooks.js";
import { RunMessageLog } from "./message-log.js";
import type { MessageInbox } from "./message-queue.js";
import { MetricsRecorder, monotonicNow } from "./metrics.js";
import { ModelCall, type ModelCallHost, type ModelCallSpec } from "./model-call.js";
import { type ApprovalDecision, type BatchHost, ToolBatch, type ToolTimeouts } from "./tool-batch.js";
import { findUnansweredToolCalls, type UnansweredCall } from "./transcript.js";

/** Everything a run needs from its agent. */
export interface RunSetup {
  runId: string;
  orchestrator: Orchestrator;
  history: AgentMessage[];
  input: AgentMessage[];
  abortScope: AbortScope;
  limits: Limits;
  systemPrompt: string;
  steeringInstruction: string | undefined;
  provider: LanguageModelV4 | undefined;
  tools: ToolRegistry;
  transformContext: HistoryTransform | undefined;
  convertToLlm: ConvertToLlm | undefined;
  modelSettings: ModelCallSettings | undefined;
  retry: RetryOptions;
  steering: MessageInbox;
  followUps: MessageInbox;
  container: DependencyContainer;
  hooks: AgentHooks;
  stepTimeouts: StepTimeouts | undefined;
  toolTimeouts: ToolTimeouts;
  /** Tool calls run at once by default (1: sequential). */
  concurrency: number;
  stall: StallOptions | false;
  contextBudget: ContextBudgetOptions | undefined;
  /** Tool calls a previous run left waiting for approval, with the decisions made since. */
  resume: PendingApproval | undefined;
  /** Receives every event, already enveloped. */
  publish(event: AgentEvent): void;
}

/** Tool calls waiting for approval, and why. */
export interface PendingApproval {
  calls: readonly ToolCall[];
  /** The calls that need a decision, with the reason the hook gave. */
  needed: ReadonlyMap<string, string | undefined>;
  decisions: Map<string, ApprovalDecision>;
}

export interface RunResult {
  runId: string;
  /** The whole history of the agent after this run. */
  messages: AgentMessage[];
  /** The messages this run added (its prompt included). */
  newMessages: AgentMessage[];
  stopReason: StopReason;
  usage: Usage;
  durationMs: number;
  /** The text of the last assistant message of this run ("" when none). */
  text: string;
  /** Set when the run failed: the same error the `error` event reported. */
  error?: AgentError;
  /** When `stopReason` is `awaiting_approval`: the calls to `approve()` or `deny()`. */
  pendingApprovals?: { toolCallId: string; toolName: string; args: unknown; reason?: string }[];
  metrics: RunMetrics;
}

/**
 * One run of an orchestrator. It implements the services of `RunContext` and owns the lifecycle:
 * `agent_start` first, `agent_end` last, exactly once each; a valid history after every ending.
 */
export class RunSession implements RunContext {
  readonly runId: string;
  readonly signal: AbortSignal;
  readonly limits: Readonly<Limits>;
  readonly systemPrompt: string;
  readonly steeringInstruction: string | undefined;
  readonly tools: ToolRegistry;
  readonly messages: MessageLog;
  readonly steering: MessageSource;
  readonly followUps: MessageSource;
  readonly container: DependencyContainer;

  readonly #setup: RunSetup;
  readonly #abortScope: AbortScope;
  readonly #prompts = new PromptBuilder();
  readonly #startedAt = Date.now();
  readonly #firstMessage: number;
  #seq = 0;
  #sealed = false;
  #cycles = 0;
  #usage: Usage = emptyUsage();
  #turn = 0;
  #turnStartedAt: number | undefined;
  #turnFirstMessage = 0;
  /**
   * Ids of the tool calls whose `tool_call` event went out and whose `tool_result` has not yet: a
   * short list (the calls running now), cheaper than a Map's set and delete per call.
   */
  readonly #openCalls: string[] = [];
  readonly #cutOffCalls = new Set<string>();
  /** Tool calls the model made in this run, and results recorded: equal means nothing to repair. */
  #callsMade = 0;
  #callsAnswered = 0;
  /** An orchestrator appended messages itself: they may hold tool calls of their own. */
  #appendedByOrchestrator = false;
  readonly #stall: StallDetector | undefined;
  readonly #budget: HistoryTransform | undefined;
  readonly #metrics = new MetricsRecorder();
  #turnMetrics = MetricsRecorder.zero();
  #awaiting: PendingApproval | undefined;
  /** What every model call and tool batch of this run needs; built once, not per call. */
  readonly #modelCallHost: ModelCallHost;
  readonly #batchHost: BatchHost;

  constructor(setup: RunSetup) {
    this.#setup = setup;
    this.runId = setup.runId;
    this.signal = setup.abortScope.signal;
    this.limits = setup.limits;
    this.systemPrompt = setup.systemPrompt;
    this.steeringInstruction = setup.steeringInstruction;
    this.tools = setup.tools;
    this.steering = setup.steering;
    this.followUps = setup.followUps;
    this.container = setup.container;
    this.#firstMessage = setup.history.length;
    this.#abortScope = setup.abortScope;
    this.#stall = setup.stall === false ? undefined : new StallDetector(setup.stall);
    this.#budget = setup.contextBudget
      ? contextBudget({
          ...setup.contextBudget,
          // The system prompt is not in the history, but it is in every request.
          systemTokens:
            setup.contextBudget.systemTokens ?? estimateTokens({ role: "user", content: setup.systemPrompt }),
          onTruncate: (info) => this.#publish({ type: "context_truncated", ...info }),
        })
      : undefined;
    this.#modelCallHost = {
      abortScope: this.#abortScope,
      retry: setup.retry,
      timeouts: setup.stepTimeouts,
      text: (text, index) =>
        setup.publish({
          type: "text_delta",
          runId: this.runId,
          seq: this.#seq++,
          ts: Date.now(),
          text,
          index,
        }),
      reasoning: (text) =>
        setup.publish({ type: "thinking", runId: this.runId, seq: this.#seq++, ts: Date.now(), text }),
      stepDone: (step) => {
        this.#assertOpen();
        this.#usage = addUsage(this.#usage, step.usage);
        this.#metrics.usage = this.#usage;
      },
      settled: (ms) => {
        this.#metrics.modelMs += ms;
      },
    };
    this.#batchHost = {
      runId: this.runId,
      tools: this.tools,
      history: setup.history,
      scope: this.#abortScope,
      graceMs: this.limits.abortGraceMs,
      timeouts: setup.toolTimeouts,
      hooks: setup.hooks,
      steering: setup.steering,
      stall: this.#stall,
      cutOffCalls: this.#cutOffCalls,
      sealed: () => this.#sealed,
      emitCall: (call) => {
        this.#setup.publish({
          type: "tool_call",
          runId: this.runId,
          seq: this.#seq++,
          ts: Date.now(),
          toolCallId: call.id,
          toolName: call.name,
          args: call.args,
        });
        this.#openCalls.push(call.id);
      },
      emitResult: (result) => this.#publishResult(result),
    };
    this.messages = new RunMessageLog(setup.history, () => {
      this.#assertOpen();
      this.#appendedByOrchestrator = true;
    });
  }

  /** Runs the orchestrator to its end; never rejects. */
  async execute(): Promise<RunResult> {
    this.#publish({ type: "agent_start" });
    let failure: AgentError | undefined;
    try {
      if (this.#setup.resume) await this.#resolveApprovals(this.#setup.resume);
      this.#setup.history.push(...this.#setup.input);
      await this.#runOrchestrator();
      if (this.signal.aborted) failure = abortError(this.signal.reason);
    } catch (error) {
      failure = this.#toAgentError(error);
    }
    return this.#finish(failure);
  }

  // ----- services of RunContext -----

  get cycles(): number {
    return this.#cycles;
  }

  /** After the run: the calls it stopped for, when it ended as `awaiting_approval`. */
  get awaitingApproval(): PendingApproval | undefined {
    return this.#sealed && this.#awaiting ? this.#awaiting : undefined;
  }

  emit(event: OrchestratorEvent): void {
    const service = RESERVED_EVENTS[event.type as keyof typeof RESERVED_EVENTS];
    if (service !== undefined) throw new ReservedEventError(event.type, service);
    if (this.#sealed) return;
    this.#publish({ ...event });
  }

  startTurn(): number {
    this.#assertOpen();
    if (this.#turnStartedAt !== undefined)
      this.endTurn(this.#lastAssistantFrom(this.#turnFirstMessage) ?? emptyAssistant("stop"));
    this.#turn++;
    this.#turnStartedAt = Date.now();
    this.#turnFirstMessage = this.#setup.history.length;
    this.#turnMetrics = this.#metrics.snapshot(this.#cycles);
    this.#publish({ type: "turn_start", turn: this.#turn });
    return this.#turn;
  }

  endTurn(message: AssistantMessage): void {
    if (this.#turnStartedAt === undefined || this.#sealed) return;
    const durationMs = Date.now() - this.#turnStartedAt;
    this.#turnStartedAt = undefined;
    const metrics = this.#metrics.since(this.#turnMetrics, durationMs, this.#cycles);
    this.#publish({ type: "turn_end", message, durationMs, metrics });
  }

  decide(options: DecideOptions = {}): Promise<Decision> {
    const spec: ModelCallSpec = {
      system: options.system,
      tools: this.#modelTools(options.tools),
      settings: options.settings,
      extraMessages: options.messages,
      streamsText: true,
    };
    try {
      return this.#callModel(spec, this.#decision);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Records the model's reply and says what it decided; runs as the stream ends. */
  readonly #decision = (step: ModelStepResult): Decision => {
    if (step.content.length === 0) throw new EmptyResponseError(step.finishReason);
    // A reply cut off by the length limit may carry truncated arguments: its calls are not run.
    if (step.finishReason === "length") for (const call of step.toolCalls) this.#cutOffCalls.add(call.id);
    const steer = step.toolCalls.length > 0;
    const message: AssistantMessage = {
      role: "assistant",
      content: step.content,
      model: step.modelId,
      stopReason: steer ? "toolUse" : assistantStopReason(step.finishReason),
      usage: step.usage,
      timestamp: Date.now(),
    };
    this.#setup.history.push(message);
    this.#callsMade += step.toolCalls.length;
    this.#setup.publish({
      type: "steering_mode",
      runId: this.runId,
      seq: this.#seq++,
      ts: message.timestamp as number,
      mode: steer ? "steer" : "respond",
      queueSize: step.toolCalls.length,
    });
    return steer
      ? { mode: "steer", message, toolCalls: step.toolCalls }
      : { mode: "respond", message, text: textOf(message) };
  };

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
          tools: [],
          settings: { ...options.settings, responseFormat },
          extraMessages: extra,
          streamsText: false,
        },
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
      const result = this.#runBatch(calls, options);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  applySteering(inputs: readonly MessageInput[]): void {
    this.#assertOpen();
    if (inputs.length === 0) return;
    const messages = inputs.map(toMessage);
    this.#setup.history.push(...messages);
    this.#publish({ type: "steering_applied", messages });
  }

  /**
   * One model call, for `decide` and `generateObject`: checks abort, `maxCycles` and steering
   * first, builds the prompt through the pipeline, streams reasoning as `thinking`, sums usage,
   * and hands the result to `finish` as the stream ends. Without hooks, a steering callback or a
   * history pipeline, everything before the call is synchronous: no async frame of its own.
   */
  #callModel<T>(spec: ModelCallSpec, finish: (step: ModelStepResult) => T): Promise<T> {
    this.#assertOpen();
    const { hooks, steering } = this.#setup;
    if (
      (this.#cycles > 0 && hooks.shouldStop) ||
      hooks.prepareStep ||
      steering.hasCallback ||
      this.#setup.transformContext ||
      this.#setup.convertToLlm ||
      this.#budget
    )
      return this.#callModelSlowly(spec, finish);
    this.#countCycle();
    const taken = steering.takeNow() as AgentMessage[];
    if (taken.length > 0) this.applySteering(taken);
    const system = spec.system ?? this.systemPrompt;
    const prompt = this.#prompts.buildFromHistory(system, this.#setup.history);
    return this.#stream(spec, this.#provider(), prompt, spec.tools, finish);
  }

  async #callModelSlowly<T>(spec: ModelCallSpec, finish: (step: ModelStepResult) => T): Promise<T> {
    const { hooks } = this.#setup;
    if (this.#cycles > 0 && hooks.shouldStop) {
      const stop = await hooks.shouldStop({
        runId: this.runId,
        step: this.#cycles,
        messages: this.#setup.history,
      });
      if (stop) throw new StopRequestedError();
    }
    this.#countCycle();
    const taken = this.#setup.steering.takeNow();
    const steering = Array.isArray(taken) ? taken : await taken;
    if (steering.length > 0) this.applySteering(steering);
    let model = this.#provider();
    let system = spec.system ?? this.systemPrompt;
    let tools = spec.tools;
    const messages = await this.#pipelineMessages();
    let prompt: LanguageModelV4Prompt;
    if (hooks.prepareStep) {
      const prepared = await hooks.prepareStep({
        runId: this.runId,
        step: this.#cycles,
        messages,
        tools: tools.map((tool) => tool.name),
        system,
        model,
      });
      system = prepared?.system ?? system;
      model = prepared?.model ?? model;
      if (prepared?.tools) tools = this.#modelTools(prepared.tools);
      prompt = this.#prompts.build(system, prepared?.messages ?? messages);
    } else prompt = this.#prompts.build(system, messages);
    return this.#stream(spec, model, prompt, tools, finish);
  }

  #countCycle(): void {
    this.#assertOpen();
    if (this.#cycles >= this.limits.maxCycles) throw new MaxCyclesExceededError(this.limits.maxCycles);
    this.#cycles++;
  }

  #provider(): LanguageModelV4 {
    const provider = this.#setup.provider;
    if (provider === undefined) throw new NoProviderError();
    return provider;
  }

  #stream<T>(
    spec: ModelCallSpec,
    model: LanguageModelV4,
    prompt: LanguageModelV4Prompt,
    tools: readonly LanguageModelV4FunctionTool[],
    finish: (step: ModelStepResult) => T,
  ): Promise<T> {
    if (spec.extraMessages && spec.extraMessages.length > 0)
      prompt = prompt.concat(toModelPrompt(undefined, spec.extraMessages));
    const { modelSettings } = this.#setup;
    const settings = spec.settings ? { ...modelSettings, ...spec.settings } : modelSettings;
    return streamModelStep(
      new ModelCall(this.#modelCallHost, model, prompt, tools, settings, spec.streamsText, finish),
    );
  }

  /** Runs a batch of tool calls; synchronously when every tool was. */
  #runBatch(
    calls: readonly ToolCall[],
    options: ExecuteToolsOptions & { approvals?: ReadonlyMap<string, ApprovalDecision> },
  ): ToolBatchResult | Promise<ToolBatchResult> {
    this.#assertOpen();
    const started = monotonicNow();
    const batch = new ToolBatch(this.#batchHost, calls, options);
    let running: void | Promise<void>;
    try {
      running = batch.run(Math.max(1, Math.floor(options.concurrency ?? this.#setup.concurrency)));
    } catch (error) {
      throw this.#batchFailed(error, calls, options, started);
    }
    if (running === undefined) return this.#batchDone(batch, started);
    return running.then(
      () => this.#batchDone(batch, started),
      (error: unknown) => {
        throw this.#batchFailed(error, calls, options, started);
      },
    );
  }

  #batchDone(batch: ToolBatch, started: number): ToolBatchResult {
    this.#metrics.toolMs += monotonicNow() - started;
    if (this.#sealed) throw new AbortedError("the run has already ended");
    if (batch.stopped?.reason === "stall") throw batch.stopped.error;
    if (batch.steering.length > 0) this.applySteering(batch.steering);
    return { results: batch.results as ToolResultMessage[], steering: batch.steering };
  }

  #batchFailed(
    error: unknown,
    calls: readonly ToolCall[],
    options: { approvals?: ReadonlyMap<string, ApprovalDecision> },
    started: number,
  ): unknown {
    this.#metrics.toolMs += monotonicNow() - started;
    if (error instanceof AwaitingApprovalError)
      this.#awaiting = {
        calls,
        needed: new Map(error.calls.map((call) => [call.id, call.reason])),
        decisions: new Map(options.approvals ?? []),
      };
    return error;
  }

  /**
   * Runs the calls a previous run left waiting for approval (approved ones run, the others are
   * denied) before anything else, so the history is whole again before the model is called.
   */
  async #resolveApprovals(pending: PendingApproval): Promise<void> {
    const decisions = new Map(pending.decisions);
    for (const id of pending.needed.keys())
      if (!decisions.has(id))
        decisions.set(id, { approved: false, reason: "not approved before the conversation went on" });
    await this.#runBatch(pending.calls, { approvals: decisions, interruptOnSteering: false });
    // Those were a previous run's calls: they do not answer any call of this run.
    this.#callsAnswered -= pending.calls.length;
  }

  // ----- lifecycle -----

  async #runOrchestrator(): Promise<void> {
    const running = this.#setup.orchestrator.run(this);
    // An orchestrator that ignores the abort is abandoned after the grace period, so abort is prompt.
    await new Promise<void>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const remove = this.#abortScope.onAbort(() => {
        timer = setTimeout(resolve, this.limits.abortGraceMs);
      });
      const settle = () => {
        remove();
        if (timer !== undefined) clearTimeout(timer);
      };
      Promise.resolve(running).then(
        () => {
          settle();
          resolve();
        },
        (error: unknown) => {
          settle();
          reject(error);
        },
      );
    });
  }

  #finish(failure: AgentError | undefined): RunResult {
    const stopReason: StopReason = failure?.stopReason ?? "completed";
    // Waiting for approval and a requested stop are endings, not failures: no `error` event.
    const reported =
      failure instanceof AwaitingApprovalError || failure instanceof StopRequestedError ? undefined : failure;
    const awaiting = failure instanceof AwaitingApprovalError ? failure : undefined;
    this.#answerOpenCalls(
      reported,
      new Set(awaiting && this.#awaiting ? this.#awaiting.calls.map((call) => call.id) : []),
    );
    if (this.#turnStartedAt !== undefined)
      this.endTurn(
        this.#lastAssistantFrom(this.#turnFirstMessage) ?? emptyAssistant(assistantStop(stopReason)),
      );
    this.#sealed = true;
    if (reported) this.#publish({ type: "error", code: reported.code, message: reported.message });
    const durationMs = Date.now() - this.#startedAt;
    const metrics = this.#metrics.since(MetricsRecorder.zero(), durationMs, this.#cycles);
    this.#publish({ type: "agent_end", stopReason, usage: this.#usage, durationMs, metrics });
    const newMessages = this.#setup.history.slice(this.#firstMessage);
    const last = this.#lastAssistantFrom(this.#firstMessage);
    const result: RunResult = {
      runId: this.runId,
      messages: [...this.#setup.history],
      newMessages,
      stopReason,
      usage: this.#usage,
      durationMs,
      text: last ? textOf(last) : "",
      metrics,
    };
    if (reported) result.error = reported;
    if (awaiting)
      result.pendingApprovals = awaiting.calls.map((call) => ({
        toolCallId: call.id,
        toolName: call.name,
        args: call.args,
        ...(call.reason ? { reason: call.reason } : {}),
      }));
    return result;
  }

  /**
   * The transcript guarantee: every tool call in the history gets exactly one result, whatever
   * happened. Calls left without one (an abandoned tool, an orchestrator that stopped between
   * appending a tool-call message and running it) get an `aborted` or `error` result, placed
   * right after the results of their batch, and their `tool_call`/`tool_result` events.
   */
  #answerOpenCalls(failure: AgentError | undefined, waiting: ReadonlySet<string>): void {
    // Every call the model made was answered, and nobody else added calls: nothing to scan.
    if (!this.#appendedByOrchestrator && this.#callsAnswered >= this.#callsMade && waiting.size === 0) return;
    const missing = findUnansweredToolCalls(this.#setup.history, this.#firstMessage).filter(
      ({ call }) => !waiting.has(call.id),
    );
    if (missing.length === 0) return;
    const status = failure?.stopReason === "aborted" ? "aborted" : "error";
    const reason = failure ? failure.message : "the orchestrator ended without running this call";
    const results = missing.map(({ call }) => toolResult(call, status, `not completed: ${reason}`));
    // Insert from the back so earlier positions stay right; publish in call order.
    for (let i = missing.length - 1; i >= 0; i--)
      this.#setup.history.splice((missing[i] as UnansweredCall).insertAt, 0, results[i] as ToolResultMessage);
    missing.forEach(({ call }, i) => {
      if (!this.#openCalls.includes(call.id))
        this.#publish({ type: "tool_call", toolCallId: call.id, toolName: call.name, args: call.args });
      this.#publishResult(results[i] as ToolResultMessage);
    });
  }

  #publishResult(result: ToolResultMessage): void {
    const open = this.#openCalls.lastIndexOf(result.toolCallId);
    if (open >= 0) {
      // Order does not matter: the last id takes the place of the one that is done.
      this.#openCalls[open] = this.#openCalls[this.#openCalls.length - 1] as string;
      this.#openCalls.pop();
    }
    this.#callsAnswered++;
    this.#metrics.count(result.status);
    const { toolCallId, toolName, status } = result;
    const runId = this.runId;
    const seq = this.#seq++;
    const ts = result.timestamp ?? Date.now();
    // Built whole: adding fields afterwards would give every event a second backing store.
    this.#setup.publish(
      result.isError
        ? { type: "tool_result", runId, seq, ts, toolCallId, toolName, status, error: result.content }
        : { type: "tool_result", runId, seq, ts, toolCallId, toolName, status, result: result.details },
    );
  }

  /** Adds the envelope in place: every caller passes a fresh object. */
  #publish(event: OrchestratorEvent): void {
    const enveloped = event as AgentEvent;
    enveloped.runId = this.runId;
    enveloped.seq = this.#seq++;
    enveloped.ts = Date.now();
    this.#setup.publish(enveloped);
  }

  #assertOpen(): void {
    if (this.#sealed) throw new AbortedError("the run has already ended");
    if (this.#abortScope.aborted) throw abortError(this.signal.reason);
  }

  /** The `transform → convertToLlm` pipeline, when the agent configures either step. */
  async #pipelineMessages(): Promise<LlmMessage[]> {
    const { transformContext, convertToLlm = defaultConvertToLlm } = this.#setup;
    let messages: readonly AgentMessage[] = transformContext
      ? await transformContext([...this.#setup.history], { signal: this.signal })
      : this.#setup.history;
    if (this.#budget) messages = await this.#budget(messages, { signal: this.signal });
    return convertToLlm(messages);
  }

  #modelTools(selection: DecideOptions["tools"]) {
    if (selection === false) return [];
    const all = this.tools.toModelTools();
    if (selection === undefined) return all;
    return all.filter((tool) => selection.includes(tool.name));
  }

  #lastAssistantFrom(start: number): AssistantMessage | undefined {
    const history = this.#setup.history;
    for (let i = history.length - 1; i >= start; i--) {
      const message = history[i];
      if (message?.role === "assistant") return message as AssistantMessage;
    }
    return undefined;
  }

  #toAgentError(error: unknown): AgentError {
    if (error instanceof AgentError) return error;
    if (this.signal.aborted) return abortError(this.signal.reason);
    return new OrchestratorError(this.#setup.orchestrator.name, error);
  }
}

/** Events only the framework emits, because their ordering rules are its guarantees. */
const RESERVED_EVENTS = {
  agent_start: "the framework (it starts every run)",
  agent_end: "the framework (it ends every run)",
  error: "the framework (throw an AgentError instead)",
  turn_start: "ctx.startTurn()",
  turn_end: "ctx.endTurn(message)",
  tool_call: "ctx.executeTools(calls)",
  tool_result: "ctx.executeTools(calls)",
  steering_applied: "ctx.applySteering(messages)",
} as const;

function emptyAssistant(stopReason: AssistantStopReason): AssistantMessage {
  return { role: "assistant", content: [], stopReason, timestamp: Date.now() };
}

function assistantStop(stopReason: StopReason): AssistantStopReason {
  return stopReason === "aborted" ? "aborted" : stopReason === "completed" ? "stop" : "error";
}

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
