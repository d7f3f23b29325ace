import type { InjectionToken } from "tsyringe";
import type { AgentEvent } from "../events/schemas.js";
import type { ToolCall, ToolResultMessage } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { ModelStepRequest, ModelStepResult } from "../model/stream-step.js";
import type { RunnableTool } from "../tools/define-tool.js";
import type { FatalToolSink } from "../tools/execute-tool.js";
import type { ToolRegistry } from "../tools/registry.js";

/**
 * The services a run is assembled from, and their tokens. Each agent's child container holds the
 * defaults (`default-services.ts`); a runtime (a durable one, a tracer, a test) registers its own
 * under the same token, and every orchestrator gets them without a change. The tokens of the
 * tracing and the logger stand beside their interfaces, in `observe/`.
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
