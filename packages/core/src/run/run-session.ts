import type { JSONSchema7, LanguageModelV4, LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import { zodSchema } from "@ai-sdk/provider-utils";
import type { DependencyContainer } from "tsyringe";
import type { z } from "zod";
import {
  AbortedError,
  AgentError,
  abortError,
  MaxCyclesExceededError,
  NoProviderError,
  OrchestratorError,
  ReservedEventError,
  StructuredOutputError,
} from "../errors.js";
import type { AgentEvent, OrchestratorEvent, StopReason } from "../events/schemas.js";
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
import { executeToolCall, NOT_RUN_ABORTED, SKIPPED_BY_STEERING, toolResult } from "../tools/execute-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { MessageInbox } from "./message-queue.js";
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
  /** Receives every event, already enveloped. */
  publish(event: AgentEvent): void;
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
  /** Set when the run did not complete: the same error the `error` event reported. */
  error?: AgentError;
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
  /** Tool calls whose `tool_call` event went out and whose `tool_result` has not yet. */
  readonly #openCalls = new Map<string, ToolCall>();

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
    const history = setup.history;
    const session = this;
    this.messages = {
      get all() {
        return history;
      },
      get length() {
        return history.length;
      },
      append(...messages) {
        session.#assertOpen();
        history.push(...messages);
      },
    };
  }

  /** Runs the orchestrator to its end; never rejects. */
  async execute(): Promise<RunResult> {
    this.#publish({ type: "agent_start" });
    this.#setup.history.push(...this.#setup.input);
    let failure: AgentError | undefined;
    try {
      await this.#runOrchestrator();
      if (this.signal.aborted) failure = abortError(this.signal.reason);
    } catch (error) {
      failure = this.#toAgentError(error);
    }
    return this.#finish(failure);
  }

  // ----- services of RunContext -----

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
    this.#publish({ type: "turn_start", turn: this.#turn });
    return this.#turn;
  }

  endTurn(message: AssistantMessage): void {
    if (this.#turnStartedAt === undefined || this.#sealed) return;
    const durationMs = Date.now() - this.#turnStartedAt;
    this.#turnStartedAt = undefined;
    this.#publish({ type: "turn_end", message, durationMs });
  }

  async decide(options: DecideOptions = {}): Promise<Decision> {
    let index = 0;
    const step = await this.#callModel({
      system: options.system,
      tools: this.#modelTools(options.tools),
      settings: options.settings,
      onText: (text) => this.#publish({ type: "text_delta", text, index: index++ }),
    });
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
    this.#publish({
      type: "steering_mode",
      mode: steer ? "steer" : "respond",
      queueSize: step.toolCalls.length,
    });
    return steer
      ? { mode: "steer", message, toolCalls: step.toolCalls }
      : { mode: "respond", message, text: textOf(message) };
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
      const step = await this.#callModel({
        system: options.system,
        tools: [],
        settings: { ...options.settings, responseFormat },
        extraMessages: extra,
      });
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

  async executeTools(
    calls: readonly ToolCall[],
    options: ExecuteToolsOptions = {},
  ): Promise<ToolBatchResult> {
    this.#assertOpen();
    const batch = new ToolBatch(calls, options);
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
    if (concurrency === 1) {
      for (let index = 0; index < calls.length && !this.#sealed; index++) {
        const running = this.#runCall(batch, index);
        if (running instanceof Promise) await running;
      }
    } else {
      const worker = async () => {
        while (batch.next < calls.length && !this.#sealed) await this.#runCall(batch, batch.next++);
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, calls.length) }, worker));
    }
    if (this.#sealed) throw new AbortedError("the run has already ended");
    if (batch.steering.length > 0) this.applySteering(batch.steering);
    return { results: batch.results as ToolResultMessage[], steering: batch.steering };
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
   * first, builds the prompt through the pipeline, streams reasoning as `thinking`, sums usage.
   */
  async #callModel(request: {
    system: string | undefined;
    tools: readonly LanguageModelV4FunctionTool[];
    settings: ModelCallSettings | undefined;
    extraMessages?: readonly LlmMessage[];
    onText?: (text: string) => void;
  }): Promise<ModelStepResult> {
    this.#assertOpen();
    if (this.#cycles >= this.limits.maxCycles) throw new MaxCyclesExceededError(this.limits.maxCycles);
    this.#cycles++;
    // Awaiting only a real promise keeps the no-callback path free of a microtask hop.
    const taken = this.#setup.steering.takeNow();
    const steering = Array.isArray(taken) ? taken : await taken;
    if (steering.length > 0) this.applySteering(steering);
    const provider = this.#setup.provider;
    if (provider === undefined) throw new NoProviderError();

    const system = request.system ?? this.systemPrompt;
    let prompt =
      this.#setup.transformContext || this.#setup.convertToLlm
        ? this.#prompts.build(system, await this.#pipelineMessages())
        : this.#prompts.buildFromHistory(system, this.#setup.history);
    if (request.extraMessages && request.extraMessages.length > 0)
      prompt = prompt.concat(toModelPrompt(undefined, request.extraMessages));
    const step = await streamModelStep({
      model: provider,
      prompt,
      tools: request.tools,
      settings: request.settings
        ? { ...this.#setup.modelSettings, ...request.settings }
        : this.#setup.modelSettings,
      abortScope: this.#abortScope,
      retry: this.#setup.retry,
      onText: request.onText,
      onReasoning: (text) => this.#publish({ type: "thinking", text }),
    });
    this.#assertOpen();
    this.#usage = addUsage(this.#usage, step.usage);
    return step;
  }

  /**
   * Runs call `index` of a batch: `tool_call`, then the tool (or an aborted/skipped result), then
   * `tool_result`; results enter the history in call order as soon as all earlier ones have.
   * Returns synchronously when nothing had to be awaited.
   */
  #runCall(batch: ToolBatch, index: number): void | Promise<void> {
    const call = batch.calls[index] as ToolCall;
    batch.options.beforeEach?.(call);
    this.#publish({ type: "tool_call", toolCallId: call.id, toolName: call.name, args: call.args });
    this.#openCalls.set(call.id, call);
    let running: ToolResultMessage | Promise<ToolResultMessage>;
    if (this.signal.aborted) running = toolResult(call, "aborted", NOT_RUN_ABORTED);
    else if (batch.steering.length > 0) running = toolResult(call, "skipped", SKIPPED_BY_STEERING);
    else running = executeToolCall(this.tools, call, this.#abortScope, this.limits.abortGraceMs);
    return running instanceof Promise
      ? running.then((result) => this.#endCall(batch, index, result))
      : this.#endCall(batch, index, running);
  }

  #endCall(batch: ToolBatch, index: number, result: ToolResultMessage): void | Promise<void> {
    if (this.#sealed) return;
    batch.results[index] = result;
    while (batch.flushed < batch.calls.length && batch.results[batch.flushed] !== undefined)
      this.#setup.history.push(batch.results[batch.flushed++] as ToolResultMessage);
    this.#publishResult(result);
    batch.options.afterEach?.(batch.calls[index] as ToolCall, result);
    if ((batch.options.interruptOnSteering ?? true) && batch.steering.length === 0 && !this.signal.aborted) {
      const taken = this.#setup.steering.takeNow();
      if (!Array.isArray(taken))
        return taken.then((steering) => {
          if (batch.steering.length === 0) batch.steering = steering;
        });
      batch.steering = taken;
    }
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
    this.#answerOpenCalls(failure);
    if (this.#turnStartedAt !== undefined)
      this.endTurn(
        this.#lastAssistantFrom(this.#turnFirstMessage) ?? emptyAssistant(assistantStop(stopReason)),
      );
    this.#sealed = true;
    if (failure) this.#publish({ type: "error", code: failure.code, message: failure.message });
    const durationMs = Date.now() - this.#startedAt;
    this.#publish({ type: "agent_end", stopReason, usage: this.#usage, durationMs });
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
    };
    if (failure) result.error = failure;
    return result;
  }

  /**
   * The transcript guarantee: every tool call in the history gets exactly one result, whatever
   * happened. Calls left without one (an abandoned tool, an orchestrator that stopped between
   * appending a tool-call message and running it) get an `aborted` or `error` result, placed
   * right after the results of their batch, and their `tool_call`/`tool_result` events.
   */
  #answerOpenCalls(failure: AgentError | undefined): void {
    const missing = findUnansweredToolCalls(this.#setup.history, this.#firstMessage);
    if (missing.length === 0) return;
    const status = failure?.stopReason === "aborted" ? "aborted" : "error";
    const reason = failure ? failure.message : "the orchestrator ended without running this call";
    const results = missing.map(({ call }) => toolResult(call, status, `not completed: ${reason}`));
    // Insert from the back so earlier positions stay right; publish in call order.
    for (let i = missing.length - 1; i >= 0; i--)
      this.#setup.history.splice((missing[i] as UnansweredCall).insertAt, 0, results[i] as ToolResultMessage);
    missing.forEach(({ call }, i) => {
      if (!this.#openCalls.has(call.id))
        this.#publish({ type: "tool_call", toolCallId: call.id, toolName: call.name, args: call.args });
      this.#publishResult(results[i] as ToolResultMessage);
    });
  }

  #publishResult(result: ToolResultMessage): void {
    this.#openCalls.delete(result.toolCallId);
    const event: OrchestratorEvent = {
      type: "tool_result",
      toolCallId: result.toolCallId,
      toolName: result.toolName,
      status: result.status,
    };
    if (result.isError) event.error = result.content;
    else event.result = result.details;
    this.#publish(event);
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
    if (this.signal.aborted) throw abortError(this.signal.reason);
  }

  /** The `transform → convertToLlm` pipeline, when the agent configures either step. */
  async #pipelineMessages() {
    const { transformContext, convertToLlm = defaultConvertToLlm } = this.#setup;
    const messages = transformContext
      ? await transformContext([...this.#setup.history], { signal: this.signal })
      : this.#setup.history;
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

/** The state of one `executeTools` call. */
class ToolBatch {
  readonly results: (ToolResultMessage | undefined)[];
  /** Results already appended to the history (a prefix, in call order). */
  flushed = 0;
  /** The next call a worker takes (concurrent batches). */
  next = 0;
  steering: AgentMessage[] = [];

  constructor(
    readonly calls: readonly ToolCall[],
    readonly options: ExecuteToolsOptions,
  ) {
    this.results = new Array(calls.length);
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
