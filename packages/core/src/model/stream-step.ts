import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";
import { AgentError, abortError, errorMessage, ProviderError, TimeoutError } from "../errors.js";
import type { AssistantMessage, ToolCall, Usage } from "../messages.js";
import { AbortScope, raceAbort, sleep } from "./abortable.js";
import { isRetryable, type RetryOptions, retryDelay } from "./retry.js";
import { type StepTimeouts, StepWatchdog } from "./step-watchdog.js";

/** Call settings passed through to the model (temperature, maxOutputTokens, providerOptions, …). */
export type ModelCallSettings = Omit<LanguageModelV4CallOptions, "prompt" | "tools" | "abortSignal">;

export interface ModelStepRequest {
  model: LanguageModelV4;
  prompt: LanguageModelV4Prompt;
  tools: readonly LanguageModelV4FunctionTool[];
  settings?: ModelCallSettings;
  /** Aborts the call; or pass the run's `abortScope` instead (cheaper per call). */
  signal?: AbortSignal;
  abortScope?: AbortScope;
  retry: RetryOptions;
  /** Time limits of this call; a call past one fails with a `TimeoutError`. */
  timeouts?: StepTimeouts;
  /** Called with each text chunk as the model streams it. */
  onText?(text: string): void;
  /** Called with each reasoning chunk as the model streams it. */
  onReasoning?(text: string): void;
}

export interface ModelStepResult {
  /** Text, reasoning and tool-call blocks, in the order the model produced them. */
  content: AssistantMessage["content"];
  toolCalls: ToolCall[];
  /** The v4 unified finish reason: stop, length, tool-calls, content-filter, error, other. */
  finishReason: string;
  usage: Usage;
  modelId: string;
}

/**
 * One model call, read straight from the v4 `doStream()` stream: no `streamText`, whose web-stream
 * plumbing costs about 1 ms per step on Node 20. Retryable failures before the first chunk reached
 * the caller are retried with backoff; later ones cannot be, since the chunks were already shown.
 */
export async function streamModelStep(request: ModelStepRequest): Promise<ModelStepResult> {
  const scope = request.abortScope ?? new AbortScope(request.signal);
  // One async frame per call: the retry loop and the read loop live in the same function.
  for (let retries = 0; ; retries++) {
    const step = new StepState(request.model.modelId);
    try {
      return await readStep(request, scope, step);
    } catch (error) {
      if (scope.signal.aborted) throw abortError(scope.signal.reason);
      const retryable =
        isRetryable(error) || (error instanceof TimeoutError && request.retry.retryTimeouts === true);
      if (step.forwardedAnything || retries >= request.retry.maxRetries || !retryable)
        throw toProviderError(error, retries);
      await sleep(retryDelay(error, retries, request.retry), scope);
    }
  }
}

async function readStep(
  request: ModelStepRequest,
  scope: AbortScope,
  step: StepState,
): Promise<ModelStepResult> {
  const { model, prompt, tools, settings } = request;
  const signal = scope.signal;
  const options: LanguageModelV4CallOptions =
    settings === undefined ? { prompt, abortSignal: signal } : { ...settings, prompt, abortSignal: signal };
  if (tools.length > 0) options.tools = tools as LanguageModelV4FunctionTool[];
  let reader: ReadableStreamDefaultReader<LanguageModelV4StreamPart> | undefined;
  let rejectStart: ((error: TimeoutError) => void) | undefined;
  const watchdog = StepWatchdog.needed(request.timeouts)
    ? new StepWatchdog(request.timeouts, (error) => {
        rejectStart?.(error);
        reader?.cancel(error).catch(() => {});
      })
    : undefined;
  const pending = Promise.resolve(model.doStream(options));
  try {
    let started = raceAbort(pending, scope);
    if (watchdog)
      started = Promise.race([started, new Promise<never>((_resolve, reject) => (rejectStart = reject))]);
    reader = (await started).stream.getReader();
    const activeReader = reader;
    // A model that ignores its abortSignal must not hold the run: cancelling the reader ends the read.
    const removeHook = scope.onAbort(() => {
      activeReader.cancel(signal.reason).catch(() => {});
    });
    try {
      for (;;) {
        const { done, value } = await activeReader.read();
        if (signal.aborted) throw abortError(signal.reason);
        if (watchdog?.expired) throw watchdog.expired;
        if (done) return step.result();
        // Only content counts as a chunk: providers send stream-start before the model has said anything.
        if (
          watchdog &&
          value.type !== "stream-start" &&
          value.type !== "response-metadata" &&
          value.type !== "raw"
        )
          watchdog.chunk();
        step.handle(value, request);
      }
    } finally {
      removeHook();
    }
  } finally {
    watchdog?.stop();
    // Given up before the stream arrived (abort, timeout): cancel it when it does, not to leak it.
    if (reader === undefined)
      pending.then(
        (late) => late.stream.cancel().catch(() => {}),
        () => {},
      );
  }
}

