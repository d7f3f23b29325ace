import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
} from "@ai-sdk/provider";
import { AgentError, abortError, errorMessage, ProviderError, TimeoutError } from "../errors.js";
import type { AssistantMessage, ToolCall, Usage } from "../messages.js";
import { AbortHook, AbortScope, sleep } from "./abortable.js";
import {
  asWebStream,
  cancelLate,
  cancelReader,
  ignore,
  isReadable,
  nextTurnOfEventLoop,
  PARTS_BETWEEN_TURNS,
} from "./provider-stream.js";
import { isRetryable, type RetryOptions, retryDelay } from "./retry.js";
import { type StepTimeouts, StepWatchdog } from "./step-watchdog.js";
import {
  failedReply,
  malformedPart,
  parseArgs,
  partAfterFinish,
  toUsage,
  unifiedFinishReason,
} from "./stream-parts.js";

/** Call settings passed through to the model (temperature, maxOutputTokens, providerOptions, …). */
export type ModelCallSettings = Omit<LanguageModelV4CallOptions, "prompt" | "tools" | "abortSignal">;

export interface ModelStepRequest<T = ModelStepResult> {
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
  /**
   * Turns the result into what the step resolves with, as soon as the stream ends (a caller that
   * awaits the result then needs no async frame of its own). What it throws rejects the step.
   */
  finish?(result: ModelStepResult): T;
  /** Called once the call settles, whichever way (to account the time it took). */
  onSettled?(): void;
  /**
   * Called as a failed attempt is to be retried (`retry` counts from 1), before the wait of
   * `delayMs`: how a trace or a log sees retries, which no event reports.
   */
  onRetry?(failure: unknown, retry: number, delayMs: number): void;
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
export async function streamModelStep<T = ModelStepResult>(request: ModelStepRequest<T>): Promise<T> {
  const scope = request.abortScope ?? new AbortScope(request.signal);
  try {
    for (let retries = 0; ; retries++) {
      // One async frame per call: the attempt is opened and read here, not in a nested function.
      // The step is the attempt's abort hook: while doStream() is pending an abort rejects the
      // wait (a provider may ignore its signal); while reading it cancels the reader (a stream may
      // ignore it too), which ends the pending read. A call with a time limit gets a scope of its
      // own, so a timeout also aborts the provider's request (the run's signal would leave it
      // open); a call without one costs no scope.
      const timeouts = request.timeouts;
      const timed = StepWatchdog.needed(timeouts);
      const callScope = timed ? scope.child() : scope;
      const step = new StepState(request, callScope);
      const watchdog = timed ? new StepWatchdog(timeouts, (error) => callScope.abort(error)) : undefined;
      let result: ModelStepResult | undefined;
      let failure: unknown;
      try {
        const reader = step.read(await step.open());
        for (let parts = 1; ; parts++) {
          // A stream whose parts are always ready (no I/O between them) would otherwise keep the
          // event loop on its microtasks: no timer, so no time limit and no abort(), could end it.
          if (parts % PARTS_BETWEEN_TURNS === 0) await nextTurnOfEventLoop();
          const { done, value } = await reader.read();
          if (scope.aborted) throw abortError(scope.signal.reason);
          if (watchdog?.expired) throw watchdog.expired;
          if (done) break;
          // Only content counts as a chunk: providers send stream-start before the model has said anything.
          if (
            watchdog &&
            value.type !== "stream-start" &&
            value.type !== "response-metadata" &&
            value.type !== "raw"
          )
            watchdog.chunk();
          step.handle(value);
        }
        result = step.result();
      } catch (error) {
        // Ended early (an error part, a throwing callback): cancelling the stream ends the request.
        step.cancel(error);
        if (scope.aborted) throw abortError(scope.signal.reason);
        const retryable =
          isRetryable(error) || (error instanceof TimeoutError && request.retry.retryTimeouts === true);
        if (step.forwardedAnything || retries >= request.retry.maxRetries || !retryable)
          throw toProviderError(error, retries);
        failure = error;
      } finally {
        callScope.remove(step);
        if (watchdog !== undefined) {
          watchdog.stop();
          callScope.dispose();
        }
        step.closeLate();
      }
      if (result !== undefined) return request.finish ? request.finish(result) : (result as T);
      const delayMs = retryDelay(failure, retries, request.retry);
      try {
        request.onRetry?.(failure, retries + 1, delayMs);
      } catch {
        // An observer's trouble (a trace, a log line) is no reason to fail the call.
      }
      await sleep(delayMs, scope);
    }
  } finally {
    request.onSettled?.();
  }
}

type StreamResult = Awaited<ReturnType<LanguageModelV4["doStream"]>>;

/**
 * What one model call has produced so far, and its result once the stream ends (no copy: the
 * caller keeps the parts it needs). Also the call's abort hook (see `streamModelStep`).
 */
class StepState extends AbortHook implements ModelStepResult {
  forwardedAnything = false;
  // Empty until the first block: V8 gives an empty array's first push room for 17 elements, and
  // most replies have one or two blocks, so the first block makes an array of its own size.
  content: AssistantMessage["content"] = [];
  toolCalls: ToolCall[] = [];
  finishReason = "other";
  /** From the `finish` part; a stream that ends without one reports zeros (see `result`). */
  usage!: Usage;
  /** The model's own id until a `response-metadata` part names the one that answered. */
  modelId!: string;
  readonly #request: ModelStepRequest<unknown>;
  readonly #scope: AbortScope;
  /** Set by the `finish` part: no later part may change the result (see `partAfterFinish`). */
  #finished = false;
  #openText: { type: "text"; text: string } | undefined;
  #openReasoning: { type: "thinking"; text: string } | undefined;
  #pending: PromiseLike<StreamResult> | undefined;
  #rejectOpen: ((reason: unknown) => void) | undefined;
  #reader: ReadableStreamDefaultReader<LanguageModelV4StreamPart> | undefined;

