import type {
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4ToolResultPart,
} from "@ai-sdk/provider";
import {
  type AgentMessage,
  type AssistantMessage,
  isLlmMessage,
  type LlmMessage,
  type ToolResultMessage,
  type UserMessage,
} from "../messages.js";

/**
 * Converts the model-facing history to the v4 prompt, incrementally: history messages are never
 * mutated and the history only grows, so when the messages start with the ones converted last
 * time only the new tail is converted. A run of N cycles costs O(N) conversions, not O(N²).
 */
export class PromptBuilder {
  #messages: readonly LlmMessage[] = [];
  /** Slot 0 holds the system message (when there is one); each call hands out a copy. */
  #prompt: LanguageModelV4Message[] = [NO_SYSTEM];
  /** For `buildFromHistory`: how many history messages are already converted. */
  #historyLength = 0;

  /** Builds the prompt for any list of model messages (after a custom transform or converter). */
  build(system: string | undefined, messages: readonly LlmMessage[]): LanguageModelV4Prompt {
    const reused = sharedPrefix(this.#messages, messages);
    if (reused === 0) this.#prompt = [NO_SYSTEM];
    appendMessages(this.#prompt, reused > 0 ? messages.slice(reused) : messages);
    this.#messages = messages.slice();
    return this.#withSystem(system);
  }

  /**
   * The default pipeline's fast path: the history of a run only grows, so only messages added
   * since the last call are converted (custom kinds are skipped, as the default converter does).
   */
  buildFromHistory(system: string | undefined, history: readonly AgentMessage[]): LanguageModelV4Prompt {
    for (let i = this.#historyLength; i < history.length; i++) {
      const message = history[i] as AgentMessage;
      if (isLlmMessage(message)) appendMessage(this.#prompt, message);
    }
    this.#historyLength = history.length;
    return this.#withSystem(system);
  }

  /**
   * A fresh array each call, since a provider (or a test double) may keep the prompt it was given;
   * `slice` copies it at memcpy speed. The system message is reused while its text is the same.
   */
  #withSystem(system: string | undefined): LanguageModelV4Prompt {
    const prompt = this.#prompt;
    if (!system) return prompt.slice(1);
    if ((prompt[0] as { content: unknown }).content !== system)
      prompt[0] = { role: "system", content: system };
    return prompt.slice();
  }
}

/** Fills the system slot of a prompt without a system message; never handed out. */
const NO_SYSTEM: LanguageModelV4Message = { role: "system", content: "" };

/** One-shot conversion of a history to a v4 prompt. */
export function toModelPrompt(
  system: string | undefined,
  messages: readonly LlmMessage[],
): LanguageModelV4Prompt {
  return new PromptBuilder().build(system, messages);
}

function sharedPrefix(previous: readonly LlmMessage[], next: readonly LlmMessage[]): number {
  if (previous.length > next.length) return 0;
  for (let i = 0; i < previous.length; i++) if (previous[i] !== next[i]) return 0;
  return previous.length;
}

function appendMessages(prompt: LanguageModelV4Message[], messages: readonly LlmMessage[]): void {
  for (const message of messages) appendMessage(prompt, message);
}

function appendMessage(prompt: LanguageModelV4Message[], message: LlmMessage): void {
  if (message.role === "toolResult") {
    // Consecutive tool results travel as one `tool` message, as the providers expect. The
    // previous one may belong to a prompt already handed to a provider, so it is copied.
    const previous = prompt[prompt.length - 1];
    const part = toolResultPart(message);
    if (previous?.role === "tool")
      prompt[prompt.length - 1] = { role: "tool", content: [...previous.content, part] };
    else prompt.push({ role: "tool", content: [part] });
  } else if (message.role === "user") prompt.push(userMessage(message));
  else {
    // A reply with nothing to say (no parts, or only empty text) is left out: Anthropic and others
    // refuse an assistant message without content, and the model loses nothing by not seeing it.
    const reply = assistantMessage(message);
    if (reply.content.length > 0) prompt.push(reply);
  }
}

function userMessage(message: UserMessage): LanguageModelV4Message {
  const content =
    typeof message.content === "string"
      ? [{ type: "text" as const, text: message.content }]
      : message.content.map((part) => ({ type: "text" as const, text: part.text }));
  return { role: "user", content };
}

function assistantMessage(message: AssistantMessage): AssistantPromptMessage {
  // `map` makes an array of the exact size (pushing onto `[]` reserves room for 17 parts).
  const parts = message.content.some(isEmptyText)
    ? message.content.filter((part) => !isEmptyText(part))
    : message.content;
  return { role: "assistant", content: parts.map(assistantPart) };
}

type AssistantBlock = AssistantMessage["content"][number];
type AssistantPromptMessage = Extract<LanguageModelV4Message, { role: "assistant" }>;
type AssistantPart = AssistantPromptMessage["content"][number];

function isEmptyText(part: AssistantBlock): boolean {
  return part.type === "text" && part.text === "";
}

function assistantPart(part: AssistantBlock): AssistantPart {
  if (part.type === "text") return { type: "text", text: part.text };
  if (part.type === "thinking") return { type: "reasoning", text: part.text };
  return { type: "tool-call", toolCallId: part.id, toolName: part.name, input: part.args };
}

function toolResultPart(message: ToolResultMessage): LanguageModelV4ToolResultPart {
  const output: LanguageModelV4ToolResultOutput = message.isError
    ? { type: "error-text", value: message.content }
    : { type: "text", value: message.content };
  return { type: "tool-result", toolCallId: message.toolCallId, toolName: message.toolName, output };
}
