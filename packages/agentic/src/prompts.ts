/** The system prompts of the agentic loop, built from parts for each situation (not one glued string). */

export const DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant.";

/** Used on a turn's first call when the agent has tools and no `steeringInstruction`. */
export const DEFAULT_TOOL_INSTRUCTION = [
  "When the request can be answered with the available tools, call the right tool(s) first instead of",
  "answering from memory. After you have the tool results, give a concise final answer.",
  "For other requests, answer helpfully and concisely.",
].join(" ");

/** Used on the calls that follow tool results. */
export const AFTER_TOOLS_INSTRUCTION = [
  "You have just received tool results. If the request still needs more tool calls (for example, only",
  "some of the requested items have results), call tools for the rest. If you have what you need,",
  "write the final answer. If the tools cannot provide it, say so plainly and invent nothing.",
  "Do not repeat a tool call whose result you already have.",
].join(" ");

export type PromptSituation = "initial" | "afterTools";

export function buildSystemPrompt(
  base: string,
  situation: PromptSituation,
  options: { hasTools: boolean; steeringInstruction: string | undefined },
): string {
  const system = base.trim() === "" ? DEFAULT_SYSTEM_PROMPT : base;
  if (!options.hasTools) return system;
  const instruction =
    situation === "initial"
      ? (options.steeringInstruction ?? DEFAULT_TOOL_INSTRUCTION)
      : AFTER_TOOLS_INSTRUCTION;
  return `${system}\n\n${instruction}`;
}
