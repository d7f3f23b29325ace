import type { DependencyContainer, InjectionToken } from "tsyringe";
import { streamModelStep } from "../model/stream-step.js";
import { LOGGER, type Logger, silentLogger } from "../observe/logger.js";
import { openTelemetryTracing } from "../observe/open-telemetry-tracing.js";
import { TRACING, type Tracing } from "../observe/tracing.js";
import { rootContainer } from "../orchestrator/registry.js";
import { executeToolCall } from "../tools/execute-tool.js";
import {
  CLOCK,
  type Clock,
  EVENT_SINK,
  type EventSink,
  ID_SOURCE,
  type IdSource,
  MODEL_STEP,
  type ModelStep,
  TOOL_RUNNER,
  type ToolRunner,
} from "./services.js";

/**
 * The default of each run service, registered in the root container when this module loads, and
 * how an agent resolves the set its runs use.
 */

// Node's global `performance` is a lazy getter on `globalThis`: read once.
const performanceClock = globalThis.performance;

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performanceClock.now(),
};

export const randomIds: IdSource = {
  runId() {
    const id = crypto.randomUUID();
    // Node builds the UUID by concatenation, a tree of ~20 strings that every event and message
    // of the run would keep alive; converting it to a number makes V8 flatten it into one string.
    Number(id);
    return id;
  },
};

export const streamingModelStep: ModelStep = { run: (request) => streamModelStep(request) };

export const defaultToolRunner: ToolRunner = {
  run: ({ tool, tools, call, scope, graceMs, timeoutMs, fatal, runId }) =>
    executeToolCall(tool, tools, call, scope, graceMs, timeoutMs, fatal, runId),
};

/** Traces to the global tracer provider: a run costs one non-recording span while none is registered. */
const defaultTracing: Tracing = openTelemetryTracing();

/** The services an agent's runs use, resolved together. */
export interface RunServiceSet {
  clock: Clock;
  ids: IdSource;
  modelStep: ModelStep;
  toolRunner: ToolRunner;
  /** None unless a runtime registered one. */
  sink: EventSink | undefined;
  tracing: Tracing;
  logger: Logger;
}

export function resolveServices(container: DependencyContainer): RunServiceSet {
  return {
    clock: container.resolve(CLOCK),
    ids: container.resolve(ID_SOURCE),
    modelStep: container.resolve(MODEL_STEP),
    toolRunner: container.resolve(TOOL_RUNNER),
    sink: container.isRegistered(EVENT_SINK, true) ? container.resolve(EVENT_SINK) : undefined,
    tracing: container.resolve(TRACING),
    logger: container.resolve(LOGGER),
  };
}

/**
 * A clock of the app's own, as runs read it: a reading that throws, or that is no finite number,
 * is taken from the system clock instead (a timestamp is never `NaN`, and a run never fails or
 * hangs on one), and `onFault` is told of the first such reading. A reading earlier than the
 * latest of its kind (a clock set back, or one that broke and stood in for by the system's) is
 * held at the latest: a duration is a difference of two readings, and a negative one would break
 * the schemas of `turn_end` and `agent_end`.
 */
export function guardedClock(
  clock: Clock,
  onFault: (reading: "now" | "monotonic", fault: unknown) => void,
): Clock {
  if (clock === systemClock) return clock;
  let told = false;
  const latest = { now: Number.NEGATIVE_INFINITY, monotonic: Number.NEGATIVE_INFINITY };
  const read = (reading: "now" | "monotonic", fallback: () => number): number => {
    let value: unknown;
    try {
      value = clock[reading]();
    } catch (error) {
      value = error;
    }
    if (typeof value !== "number" || !Number.isFinite(value)) {
      if (!told) {
        told = true;
        onFault(reading, value);
      }
      value = fallback();
    }
    latest[reading] = Math.max(latest[reading], value as number);
    return latest[reading];
  };
  return {
    now: () => read("now", systemClock.now),
    monotonic: () => read("monotonic", systemClock.monotonic),
  };
}

/** Registers the default of every service the container cannot resolve yet. */
export function registerDefaultServices(container: DependencyContainer): void {
  const defaults: [InjectionToken<unknown>, unknown][] = [
    [CLOCK, systemClock],
    [ID_SOURCE, randomIds],
    [MODEL_STEP, streamingModelStep],
    [TOOL_RUNNER, defaultToolRunner],
    [TRACING, defaultTracing],
    [LOGGER, silentLogger],
  ];
  for (const [token, service] of defaults)
    if (!container.isRegistered(token, true)) container.registerInstance(token, service);
}

registerDefaultServices(rootContainer);
