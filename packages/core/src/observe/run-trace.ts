import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { abortError, isAgentError } from "../errors.js";
import type { AgentEvent } from "../events/schemas.js";
import type { ToolCall, ToolResultMessage } from "../messages.js";
import type { ModelStepRequest, ModelStepResult } from "../model/stream-step.js";
import type { ModelStep, ToolRunner, ToolRunRequest } from "../run/services.js";
import type { RunObserver } from "./run-observer.js";
import {
  endToolSpan,
  isTimeout,
  quietly,
  recordFailure,
  recordModelResult,
  recordRetry,
} from "./span-outcomes.js";
import * as names from "./trace-attributes.js";
import type { TracedRun } from "./tracing.js";

/**
 * The spans of one traced run: the run span (`invoke_agent`), a span per turn, and under the turn
 * open at the time a span per model call (`chat {model}`) and per tool call (`execute_tool {tool}`).
 * Turns and the run's end come from the run's events; model and tool calls from decorators of the
 * run's model step and tool runner, which also make their span the active context while the call
 * runs, so what a provider or a tool traces itself nests under it. Steering, follow-ups, nudges,
 * truncation, timeouts and the abort are span events; failures set the span's status to error.
 */
export class RunTrace implements RunObserver {
  readonly #tracer: Tracer;
  readonly #runId: string;
  readonly #runSpan: Span;
  readonly #runContext: Context;
  readonly #signal: AbortSignal;
  /**
   * The spans of tool calls that ran, by call id, until the run publishes the call's result: the
   * span ends with that result (after `afterToolCall` and the stall detector, what the model sees),
   * not with what the tool gave.
   */
  readonly #toolSpans = new Map<string, ToolSpan>();
  #turnSpan: Span | undefined;
  #turnContext: Context | undefined;

  /** Starts the run span; undefined when it does not record (then nothing else is made). */
  static start(tracer: Tracer, run: TracedRun): RunTrace | undefined {
    const parent = context.active();
    // No attributes before we know the span records: with no provider this is the run's only cost.
    const span = tracer.startSpan(names.RUN_SPAN, { kind: SpanKind.INTERNAL }, parent);
    try {
      if (!span.isRecording()) return undefined;
      return new RunTrace(tracer, run, span, parent);
    } catch (error) {
      // The run goes on untraced (the caller's catch): the span it started must not stay open.
      quietly(() => span.end());
      throw error;
    }
  }

