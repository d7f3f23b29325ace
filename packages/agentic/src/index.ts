import { registerOrchestrator } from "@agent-core/core";
import { type AgenticOptions, agentic } from "./agentic.js";

// Importing this package makes "agentic" the default orchestrator of every agent.
registerOrchestrator<AgenticOptions>("agentic", (options) => agentic(options), { default: true });

export { type AgenticOptions, AgenticOrchestrator, agentic } from "./agentic.js";
export {
  AFTER_TOOLS_INSTRUCTION,
  buildSystemPrompt,
  DEFAULT_SYSTEM_PROMPT,
  DEFAULT_TOOL_INSTRUCTION,
} from "./prompts.js";
