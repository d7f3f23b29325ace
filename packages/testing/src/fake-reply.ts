import { isRecord } from "./chat-messages.js";

// What the fake server checks of a reply before answering with it: a reply is data a test writes by
// hand, and a slip (`text: 5`, `toolCalls: "x"`) would otherwise surface as a 500 saying
// "value.join is not a function", or as a 200 whose body the client cannot read.

const REPLY_FIELDS = ["text", "reasoning", "toolCalls", "finishReason", "usage", "error", "chunkDelayMs"];
const FINISH_REASONS = ["stop", "tool_calls", "length"];
// RFC 9110's token: what Node accepts as a header name.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** What is wrong with a reply, naming its field ("text must be …"), or undefined when it is a FakeReply. */
export function fakeReplyProblem(reply: Record<string, unknown>): string | undefined {
  const unknown = Object.keys(reply).find((key) => !REPLY_FIELDS.includes(key));
  if (unknown !== undefined) return `it has no field "${unknown}" (known: ${REPLY_FIELDS.join(", ")})`;
  const { text, reasoning, toolCalls, finishReason, usage, error, chunkDelayMs } = reply;
  if (text !== undefined && !isChunks(text))
    return `text must be a string or an array of strings, got ${shown(text)}`;
  if (reasoning !== undefined && !isChunks(reasoning))
    return `reasoning must be a string or an array of strings, got ${shown(reasoning)}`;
  if (toolCalls !== undefined) {
    if (!Array.isArray(toolCalls)) return `toolCalls must be an array, got ${shown(toolCalls)}`;
    for (const [index, call] of toolCalls.entries()) {
      const problem = toolCallProblem(call);
      if (problem !== undefined) return `toolCalls[${index}]${problem}`;
    }
  }
  if (finishReason !== undefined && !FINISH_REASONS.includes(finishReason as string))
    return `finishReason must be one of ${FINISH_REASONS.join(", ")}, got ${shown(finishReason)}`;
  if (
    usage !== undefined &&
    !(isRecord(usage) && isCount(usage.prompt_tokens) && isCount(usage.completion_tokens))
  )
    return `usage must be { prompt_tokens, completion_tokens } (numbers >= 0), got ${shown(usage)}`;
  if (error !== undefined) {
    const problem = errorProblem(error);
    if (problem !== undefined) return `error${problem}`;
  }
  if (chunkDelayMs !== undefined && !isCount(chunkDelayMs))
    return `chunkDelayMs must be a number >= 0, got ${shown(chunkDelayMs)}`;
  return undefined;
}

/** The problem as the end of a path: " must be an object, …", ".name must be …". */
function toolCallProblem(call: unknown): string | undefined {
  if (!isRecord(call)) return ` must be an object { id, name, arguments }, got ${shown(call)}`;
  if (typeof call.id !== "string") return `.id must be a string, got ${shown(call.id)}`;
  if (typeof call.name !== "string") return `.name must be a string, got ${shown(call.name)}`;
  if (!isChunks(call.arguments))
    return `.arguments must be JSON text or an array of fragments, got ${shown(call.arguments)}`;
  return undefined;
}

function errorProblem(error: unknown): string | undefined {
  if (!isRecord(error)) return ` must be an object { status, message }, got ${shown(error)}`;
  const { status, message, type, headers } = error;
  if (!(Number.isInteger(status) && (status as number) >= 100 && (status as number) <= 599))
    return `.status must be an HTTP status (an integer 100 to 599), got ${shown(status)}`;
  if (typeof message !== "string") return `.message must be a string, got ${shown(message)}`;
  if (type !== undefined && typeof type !== "string") return `.type must be a string, got ${shown(type)}`;
  if (headers === undefined) return undefined;
  if (!isRecord(headers)) return `.headers must be an object of strings, got ${shown(headers)}`;
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name))
      return `.headers has a name that is no HTTP header name (${JSON.stringify(name)})`;
    if (typeof value !== "string") return `.headers["${name}"] must be a string, got ${shown(value)}`;
  }
  return undefined;
}

function isChunks(value: unknown): boolean {
  return (
    typeof value === "string" || (Array.isArray(value) && value.every((chunk) => typeof chunk === "string"))
  );
}

function isCount(value: unknown): boolean {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

export function shown(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value);
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}
