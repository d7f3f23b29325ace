/**
 * What the fake OpenAI server checks of a request's `messages`, as the real API does: the shape of
 * each message, and that every tool message answers a call of the assistant message before it.
 */

export type ChatMessage = {
  role: "system" | "user" | "assistant" | "tool";
  content?: unknown;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};

const ROLES = ["system", "user", "assistant", "tool"] as const;
// "preceeding" (sic) is how the real API spells it; tests may compare the text verbatim.
const TOOL_WITHOUT_CALL =
  "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

/**
 * Checks a Chat Completions `messages` array the way the OpenAI API does.
 * Returns the API's error message for the first problem, or undefined when the history is valid.
 */
export function validateChatMessages(messages: unknown): string | undefined {
  if (messages === undefined) return "Missing required parameter: 'messages'.";
  if (!Array.isArray(messages)) return invalidType("messages", "an array", messages);
  if (messages.length === 0) return emptyArray("messages");
  // Tool call ids of the latest assistant message that are still waiting for their tool message;
  // undefined once any non-tool message closes the block of tool responses.
  let unanswered: Set<string> | undefined;
  for (const [index, message] of messages.entries()) {
    const shapeError = validateMessageShape(message, `messages[${index}]`);
    if (shapeError) return shapeError;
    const { role, tool_call_id, tool_calls } = message as ChatMessage;
    if (role === "tool") {
      if (!unanswered?.delete(tool_call_id as string)) return TOOL_WITHOUT_CALL;
      continue;
    }
    if (unanswered?.size) return missingToolResponses(unanswered);
    unanswered = role === "assistant" && tool_calls ? new Set(tool_calls.map((call) => call.id)) : undefined;
  }
  return unanswered?.size ? missingToolResponses(unanswered) : undefined;
}

function missingToolResponses(ids: Set<string>): string {
  return (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
    `'tool_call_id'. The following tool_call_ids did not have response messages: ${[...ids].join(", ")}`
  );
}

function validateMessageShape(message: unknown, path: string): string | undefined {
  if (!isRecord(message)) return invalidType(path, "an object", message);
  const roleError = expectOneOf(message.role, `${path}.role`, ROLES);
  if (roleError) return roleError;
  const hasToolCalls = message.role === "assistant" && message.tool_calls != null;
  // Only an assistant message that calls tools may omit its content.
  if (message.content == null && !hasToolCalls) return missing(`${path}.content`);
  if (message.role === "tool") return expectString(message.tool_call_id, `${path}.tool_call_id`);
  return hasToolCalls ? validateToolCalls(message.tool_calls, `${path}.tool_calls`) : undefined;
}

function validateToolCalls(toolCalls: unknown, path: string): string | undefined {
  if (!Array.isArray(toolCalls)) return invalidType(path, "an array", toolCalls);
  if (toolCalls.length === 0) return emptyArray(path);
  for (const [index, call] of toolCalls.entries()) {
    const error = validateToolCall(call, `${path}[${index}]`);
    if (error) return error;
  }
  return undefined;
}

function validateToolCall(call: unknown, path: string): string | undefined {
  if (!isRecord(call)) return invalidType(path, "an object", call);
  return (
    expectString(call.id, `${path}.id`) ??
    expectOneOf(call.type, `${path}.type`, ["function"]) ??
    expectRecord(call.function, `${path}.function`) ??
    validateFunction(call.function as Record<string, unknown>, `${path}.function`)
  );
}

function validateFunction(fn: Record<string, unknown>, path: string): string | undefined {
  return expectString(fn.name, `${path}.name`) ?? expectString(fn.arguments, `${path}.arguments`);
}

function expectString(value: unknown, path: string): string | undefined {
  if (value === undefined) return missing(path);
  return typeof value === "string" ? undefined : invalidType(path, "a string", value);
}

function expectRecord(value: unknown, path: string): string | undefined {
  if (value === undefined) return missing(path);
  return isRecord(value) ? undefined : invalidType(path, "an object", value);
}

function expectOneOf(value: unknown, path: string, allowed: readonly string[]): string | undefined {
  const typeError = expectString(value, path);
  if (typeError || allowed.includes(value as string)) return typeError;
  const quoted = allowed.map((item) => `'${item}'`);
  const list =
    quoted.length > 1 ? `${quoted.slice(0, -1).join(", ")}, and ${quoted.at(-1)}` : quoted.join("");
  return `Invalid value: '${value}'. Supported values are: ${list}.`;
}

function missing(path: string): string {
  return `Missing required parameter: '${path}'.`;
}

function emptyArray(path: string): string {
  return `Invalid '${path}': empty array. Expected an array with minimum length 1, but got an empty array instead.`;
}

function invalidType(path: string, expected: string, value: unknown): string {
  return `Invalid type for '${path}': expected ${expected}, but got ${describeType(value)} instead.`;
}

function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