/** What one model call has produced so far. */
class StepState {
  forwardedAnything = false;
  readonly #content: AssistantMessage["content"] = [];
  readonly #toolCalls: ToolCall[] = [];
  #openText: { type: "text"; text: string } | undefined;
  #openReasoning: { type: "thinking"; text: string } | undefined;
  #finishReason = "other";
  #usage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  #modelId: string;

  constructor(modelId: string) {
    this.#modelId = modelId;
  }

  result(): ModelStepResult {
    return {
      content: this.#content,
      toolCalls: this.#toolCalls,
      finishReason: this.#finishReason,
      usage: this.#usage,
      modelId: this.#modelId,
    };
  }

  handle(part: LanguageModelV4StreamPart, request: ModelStepRequest): void {
    switch (part.type) {
      case "text-delta":
        if (part.delta === "") return;
        this.#openReasoning = undefined;
        if (this.#openText === undefined) {
          this.#openText = { type: "text", text: "" };
          this.#content.push(this.#openText);
        }
        this.#openText.text += part.delta;
        this.forwardedAnything = true;
        request.onText?.(part.delta);
        return;
      case "reasoning-delta":
        if (part.delta === "") return;
        this.#openText = undefined;
        if (this.#openReasoning === undefined) {
          this.#openReasoning = { type: "thinking", text: "" };
          this.#content.push(this.#openReasoning);
        }
        this.#openReasoning.text += part.delta;
        this.forwardedAnything = true;
        request.onReasoning?.(part.delta);
        return;
      case "tool-call": {
        if (part.providerExecuted) return;
        this.#openText = undefined;
        this.#openReasoning = undefined;
        const call: ToolCall = { id: part.toolCallId, name: part.toolName, args: parseArgs(part.input) };
        this.#toolCalls.push(call);
        this.#content.push({ type: "toolCall", id: call.id, name: call.name, args: call.args });
        return;
      }
      case "response-metadata":
        if (part.modelId) this.#modelId = part.modelId;
        return;
      case "finish":
        this.#finishReason = part.finishReason.unified;
        this.#usage = toUsage(part.usage);
        return;
      case "error":
        throw part.error;
      default:
        return;
    }
  }
}

/** Tool arguments arrive as JSON text; text that is not JSON is kept as it is for the executor to reject. */
function parseArgs(input: string): unknown {
  if (input.trim() === "") return {};
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}

function toUsage(usage: LanguageModelV4Usage): Usage {
  const inputTokens = usage.inputTokens.total ?? 0;
  const outputTokens = usage.outputTokens.total ?? 0;
  const result: Usage = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
  if (usage.outputTokens.reasoning !== undefined) result.reasoningTokens = usage.outputTokens.reasoning;
  if (usage.inputTokens.cacheRead !== undefined) result.cachedInputTokens = usage.inputTokens.cacheRead;
  return result;
}

function toProviderError(error: unknown, retries: number): AgentError {
  if (error instanceof AgentError) return error;
  const after = retries > 0 ? ` (after ${retries} ${retries === 1 ? "retry" : "retries"})` : "";
  return new ProviderError(`The model call failed${after}: ${errorMessage(error)}`, {
    cause: error,
    retryable: isRetryable(error),
  });
}
