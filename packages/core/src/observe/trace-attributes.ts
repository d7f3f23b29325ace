/**
 * The attribute and span names of a run's traces, and the provider's name as they write it. The
 * `gen_ai.*` names are the OpenTelemetry GenAI semantic conventions (copied: the library depends on
 * `@opentelemetry/api` only, not on the conventions package); `agent_core.*` names what the
 * conventions have no name for.
 */

export const GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
export const GEN_AI_PROVIDER_NAME = "gen_ai.provider.name";
export const GEN_AI_REQUEST_MODEL = "gen_ai.request.model";
export const GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature";
export const GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens";
export const GEN_AI_RESPONSE_MODEL = "gen_ai.response.model";
export const GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons";
export const GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens";
export const GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens";
export const GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens";
export const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens";
export const GEN_AI_TOOL_NAME = "gen_ai.tool.name";
export const GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id";
export const GEN_AI_TOOL_TYPE = "gen_ai.tool.type";
/** The stable `error.type`: here an `AgentError`'s code or a tool result's status. */
export const ERROR_TYPE = "error.type";

/** `gen_ai.operation.name` of the run, model call and tool call spans. */
export const OPERATION_INVOKE_AGENT = "invoke_agent";
export const OPERATION_CHAT = "chat";
export const OPERATION_EXECUTE_TOOL = "execute_tool";

/** On every span of a run. */
export const RUN_ID = "agent_core.run.id";
export const ORCHESTRATOR = "agent_core.orchestrator";
export const STOP_REASON = "agent_core.stop_reason";
export const CYCLES = "agent_core.cycles";
export const TURN_NUMBER = "agent_core.turn";
export const TOOL_STATUS = "agent_core.tool.status";

/** On span events. */
export const MESSAGE_COUNT = "agent_core.messages";
export const DROPPED_MESSAGES = "agent_core.dropped_messages";
export const ESTIMATED_TOKENS = "agent_core.estimated_tokens";
export const ABORT_REASON = "agent_core.reason";
export const MESSAGE = "agent_core.message";
export const RETRY_NUMBER = "agent_core.retry.number";
export const RETRY_DELAY_MS = "agent_core.retry.delay_ms";

/** Span names (besides `chat {model}` and `execute_tool {tool}`). */
export const RUN_SPAN = "invoke_agent";
export const TURN_SPAN = "agent_core.turn";

/** Span events: what happens in a run that is no span of its own. */
export const ABORT_EVENT = "agent_core.abort";
export const STEERING_EVENT = "agent_core.steering_applied";
export const FOLLOW_UP_EVENT = "agent_core.follow_up";
export const NUDGE_EVENT = "agent_core.nudge";
export const TRUNCATION_EVENT = "agent_core.context_truncated";
export const TIMEOUT_EVENT = "agent_core.timeout";
export const RETRY_EVENT = "agent_core.retry";
export const ABANDONED_EVENT = "agent_core.abandoned";

/**
 * `gen_ai.provider.name` from an AI SDK provider id: "openai.chat" → "openai". A model of the app's
 * own may have no id, and runs all the same: then there is no name, and the trace leaves it out.
 */
export function providerName(provider: unknown): string | undefined {
  if (typeof provider !== "string") return undefined;
  const dot = provider.indexOf(".");
  return dot < 0 ? provider : provider.slice(0, dot);
}
