import "reflect-metadata";

export {
  Agent,
  type AgentConfig,
  defaultLimits,
  type MessageCallback,
  type PromptOptions,
  type QueueCallbackContext,
} from "./agent.js";
export { AgentRun } from "./agent-run.js";
export * from "./errors.js";
export { EventStream } from "./events/event-stream.js";
export * from "./events/schemas.js";
export {
  type ConvertToLlm,
  chainTransforms,
  defaultConvertToLlm,
  type HistoryTransform,
  keepFirstAndRecent,
  keepRecent,
  type TransformContext,
} from "./history/pipeline.js";
export * from "./messages.js";
export { toModelPrompt } from "./model/prompt.js";
export { defaultRetry, type RetryOptions } from "./model/retry.js";
export type { ModelCallSettings, ModelStepResult } from "./model/stream-step.js";
export type * from "./orchestrator/contract.js";
export {
  ORCHESTRATOR_REGISTRY,
  OrchestratorRegistry,
  registerOrchestrator,
  rootContainer,
} from "./orchestrator/registry.js";
export type { RunResult } from "./run/run-session.js";
export { validateTranscript } from "./run/transcript.js";
export { defineTool, type Tool, type ToolDefinition, type ToolExecuteOptions } from "./tools/define-tool.js";
export { SKIPPED_BY_STEERING } from "./tools/execute-tool.js";
export { ToolRegistry } from "./tools/registry.js";
