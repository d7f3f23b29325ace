import type { AgentMessage, AssistantMessage, ToolResultMessage, UserMessage } from "@agent-core/core";
import { printable } from "../render.js";

// A conversation is skimmed, not read: each message gets one line, cut short.
const MAX_LINE_CHARS = 100;

/** One line per message of the history, numbered, for `/history`. */
export function historyLines(messages: readonly AgentMessage[]): string[] {
  return messages.map((message, index) => shorten(`${index + 1}. ${describe(message)}`));
}

function describe(message: AgentMessage): string {
  switch (message.role) {
    case "user": {
      const { content } = message as UserMessage;
      return `user: ${typeof content === "string" ? content : content.map((part) => part.text).join(" ")}`;
    }
    case "assistant": {
      const parts = (message as AssistantMessage).content.flatMap((part) => {
        if (part.type === "text") return [part.text];
        if (part.type === "toolCall") return [`→ ${part.name}(${JSON.stringify(part.args) ?? ""})`];
        return [];
      });
      return `assistant: ${parts.join(" ")}`;
    }
    case "toolResult": {
      const result = message as ToolResultMessage;
      return `← ${result.toolName} ${result.status}: ${result.content}`;
    }
    default:
      return `${message.role}: ${JSON.stringify(message)}`;
  }
}

function shorten(line: string): string {
  const flat = printable(line.replace(/\s+/g, " "));
  return flat.length > MAX_LINE_CHARS ? `${flat.slice(0, MAX_LINE_CHARS)}…` : flat;
}
