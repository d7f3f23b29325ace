import type {
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";

// What the offline demo models read from a prompt: the user's last words, this turn's tool calls
// and what came back from them.

/** The messages after the last user message: this turn's tool calls and results. */
export function currentTurn(prompt: LanguageModelV4Prompt): LanguageModelV4Message[] {
  return prompt.slice(prompt.findLastIndex((message) => message.role === "user") + 1);
}

export function lastUserText(prompt: LanguageModelV4Prompt): string {
  return userTexts(prompt).at(-1) ?? "";
}

/** What the user said in each of their messages, oldest first. */
export function userTexts(prompt: LanguageModelV4Prompt): string[] {
  return prompt.flatMap((message) =>
    message.role === "user"
      ? [message.content.map((part) => (part.type === "text" ? part.text : "")).join("\n")]
      : [],
  );
}

export function toolCallInputs(turn: LanguageModelV4Message[]): Map<string, unknown> {
  const inputs = new Map<string, unknown>();
  for (const message of turn)
    if (message.role === "assistant")
      for (const part of message.content)
        if (part.type === "tool-call") inputs.set(part.toolCallId, part.input);
  return inputs;
}

/** The error message of a failed tool call, or undefined if it succeeded. */
export function failureOf(output: LanguageModelV4ToolResultOutput): string | undefined {
  switch (output.type) {
    case "error-text":
      return output.value;
    case "error-json":
      return String(field(output.value, "message") ?? JSON.stringify(output.value));
    case "execution-denied":
      return output.reason ?? "the call was not allowed";
    default:
      return undefined;
  }
}

/** Tool results may arrive as JSON or as text holding JSON (agent-core sends text), so both are parsed. */
export function resultValue(output: LanguageModelV4ToolResultOutput): unknown {
  switch (output.type) {
    case "json":
      return output.value;
    case "text":
      return parseJson(output.value);
    case "content":
      return parseJson(output.value.map((part) => (part.type === "text" ? part.text : "")).join(""));
    default:
      return undefined;
  }
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function field(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
