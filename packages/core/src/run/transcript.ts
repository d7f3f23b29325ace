import { type AgentMessage, type AssistantMessage, type ToolCall, toolCallsOf } from "../messages.js";

/**
 * The rules a strict provider enforces on a history: every tool call is answered by exactly one
 * result, the results come right after the message that made the calls (app messages of other
 * roles may sit between; they never reach the model), in call order, and no result answers
 * nothing. Returns one line per violation; an empty list means the transcript is valid.
 */
export function validateTranscript(messages: readonly AgentMessage[]): string[] {
  if (!Array.isArray(messages))
    throw new TypeError(`validateTranscript takes a list of messages, got ${describeValue(messages)}.`);
  const problems: string[] = [];
  const seenCallIds = new Set<string>();
  let pending: ToolCall[] = [];
  let pendingFrom = -1;
  const unanswered = () => {
    if (pending.length > 0)
      problems.push(
        `message ${pendingFrom}: tool call(s) ${pending.map((c) => `"${c.id}"`).join(", ")} have no result before the next message`,
      );
    pending = [];
  };
  messages.forEach((message: unknown, index) => {
    if (typeof message !== "object" || message === null) {
      problems.push(`message ${index} is no message (${describeValue(message)})`);
      return;
    }
    if (!hasRole(message)) return;
    if (message.role === "toolResult") {
      const id = (message as { toolCallId: string }).toolCallId;
      const position = pending.findIndex((call) => call.id === id);
      if (position === -1)
        problems.push(`message ${index}: tool result "${id}" answers no pending tool call`);
      else {
        if (position > 0) problems.push(`message ${index}: tool result "${id}" is out of call order`);
        pending.splice(position, 1);
      }
      return;
    }
    if (message.role !== "user" && message.role !== "assistant") return;
    unanswered();
    if (message.role !== "assistant") return;
    // A hand-made or changed history may hold an assistant message whose content is no list of
    // parts; reported here, it would otherwise make toolCallsOf throw a TypeError.
    const { content } = message as { content: unknown };
    const malformedPart = Array.isArray(content)
      ? content.findIndex((part: unknown) => typeof part !== "object" || part === null)
      : -1;
    if (!Array.isArray(content) || malformedPart !== -1) {
      problems.push(
        Array.isArray(content)
          ? `message ${index}: part ${malformedPart} of the assistant message is no content part (${describeValue(content[malformedPart])})`
          : `message ${index}: the assistant message's content is not a list of parts (${describeValue(content)})`,
      );
      pending = [];
      return;
    }
    const calls = toolCallsOf(message as AssistantMessage);
    for (const call of calls) {
      if (seenCallIds.has(call.id))
        problems.push(`message ${index}: tool call id "${call.id}" is used twice`);
      seenCallIds.add(call.id);
    }
    pending = calls;
    pendingFrom = index;
  });
  unanswered();
  return problems;
}

function hasRole(message: object): message is AgentMessage {
  return typeof (message as { role?: unknown }).role === "string";
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  return typeof value === "string" ? JSON.stringify(value) : typeof value;
}