  constructor(request: ModelStepRequest<unknown>, scope: AbortScope) {
    super();
    this.#request = request;
    this.#scope = scope;
  }

  /** Calls `doStream()`; settles as it does, or rejects on abort or a timeout before the stream. */
  open(): Promise<StreamResult> {
    const { model, prompt, tools, settings } = this.#request;
    // Read here, in the call's try: a getter that throws (new Agent() read it once, but a model
    // from prepareStep or one whose getter fails later) fails the call as the provider's error.
    this.modelId = model.modelId;
    const signal = this.#scope.signal;
    // Built whole: a property added later would give each call's options a second backing store,
    // and a recording provider keeps every one of them.
    const offered = tools.length > 0 ? (tools as LanguageModelV4FunctionTool[]) : undefined;
    const options: LanguageModelV4CallOptions =
      settings !== undefined
        ? { ...settings, prompt, abortSignal: signal, ...(offered && { tools: offered }) }
        : offered !== undefined
          ? { prompt, abortSignal: signal, tools: offered }
          : { prompt, abortSignal: signal };
    const pending = model.doStream(options);
    if (typeof (pending as Partial<PromiseLike<unknown>> | null)?.then !== "function")
      throw new ProviderError(
        `The model's doStream() returned a non-promise value of type ${typeName(pending)}.`,
      );
    const opened = new Promise<StreamResult>(captureSettlers);
    const resolve = capturedResolve as (value: StreamResult) => void;
    const reject = capturedReject;
    // Not kept past this call: they would keep the whole run reachable.
    capturedResolve = capturedReject = ignore;
    this.#rejectOpen = reject;
    this.#scope.add(this);
    pending.then(resolve, reject);
    // Kept only once its then() worked: one that throws fails the call, and `closeLate` must not
    // call it again from the call's cleanup, where its throw would escape as the run's own error.
    this.#pending = pending;
    return opened;
  }

