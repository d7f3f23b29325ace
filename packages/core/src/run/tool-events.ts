import type { EventPayload } from "../events/schemas.js";
import type { ToolCall, ToolResultMessage } from "../messages.js";

// The events of every tool cycle are built whole, in one literal each: adding fields afterwards
// would give every event a second backing store (see docs/benchmarks.md).

/** A call's `tool_call`; `client`: the run waits for the user's side to run it. */
export function toolCallEvent(call: ToolCall, client: boolean): EventPayload<"tool_call"> {
  const { id: toolCallId, name: toolName, args, originalId } = call;
  if (originalId === undefined && !client) return { type: "tool_call", toolCallId, toolName, args };
  const event: EventPayload<"tool_call"> = { type: "tool_call", toolCallId, toolName, args };
  if (originalId !== undefined) event.originalToolCallId = originalId;
  if (client) event.execution = "client";
  return event;
}

/** A recorded result's `tool_result`: its error, or what the tool returned. */
export function toolResultEvent(result: ToolResultMessage): EventPayload<"tool_result"> {
  const { toolCallId, toolName, status } = result;
  return result.isError
    ? { type: "tool_result", toolCallId, toolName, status, error: result.content }
    : { type: "tool_result", toolCallId, toolName, status, result: result.details };
}
