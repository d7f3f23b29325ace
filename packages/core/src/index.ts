import "reflect-metadata";

export { Agent } from "./agent.js";
export {
  type AgentConfig,
  defaultLimits,
  type MessageCallback,
  type PromptOptions,
  type QueueCallbackContext,
  type Timeouts,
  validateAgentConfig,
  validatePromptOptions,
} from "./agent-config.js";
export { AgentRun } from "./agent-run.js";
export {
  AgentConfigError,
  type ConfigIssue,
  ownOptions,
  refuseUnknownKeys,
  validateOptions,
} from "./config-issues.js";
export * from "./errors.js";
export {
  type EventSchema,
  eventSchemaFor,
  InvalidEventError,
  parseAgentEvent,
  registerEventSchema,
  safeParseAgentEvent,
} from "./events/event-registry.js";
export { EventStream } from "./events/event-stream.js";
export * from "./events/schemas.js";
export { type ContextBudgetOptions, contextBudget, estimateTokens } from "./history/context-budget.js";
export { knownContextWindow } from "./history/context-windows.js";
export {
  type ConvertToLlm,
  chainTransforms,
  defaultConvertToLlm,
  type HistoryTransform,
  keepFirstAndRecent,
  keepRecent,
  type TransformContext,
} from "./history/pipeline.js";
export { LONGEST_TIMER_MS } from "./longest-timer.js";
export * from "./messages.js";
/** @internal For the agent-core packages: one listener per outside signal, however many wait on it. */
export { onAbortShared } from "./model/abortable.js";
export { toModelPrompt } from "./model/prompt.js";
export { defaultRetry, type RetryOptions } from "./model/retry.js";
export type { StepTimeouts } from "./model/step-watchdog.js";
export type { ModelCallSettings, ModelStepResult } from "./model/stream-step.js";
export { failSafeLogger, isLogger, LOGGER, type LogFn, type Logger, silentLogger } from "./observe/logger.js";
export { type OpenTelemetryTracingOptions, openTelemetryTracing } from "./observe/open-telemetry-tracing.js";
export { bothObservers, type RunObserver } from "./observe/run-observer.js";
export { noTracing, TRACING, type TracedRun, type Tracing } from "./observe/tracing.js";
export type * from "./orchestrator/contract.js";
export {
  ORCHESTRATOR_REGISTRY,
  OrchestratorRegistry,
  registerOrchestrator,
  rootContainer,
} from "./orchestrator/registry.js";
export { runTurns } from "./orchestrator/turns.js";
export type { ToolTimeouts } from "./run/batch-contract.js";
export { type ClientToolOutcome, checkClientToolOutcome } from "./run/client-tools.js";
export type * from "./run/hooks.js";
export type { RunResult } from "./run/run-session.js";
export {
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
  type ToolRunRequest,
} from "./run/services.js";
export type { ApprovalDecision, Suspension, Wait } from "./run/suspension.js";
export { validateTranscript } from "./run/transcript.js";
export { type AiSdkToolSet, fromAiSdkTools } from "./tools/ai-sdk-tools.js";
export { canonicalJson } from "./tools/canonical-json.js";
export {
  type ClientTool,
  type ClientToolDefinition,
  defineTool,
  type RunnableTool,
  type ServerTool,
  type ServerToolDefinition,
  type Tool,
  type ToolApprovalCheck,
  type ToolCallContext,
  type ToolDefinition,
  type ToolExecuteOptions,
} from "./tools/define-tool.js";
export { SKIPPED_BY_STEERING } from "./tools/execute-tool.js";
export {
  compileJsonSchema,
  type JsonSchemaValidator,
  type SchemaIssue,
} from "./tools/json-schema-validation.js";
export { type ParsedArgs, parseArgs, parseArgsNow } from "./tools/parse-args.js";
export { type ToolInput, ToolRegistry } from "./tools/registry.js";
export { StallDetector, type StallOptions } from "./tools/stall-detector.js";