  /** The stream is open: from now on an abort or a timeout cancels its reader. */
  read(opened: StreamResult): ReadableStreamDefaultReader<LanguageModelV4StreamPart> {
    if (!isReadable(opened?.stream))
      throw new ProviderError(
        typeof opened === "object" && opened !== null
          ? `The model's doStream() returned an object without a readable \`stream\` (keys: ${Object.keys(opened).join(", ") || "none"}).`
          : `The model's doStream() resolved to ${typeName(opened)}, not an object with a readable \`stream\`.`,
      );
    this.#rejectOpen = undefined;
    const reader = asWebStream(opened.stream).getReader();
    this.#reader = reader;
    // Aborted after doStream() settled but before this: the hook has fired already.
    if (this.#scope.aborted) cancelReader(reader, this.#scope.signal.reason);
    return reader;
  }

  fire(): void {
    this.#stop(abortError(this.#scope.signal.reason));
  }

  /** Ends the stream early (a no-op when it was never read). */
  cancel(reason: unknown): void {
    if (this.#reader !== undefined) cancelReader(this.#reader, reason);
  }

  /** Given up before the stream arrived (abort, timeout): cancel it when it does, not to leak it. */
  closeLate(): void {
    if (this.#reader === undefined && this.#pending !== undefined) this.#pending.then(cancelLate, ignore);
  }

  #stop(reason: unknown): void {
    if (this.#reader !== undefined) cancelReader(this.#reader, reason);
    else this.#rejectOpen?.(reason);
  }

  #addBlock(block: AssistantMessage["content"][number]): void {
    if (this.content.length === 0) this.content = [block];
    else this.content.push(block);
  }

  result(): ModelStepResult {
    this.usage ??= { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
    return this;
  }

  handle(part: LanguageModelV4StreamPart): void {
    const request = this.#request;
    if (typeof part !== "object" || part === null)
      throw new ProviderError(`The model streamed a part that is no object: ${typeName(part)}.`);
    switch (part.type) {
      case "text-delta":
        if (part.delta === "") return;
        if (this.#finished) throw partAfterFinish(part.type);
        if (typeof part.delta !== "string") throw malformedPart(part.type, "delta", part.delta);
        this.#openReasoning = undefined;
        if (this.#openText === undefined) {
          this.#openText = { type: "text", text: "" };
          this.#addBlock(this.#openText);
        }
        this.#openText.text += part.delta;
        this.forwardedAnything = true;
        request.onText?.(part.delta);
        return;
      case "reasoning-delta":
        if (part.delta === "") return;
        if (this.#finished) throw partAfterFinish(part.type);
        if (typeof part.delta !== "string") throw malformedPart(part.type, "delta", part.delta);
        this.#openText = undefined;
        if (this.#openReasoning === undefined) {
          this.#openReasoning = { type: "thinking", text: "" };
          this.#addBlock(this.#openReasoning);
        }
        this.#openReasoning.text += part.delta;
        this.forwardedAnything = true;
        request.onReasoning?.(part.delta);
        return;
      case "tool-call": {
        if (part.providerExecuted) return;
        if (this.#finished) throw partAfterFinish(part.type);
        // The id, name and input reach the history and the events, whose schemas want strings.
        if (typeof part.toolCallId !== "string")
          throw malformedPart(part.type, "toolCallId", part.toolCallId);
        if (typeof part.toolName !== "string") throw malformedPart(part.type, "toolName", part.toolName);
        if (typeof part.input !== "string") throw malformedPart(part.type, "input", part.input);
        this.#openText = undefined;
        this.#openReasoning = undefined;
        const call: ToolCall = { id: part.toolCallId, name: part.toolName, args: parseArgs(part.input) };
        if (this.toolCalls.length === 0) this.toolCalls = [call];
        else this.toolCalls.push(call);
        this.#addBlock({ type: "toolCall", id: call.id, name: call.name, args: call.args });
        return;
      }
      case "response-metadata":
        if (!part.modelId) return;
        if (this.#finished) throw partAfterFinish(part.type);
        if (typeof part.modelId !== "string") throw malformedPart(part.type, "modelId", part.modelId);
        this.modelId = part.modelId;
        return;
      case "finish":
        if (this.#finished) throw partAfterFinish(part.type);
        this.#finished = true;
        this.finishReason = unifiedFinishReason(part.finishReason);
        this.usage = toUsage(part.usage);
        // The provider says the reply failed: its text so far is no answer, its calls no decision.
        if (this.finishReason === "error") throw failedReply(part.finishReason.raw);
        return;
      case "error":
        throw part.error;
      default:
        return;
    }
  }
}

/** Takes a new promise's settlers without a closure per promise (one per model call). */
let capturedResolve: (value: never) => void = ignore;
let capturedReject: (reason: unknown) => void = ignore;
function captureSettlers(resolve: (value: never) => void, reject: (reason: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

function typeName(value: unknown): string {
  return value === null ? "null" : typeof value;
}

function toProviderError(error: unknown, retries: number): AgentError {
  if (error instanceof AgentError) return error;
  const after = retries > 0 ? ` (after ${retries} ${retries === 1 ? "retry" : "retries"})` : "";
  return new ProviderError(`The model call failed${after}: ${errorMessage(error)}`, {
    cause: error,
    retryable: isRetryable(error),
  });
}
