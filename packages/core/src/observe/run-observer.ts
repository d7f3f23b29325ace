import type { ToolCall } from "../messages.js";
import type { EventSink, ModelStep, ToolRunner } from "../run/services.js";

/**
 * Watches one run from outside (its traces, its log lines): every event the run publishes, the
 * stall detector's nudges (which no event reports: the model reads them in a tool result), and
 * each model step and tool call, through decorators of the run's `MODEL_STEP` and `TOOL_RUNNER`.
 * Made per run, only when something observes it: a run nobody observes has no observer at all.
 */
export interface RunObserver extends EventSink {
  /** The stall detector nudged the model about this call instead of running it, or after its result. */
  nudged(call: ToolCall, message: string): void;
  /** The run's model step, observed (or `inner` itself). */
  modelStep(inner: ModelStep): ModelStep;
  /** The run's tool runner, observed (or `inner` itself). */
  toolRunner(inner: ToolRunner): ToolRunner;
}

/** One observer for two (either may be absent): each sees everything, `first` first, even when the other throws. */
export function bothObservers(
  first: RunObserver | undefined,
  second: RunObserver | undefined,
): RunObserver | undefined {
  if (first === undefined) return second;
  if (second === undefined) return first;
  // Each is told whatever the other does: an observer that throws misses the event (its publisher
  // catches it), and must not make the other miss it too, as a broken trace would the log lines.
  return {
    publish(event) {
      try {
        first.publish(event);
      } finally {
        second.publish(event);
      }
    },
    nudged(call, message) {
      try {
        first.nudged(call, message);
      } finally {
        second.nudged(call, message);
      }
    },
    // The first observer's decorator is the outer one: its span encloses the second's work.
    modelStep: (inner) => first.modelStep(second.modelStep(inner)),
    toolRunner: (inner) => first.toolRunner(second.toolRunner(inner)),
  };
}
