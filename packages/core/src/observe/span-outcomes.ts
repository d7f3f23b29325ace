import { type Span, SpanStatusCode } from "@opentelemetry/api";
import { errorMessage, isAgentError } from "../errors.js";
import type { ToolResultStatus } from "../messages.js";
import type { ModelStepResult } from "../model/stream-step.js";
import * as names from "./trace-attributes.js";

/**
 * Runs what the trace does with a span and gives what it returns, or undefined when it throws. The
 * API's spans never throw, but an SDK's span processor may (its `onStart` and `onEnd` run inside
 * `startSpan()` and `end()`): the trace then misses that part, and the call keeps its own outcome.
 */
export function quietly<T>(traceWork: () => T): T | undefined {
  try {
    return traceWork();
  } catch {
    return undefined;
  }
}

export function recordModelResult(span: Span, result: ModelStepResult): void {
  const { usage } = result;
  span.setAttributes({
    [names.GEN_AI_RESPONSE_MODEL]: result.modelId,
    [names.GEN_AI_RESPONSE_FINISH_REASONS]: [result.finishReason],
    [names.GEN_AI_USAGE_INPUT_TOKENS]: usage.inputTokens,
    [names.GEN_AI_USAGE_OUTPUT_TOKENS]: usage.outputTokens,
  });
  if (usage.reasoningTokens !== undefined)
    span.setAttribute(names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, usage.reasoningTokens);
  if (usage.cachedInputTokens !== undefined)
    span.setAttribute(names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, usage.cachedInputTokens);
}

/**
 * Ends a tool call's span with its result's status and the text the model sees. `runTimedOut`: the
 * run was aborted by its own time limit (`timeouts.totalMs`).
 */
export function endToolSpan(
  span: Span,
  status: ToolResultStatus,
  message: string,
  runTimedOut: boolean,
): void {
  quietly(() => recordToolResult(span, status, message, runTimedOut));
  quietly(() => span.end());
}

function recordToolResult(span: Span, status: ToolResultStatus, message: string, runTimedOut: boolean): void {
  span.setAttribute(names.TOOL_STATUS, status);
  // A call the run's time limit cut short is `aborted`, as every call of an aborted run is; its
  // span says it was a timeout, as the span of a model call cut short by that limit does.
  const timedOut = status === "timeout" || (status === "aborted" && runTimedOut);
  if (timedOut) span.addEvent(names.TIMEOUT_EVENT);
  if (status === "error" || status === "timeout" || status === "aborted") {
    span.setAttribute(names.ERROR_TYPE, timedOut ? "timeout" : status);
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
}

export function recordFailure(span: Span, error: unknown): void {
  const code = failureCode(error);
  const message = errorMessage(error);
  if (isTimeout(code)) span.addEvent(names.TIMEOUT_EVENT);
  span.recordException(isError(error) ? error : { name: code, message });
  span.setAttribute(names.ERROR_TYPE, code);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** The error's code, or its class's name; never throws (a Proxy's traps or a `name` getter may). */
function failureCode(error: unknown): string {
  try {
    return isAgentError(error) ? error.code : error instanceof Error ? error.name : "error";
  } catch {
    return "error";
  }
}

/** `instanceof Error` that never throws (a Proxy's prototype trap may). */
function isError(value: unknown): value is Error {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

export function isTimeout(code: string): boolean {
  return code === "timeout" || code === "tool-timeout";
}

/** A failed attempt of a model call that is to be retried after `delayMs`. */
export function recordRetry(span: Span, failure: unknown, retry: number, delayMs: number): void {
  span.addEvent(names.RETRY_EVENT, {
    [names.RETRY_NUMBER]: retry,
    [names.RETRY_DELAY_MS]: delayMs,
    [names.ERROR_TYPE]: failureCode(failure),
    [names.MESSAGE]: errorMessage(failure),
  });
}
