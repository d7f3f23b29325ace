import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Prompt } from "@ai-sdk/provider";
import type { LlmMessage } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { RetryOptions } from "../model/retry.js";
import type { StepTimeouts } from "../model/step-watchdog.js";
import type { ModelCallSettings, ModelStepRequest, ModelStepResult } from "../model/stream-step.js";
import { monotonicNow } from "./metrics.js";

/** What the model calls of a run report to it; built once per run, not per call. */
export interface ModelCallHost {
  readonly abortScope: AbortScope;
  readonly retry: RetryOptions;
  readonly timeouts: StepTimeouts | undefined;
  /** A text chunk of a call that streams its text (`decide`), with its index within the call. */
  text(text: string, index: number): void;
  reasoning(text: string): void;
  /** The call's stream ended: account its usage (throws when the run has ended meanwhile). */
  stepDone(step: ModelStepResult): void;
  /** The call settled, whichever way, after `ms` milliseconds. */
  settled(ms: number): void;
}

/** What a `decide` or `generateObject` call asks for, before the run's pipeline builds the prompt. */
export interface ModelCallSpec {
  system: string | undefined;
  tools: readonly LanguageModelV4FunctionTool[];
  settings: ModelCallSettings | undefined;
  /** Messages for this call only, after the history. */
  extraMessages: readonly LlmMessage[] | undefined;
  /** Whether text chunks become `text_delta` events. */
  streamsText: boolean;
}

/**
 * One model call of a run: the request `streamModelStep` reads and its callbacks in one object.
 * As object literals and closures they were five allocations per call, on the hottest path.
 */
export class ModelCall<T> implements ModelStepRequest<T> {
  readonly abortScope: AbortScope;
  readonly retry: RetryOptions;
  readonly timeouts: StepTimeouts | undefined;
  readonly #host: ModelCallHost;
  readonly #streamsText: boolean;
  readonly #finish: (step: ModelStepResult) => T;
  readonly #started = monotonicNow();
  #textIndex = 0;

  constructor(
    host: ModelCallHost,
    readonly model: LanguageModelV4,
    readonly prompt: LanguageModelV4Prompt,
    readonly tools: readonly LanguageModelV4FunctionTool[],
    readonly settings: ModelCallSettings | undefined,
    streamsText: boolean,
    finish: (step: ModelStepResult) => T,
  ) {
    this.#host = host;
    this.abortScope = host.abortScope;
    this.retry = host.retry;
    this.timeouts = host.timeouts;
    this.#streamsText = streamsText;
    this.#finish = finish;
  }

  onText(text: string): void {
    if (this.#streamsText) this.#host.text(text, this.#textIndex++);
  }

  onReasoning(text: string): void {
    this.#host.reasoning(text);
  }

  finish(step: ModelStepResult): T {
    this.#host.stepDone(step);
    return this.#finish(step);
  }

  onSettled(): void {
    this.#host.settled(monotonicNow() - this.#started);
  }
}
