import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Prompt } from "@ai-sdk/provider";
import type { AbortScope } from "../model/abortable.js";
import type { RetryOptions } from "../model/retry.js";
import type { StepTimeouts } from "../model/step-watchdog.js";
import type { ModelCallSettings, ModelStepRequest } from "../model/stream-step.js";
import type { Activity } from "./activity.js";
import type { EventPublisher } from "./event-publisher.js";
import type { MetricsRecorder } from "./metrics.js";
import type { Clock } from "./services.js";

/** What every model call of a run shares; built once per run. */
export interface ModelCallSetup {
  readonly abortScope: AbortScope;
  readonly retry: RetryOptions;
  readonly timeouts: StepTimeouts | undefined;
  readonly events: EventPublisher;
  readonly metrics: MetricsRecorder;
  readonly clock: Clock;
  /** Counts the run's work under way (what its end must cancel). */
  readonly activity: Pick<Activity, "inFlight" | "settled">;
}

/**
 * One model call of a run, as the request the model step reads: streamed text becomes
 * `text_delta` and reasoning `thinking` (through the run's publisher), and its time is added to
 * the run's metrics. One object per call, not literals and closures: it is on the hottest path.
 */
export class ModelCall implements ModelStepRequest {
  readonly abortScope: AbortScope;
  readonly retry: RetryOptions;
  readonly timeouts: StepTimeouts | undefined;
  readonly #setup: ModelCallSetup;
  readonly #streamsText: boolean;
  readonly #started: number;
  #textIndex = 0;

  constructor(
    setup: ModelCallSetup,
    readonly model: LanguageModelV4,
    readonly prompt: LanguageModelV4Prompt,
    readonly tools: readonly LanguageModelV4FunctionTool[],
    readonly settings: ModelCallSettings | undefined,
    streamsText: boolean,
  ) {
    this.#setup = setup;
    this.abortScope = setup.abortScope;
    this.retry = setup.retry;
    this.timeouts = setup.timeouts;
    this.#streamsText = streamsText;
    this.#started = setup.clock.monotonic();
    setup.activity.inFlight++;
  }

  // Own properties, not methods: a model step of the app's own that passes on a copy of the request
  // (`{ ...request, settings }`) keeps them, and with them the run's streamed events.
  readonly onText = (text: string): void => {
    if (this.#streamsText) this.#setup.events.publish({ type: "text_delta", text, index: this.#textIndex++ });
  };

  readonly onReasoning = (text: string): void => {
    this.#setup.events.publish({ type: "thinking", text });
  };

  /** The call is over, whichever way: its time goes to the run's metrics. */
  settled(): void {
    this.#setup.metrics.modelMs += this.#setup.clock.monotonic() - this.#started;
    // Last: the run's end may be waiting for this call, and reads the metrics.
    this.#setup.activity.settled();
  }
}
