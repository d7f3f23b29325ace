import type { AgentMessage } from "@agent-core/core";

/**
 * The history as the OpenAI chat API would judge it once converted (`toolResult` → `role: "tool"`):
 * stricter than `validateTranscript` about shapes. App messages of other roles never reach the
 * model and are skipped. Returns one line per problem.
 */
export function checkOpenAIShape(messages: readonly AgentMessage[]): string[] {
  const problems: string[] = [];
  const callIds = new Set<string>();
  /** The calls of the last assistant message still waiting for their `tool` message. */
  let open: { from: number; calls: Map<string, string> } | undefined;
  const closeOpen = (before: string) => {
    if (open && open.calls.size > 0)
      problems.push(
        `the calls of assistant message ${open.from} (${[...open.calls.keys()].join(", ")}) have no tool message before ${before}`,
      );
    open = undefined;
  };

  messages.forEach((message, index) => {
    if (message.role === "toolResult") {
      const { toolCallId, toolName, content } = message as {
        toolCallId: unknown;
        toolName: unknown;
        content: unknown;
      };
      if (typeof content !== "string")
        problems.push(`message ${index}: tool result content is ${typeof content}, not a string`);
      if (typeof toolCallId !== "string" || toolCallId === "")
        problems.push(`message ${index}: tool result without a tool_call_id`);
      const name = open?.calls.get(String(toolCallId));
      if (name === undefined)
        problems.push(
          `message ${index}: tool message "${String(toolCallId)}" does not follow an assistant message that made that call (or answers it twice)`,
        );
      else if (name !== toolName)
        problems.push(
          `message ${index}: tool message "${toolCallId}" names ${String(toolName)}, the call ${name}`,
        );
      open?.calls.delete(String(toolCallId));
      return;
    }
    if (message.role === "user") {
      closeOpen(`message ${index}`);
      const { content } = message as { content: unknown };
      const valid =
        typeof content === "string" ||
        (Array.isArray(content) &&
          content.every((part) => part?.type === "text" && typeof part.text === "string"));
      if (!valid) problems.push(`message ${index}: user content is neither a string nor text parts`);
      return;
    }
    if (message.role !== "assistant") return;
    closeOpen(`message ${index}`);
    const content = (message as { content: unknown }).content;
    if (!Array.isArray(content)) {
      problems.push(`message ${index}: assistant content is not a list of parts`);
      return;
    }
    let text = "";
    const calls = new Map<string, string>();
    for (const part of content) {
      if (part?.type === "text") text += part.text;
      if (part?.type !== "toolCall") continue;
      if (typeof part.id !== "string" || part.id === "" || typeof part.name !== "string" || part.name === "")
        problems.push(`message ${index}: a tool call without an id or a name`);
      if (callIds.has(part.id)) problems.push(`message ${index}: tool call id "${part.id}" was used before`);
      callIds.add(part.id);
      calls.set(part.id, part.name);
    }
    if (text === "" && calls.size === 0)
      problems.push(`message ${index}: an assistant message with neither content nor tool calls`);
    if (calls.size > 0) open = { from: index, calls };
  });
  closeOpen("the end");
  return problems;
}