  private constructor(tracer: Tracer, run: TracedRun, span: Span, parent: Context) {
    this.#tracer = tracer;
    this.#runId = run.runId;
    this.#runSpan = span;
    this.#runContext = trace.setSpan(parent, span);
    this.#signal = run.signal;
    span.setAttributes({
      [names.GEN_AI_OPERATION_NAME]: names.OPERATION_INVOKE_AGENT,
      [names.RUN_ID]: run.runId,
      [names.ORCHESTRATOR]: run.orchestrator,
    });
    // A run aborted while it waited behind another starts aborted.
    if (run.signal.aborted) this.#aborted();
    else run.signal.addEventListener("abort", this.#aborted);
  }

  publish(event: AgentEvent): void {
    switch (event.type) {
      case "turn_start":
        this.#startTurn(event.turn);
        break;
      case "turn_end":
        this.#endTurn();
        break;
      case "steering_applied":
        this.#addEvent(names.STEERING_EVENT, { [names.MESSAGE_COUNT]: event.messages.length });
        break;
      case "context_truncated":
        this.#addEvent(names.TRUNCATION_EVENT, {
          [names.DROPPED_MESSAGES]: event.droppedMessages,
          [names.ESTIMATED_TOKENS]: event.estimatedTokens,
        });
        break;
      case "tool_result": {
        const open = this.#toolSpans.get(event.toolCallId);
        if (open !== undefined) this.#answered(open, event);
        break;
      }
      case "error":
        this.#failed(event.code, event.message, event.toolCallId);
        break;
      case "agent_end":
        this.#end(event);
        break;
    }
  }

  nudged(call: ToolCall, message: string): void {
    this.#addEvent(names.NUDGE_EVENT, {
      [names.GEN_AI_TOOL_NAME]: call.name,
      [names.GEN_AI_TOOL_CALL_ID]: call.id,
      [names.MESSAGE]: message,
    });
  }

  modelStep(inner: ModelStep): ModelStep {
    return { run: (request) => this.#traceModelCall(inner, request) };
  }

  toolRunner(inner: ToolRunner): ToolRunner {
    return { run: (request) => this.#traceToolCall(inner, request) };
  }

  #traceModelCall(inner: ModelStep, request: ModelStepRequest): Promise<ModelStepResult> {
    const { model, settings } = request;
    // The model may be the app's own (from prepareStep, say), its getters throwing: the trace
    // leaves out what it cannot read, and the call fails, or not, as it would untraced.
    const modelId = quietly(() => model.modelId);
    const attributes: Attributes = {
      [names.GEN_AI_OPERATION_NAME]: names.OPERATION_CHAT,
      [names.RUN_ID]: this.#runId,
    };
    if (typeof modelId === "string") attributes[names.GEN_AI_REQUEST_MODEL] = modelId;
    const provider = quietly(() => names.providerName(model.provider));
    if (provider !== undefined) attributes[names.GEN_AI_PROVIDER_NAME] = provider;
    if (settings?.temperature !== undefined)
      attributes[names.GEN_AI_REQUEST_TEMPERATURE] = settings.temperature;
    if (settings?.maxOutputTokens !== undefined)
      attributes[names.GEN_AI_REQUEST_MAX_TOKENS] = settings.maxOutputTokens;
    const parent = this.#parentContext();
    const span = quietly(() =>
      this.#tracer.startSpan(
        typeof modelId === "string" ? `${names.OPERATION_CHAT} ${modelId}` : names.OPERATION_CHAT,
        { kind: SpanKind.CLIENT, attributes },
        parent,
      ),
    );
    // A span that could not start: the call runs untraced, as it would with no observer.
    if (span === undefined) return inner.run(request);
    // Retries happen inside the call: each is an event of its span.
    const traced: ModelStepRequest = {
      ...request,
      onRetry: (failure, retry, delayMs) => {
        quietly(() => recordRetry(span, failure, retry, delayMs));
        request.onRetry?.(failure, retry, delayMs);
      },
    };
    let step: Promise<ModelStepResult>;
    try {
      step = context.with(trace.setSpan(parent, span), () => inner.run(traced));
    } catch (error) {
      step = Promise.reject(error);
    }
    return step.then(
      (result) => {
        quietly(() => recordModelResult(span, result));
        quietly(() => span.end());
        return result;
      },
      (error: unknown) => {
        quietly(() => recordFailure(span, error));
        quietly(() => span.end());
        throw error;
      },
    );
  }

  #traceToolCall(inner: ToolRunner, request: ToolRunRequest): ToolResultMessage | Promise<ToolResultMessage> {
    const { call, tool } = request;
    const parent = this.#parentContext();
    const span = quietly(() =>
      this.#tracer.startSpan(
        `${names.OPERATION_EXECUTE_TOOL} ${call.name}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            [names.GEN_AI_OPERATION_NAME]: names.OPERATION_EXECUTE_TOOL,
            [names.GEN_AI_TOOL_NAME]: call.name,
            [names.GEN_AI_TOOL_CALL_ID]: call.id,
            // A client tool runs on the user's side: an "extension" of the agent, not its own function.
            [names.GEN_AI_TOOL_TYPE]: tool?.execution === "client" ? "extension" : "function",
            [names.RUN_ID]: this.#runId,
          },
        },
        parent,
      ),
    );
    // A span that could not start: the call runs untraced, as it would with no observer.
    if (span === undefined) return inner.run(request);
    let result: ToolResultMessage | Promise<ToolResultMessage>;
    try {
      result = context.with(trace.setSpan(parent, span), () => inner.run(request));
    } catch (error) {
      quietly(() => recordFailure(span, error));
      quietly(() => span.end());
      throw error;
    }
    // A synchronous tool stays synchronous; its span waits for the call's result all the same.
    if (!(result instanceof Promise)) {
      this.#toolSpans.set(call.id, { span, produced: result });
      return result;
    }
    const open: ToolSpan = { span, produced: undefined };
    this.#toolSpans.set(call.id, open);
    return result.then(
      (message) => {
        // Kept for the result (or the run's end); if the run abandoned the call, nothing to do.
        open.produced = message;
        return message;
      },
      (error: unknown) => {
        // Not when the run abandoned the call (its span has ended): the tool failed too late.
        if (this.#toolSpans.get(call.id) === open) {
          this.#toolSpans.delete(call.id);
          quietly(() => recordFailure(span, error));
          quietly(() => span.end());
        }
        throw error;
      },
    );
  }

  /**
   * The run published a call's result: its span ends with it. When the tool still runs, the run
   * gave up waiting for a tool that ignored the abort and answered the call itself: the span ends
   * now all the same, inside the run's (whatever the tool does later is not the run's).
   */
  #answered(open: ToolSpan, event: AgentEvent & { type: "tool_result" }): void {
    this.#toolSpans.delete(event.toolCallId);
    if (open.produced === undefined) quietly(() => open.span.addEvent(names.ABANDONED_EVENT));
    endToolSpan(open.span, event.status, event.error ?? "", this.#timedOut());
  }

  /** Whether the run was aborted by its own time limit (`timeouts.totalMs`). */
  #timedOut(): boolean {
    const signal = this.#signal;
    return signal.aborted && isAgentError(signal.reason) && isTimeout(signal.reason.code);
  }

  #startTurn(turn: number): void {
    this.#endTurn();
    const span = this.#tracer.startSpan(
      names.TURN_SPAN,
      { kind: SpanKind.INTERNAL, attributes: { [names.RUN_ID]: this.#runId, [names.TURN_NUMBER]: turn } },
      this.#runContext,
    );
    // Held before anything else is asked of it, so that the turn's end ends it whatever throws here.
    this.#turnSpan = span;
    this.#turnContext = trace.setSpan(this.#runContext, span);
    // A run has one turn, plus one per follow-up round (the event protocol's rule).
    if (turn > 1) span.addEvent(names.FOLLOW_UP_EVENT);
  }

  #endTurn(): void {
    const span = this.#turnSpan;
    this.#turnSpan = undefined;
    this.#turnContext = undefined;
    quietly(() => span?.end());
  }

  /** Model and tool calls belong to the turn open at the time, or to the run outside turns. */
  #parentContext(): Context {
    return this.#turnContext ?? this.#runContext;
  }

  #addEvent(name: string, attributes?: Attributes): void {
    (this.#turnSpan ?? this.#runSpan).addEvent(name, attributes);
  }

  /** An `error` event: about one tool call (the run goes on), or why the run failed. */
  #failed(code: string, message: string, toolCallId: string | undefined): void {
    const attributes: Attributes = { [names.ERROR_TYPE]: code, [names.MESSAGE]: message };
    if (toolCallId !== undefined) {
      // One call's problem, which the model reads: an event of the turn, never the run's failure.
      attributes[names.GEN_AI_TOOL_CALL_ID] = toolCallId;
      this.#addEvent(isTimeout(code) ? names.TIMEOUT_EVENT : "exception", attributes);
      return;
    }
    // Each on its own: a span method that throws loses only what it records.
    const span = this.#runSpan;
    if (isTimeout(code)) quietly(() => span.addEvent(names.TIMEOUT_EVENT, attributes));
    quietly(() => span.recordException({ name: code, message }));
    quietly(() => span.setAttribute(names.ERROR_TYPE, code));
    quietly(() => span.setStatus({ code: SpanStatusCode.ERROR, message }));
  }

  #end(event: AgentEvent & { type: "agent_end" }): void {
    // A call whose result the run did not take (it ended first) ends with what its tool gave, or,
    // its tool still running, as abandoned.
    for (const { span, produced } of this.#toolSpans.values()) {
      if (produced === undefined) quietly(() => span.addEvent(names.ABANDONED_EVENT));
      endToolSpan(span, produced?.status ?? "aborted", produced?.content ?? "", this.#timedOut());
    }
    this.#toolSpans.clear();
    this.#endTurn();
    this.#signal.removeEventListener("abort", this.#aborted);
    const span = this.#runSpan;
    quietly(() =>
      span.setAttributes({
        [names.STOP_REASON]: event.stopReason,
        [names.CYCLES]: event.metrics?.cycles,
        [names.GEN_AI_USAGE_INPUT_TOKENS]: event.usage.inputTokens,
        [names.GEN_AI_USAGE_OUTPUT_TOKENS]: event.usage.outputTokens,
      }),
    );
    quietly(() => span.end());
  }

  /**
   * When the abort happens (the run ends up to `abortGraceMs` later, with status error). An abort
   * listener must not throw: Node rethrows it as an uncaught exception, which ends the process.
   */
  readonly #aborted = (): void => {
    quietly(() => {
      // The error the run will end with, said alike here: a timeout's own, AbortedError otherwise.
      const ending = abortError(this.#signal.reason);
      this.#runSpan.addEvent(names.ABORT_EVENT, {
        [names.ABORT_REASON]: ending.message,
        [names.ERROR_TYPE]: ending.code,
      });
    });
  };
}

/** A tool call's span, and what its tool gave once it has (undefined while it runs). */
interface ToolSpan {
  readonly span: Span;
  produced: ToolResultMessage | undefined;
}
