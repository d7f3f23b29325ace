import type {
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";
import type { AssistantMessage, LlmMessage, ToolResultMessage, UserMessage } from "../messages.js";

/**
 * Converts the model-facing history to the v4 prompt. Each message's conversion is cached by
 * identity (history messages are never mutated), so a long history costs one array walk per call,
 * not a re-conversion of every message.
 */
const converted = new WeakMap<LlmMessage, LanguageModelV4Message>();

export function toModelPrompt(system: string | undefined, messages: readonly LlmMessage[]): LanguageModelV4Prompt {
  const prompt: LanguageModelV4Prompt = [];
  if (system) prompt.push({ role: "system", content: system });
  for (const message of messages) {
    if (message.role === "toolResult") {
      // Consecutive tool results travel as one `tool` message, as the providers expect.
      const previous = prompt[prompt.length - 1];
      const part = toolResultPart(message);
      if (previous?.role === "tool") previous.content.push(part);
      else prompt.push({ role: "tool", content: [part] });
      continue;
    }
    let modelMessage = converted.get(message);
    if (modelMessage === undefined) {
      modelMessage = message.role === "user" ? userMessage(message) : assistantMessage(message);
      converted.set(message, modelMessage);
    }
    prompt.push(modelMessage);
  }
  return prompt;
}

function userMessage(message: UserMessage): LanguageModelV4Message {
  const content =
    typeof message.content === "string"
      ? [{ type: "text" as const, text: message.content }]
      : message.content.map((part) => ({ type: "text" as const, text: part.text }));
  return { role: "user", content };
}

function assistantMessage(message: AssistantMessage): LanguageModelV4Message {
  const content: Extract<LanguageModelV4Message, { role: "assistant" }>["content"] = [];
  for (const part of message.content) {
    if (part.type === "text") {
      if (part.text !== "") content.push({ type: "text", text: part.text });
    } else if (part.type === "thinking") content.push({ type: "reasoning", text: part.text });
    else content.push({ type: "tool-call", toolCallId: part.id, toolName: part.name, input: part.args });
  }
  return { role: "assistant", content };
}

function toolResultPart(message: ToolResultMessage) {
  const output: LanguageModelV4ToolResultOutput = message.isError
    ? { type: "error-text", value: message.content }
    : { type: "text", value: message.content };
  return { type: "tool-result" as const, toolCallId: message.toolCallId, toolName: message.toolName, output };
}
