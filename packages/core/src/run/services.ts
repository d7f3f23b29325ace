import type { DependencyContainer, InjectionToken } from "tsyringe";
import type { AgentEvent } from "../events/schemas.js";
import type { ToolCall, ToolResultMessage } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import { type ModelStepRequest, type ModelStepResult, streamModelStep } from "../model/stream-step.js";
import { type Logger, silentLogger } from "../observe/logger.js";
import { openTelemetryTracing, type Tracing } from "../observe/tracing.js";
import { rootContainer } from "../orchestrator/registry.js";
import type { RunnableTool } from "../tools/define-tool.js";
import { executeToolCall, type FatalToolSink } from "../tools/execute-tool.js";
import type { ToolRegistry } from "../tools/registry.js";

/**
 * The services a run is assembled from. Each agent's child container holds the defaults below; a
 * runtime (a durable one, a tracer, a test) registers its own under the same token, and every
 * orchestrator gets them without a change.
 */

/**
 * Where time comes from: `ts` of events, timestamps of messages and the `durationMs` of turns and
 * runs (`now`); the model and tool time in metrics, which needs sub-millisecond steps (`monotonic`).
 */
export interface Clock {
  /** Unix time in milliseconds. */
  now(): number;
  /** A monotonic time in milliseconds. */
  monotonic(): number;
}

/** Where run ids come from. */
export interface IdSource {
  runId(): string;
}

/**
 * Receives every event of every run of the agent, enveloped, after the run's stream and the
 * agent's listeners: an event log, a trace exporter. None is registered by default.
 */
export interface EventSink {
  publish(event: AgentEvent): void;
}

/**
 * One model call: reads the model's stream (passing text and reasoning to `request.onText` /
 * `onReasoning` as they arrive) and returns what it produced. A durable runtime records the
 * result and, on replay, returns it without calling the model.
 */
export interface ModelStep {
  run(request: ModelStepRequest): Promise<ModelStepResult>;
}

/** What one tool call needs to run. */
export interface ToolRunRequest {
  runId: string;
  call: ToolCall;
  /**
   * Undefined when the model named a tool that is not registered. A client tool arrives bound to
   * its run (`execution: "client"`).
   */
  tool: RunnableTool | undefined;
  tools: ToolRegistry;
  /** Aborted when the run (or the call's batch) is aborted. */
  scope: AbortScope;
  /** How long an aborted tool may take to stop before it is abandoned. */
  graceMs: number;
  timeoutMs: number | undefined;
  fatal: FatalToolSink;
}

/** Runs one tool call and always returns its result message (synchronously for a synchronous tool). */
export interface ToolRunner {
  run(request: ToolRunRequest): ToolResultMessage | Promise<ToolResultMessage>;
}

export const CLOCK: InjectionToken<Clock> = Symbol.for("agent-core.Clock");
export const ID_SOURCE: InjectionToken<IdSource> = Symbol.for("agent-core.IdSource");
export const EVENT_SINK: InjectionToken<EventSink> = Symbol.for("agent-core.EventSink");
export const MODEL_STEP: InjectionToken<ModelStep> = Symbol.for("agent-core.ModelStep");
export const TOOL_RUNNER: InjectionToken<ToolRunner> = Symbol.for("agent-core.ToolRunner");
/** How runs are traced; by default through the global `@opentelemetry/api` tracer provider. */
export const TRACING: InjectionToken<Tracing> = Symbol.for("agent-core.Tracing");
/** Where the library's log lines go (`config.logger` wins); silent by default. */
export const LOGGER: InjectionToken<Logger> = Symbol.for("agent-core.Logger");

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
