import {
  ErrorCode,
  JSONRPCErrorResponseSchema,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  JSONRPCResultResponseSchema,
  McpError,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { schemaIssuesOf } from "./schema-issues.js";

/*
 * A server's answers as the client is to read them, over stdio (broken-answers-stdio.ts) and over
 * Streamable HTTP (broken-answers-http.ts): an answer that breaks JSON-RPC's schema, or that names
 * no request, made an error answer to the request(s) it is for, marked so that the call's error
 * can say what happened.
 */

/**
 * The key of an error answer's `data` that holds the schema issues of the broken answer it stands
 * for. It goes through JSON (an HTTP answer is rewritten as text), so it is a name, not an object
 * of the client's: a server could send one, and would only choose how its own error reads.
 */
const BROKEN_ANSWER = "agent-core/broken-answer";

/**
 * The key of an error answer's `data` that marks it as made from an error answer that named no
 * request (`"id": null`): a name, as `BROKEN_ANSWER` is.
 */
const UNADDRESSED = "agent-core/unaddressed-error";

/**
 * The key of an error answer's `data` that marks it as made for a request whose event stream
 * ended without its answer: a name, as `BROKEN_ANSWER` is.
 */
const STREAM_ENDED = "agent-core/stream-ended";

/**
 * The key of an error answer's `data` that holds why the event stream of a request's answer,
 * which ended without it after an event id, was not resumed: a name, as `BROKEN_ANSWER` is.
 */
const NOT_RESUMED = "agent-core/not-resumed";

/**
 * The key of an error answer's `data` that holds how the POST of a request was answered without
 * its answer (202, JSON that answers another request): a name, as `BROKEN_ANSWER` is.
 */
const POST_UNANSWERED = "agent-core/post-unanswered";

/**
 * The schema error (its `issues`) of the answer a server sent broken, from the `McpError` its
 * request failed with; undefined for any other error.
 */
export function brokenAnswerOf(error: unknown): { issues: unknown[] } | undefined {
  if (!(error instanceof McpError) || error.code !== ErrorCode.InternalError) return undefined;
  const issues = (error.data as Record<string, unknown> | null | undefined)?.[BROKEN_ANSWER];
  return Array.isArray(issues) ? { issues } : undefined;
}

/**
 * Whether `error` (a request's `McpError`) is the server's error answer that named no request,
 * given to the request as it may be the one the server could not read.
 */
export function isUnaddressedError(error: unknown): boolean {
  return isMarked(error, UNADDRESSED);
}

/** Whether `error` (a request's `McpError`) says the event stream of the request's answer ended without it. */
export function isStreamEndedError(error: unknown): boolean {
  return isMarked(error, STREAM_ENDED);
}

/**
 * Why the event stream of a request's answer, which ended without it after an event id, was not
 * resumed, from the `McpError` the request failed with (see `notResumedAnswer`); undefined for any
 * other error.
 */
export function notResumedReasonOf(error: unknown): string | undefined {
  return reasonOf(error, NOT_RESUMED);
}

/**
 * How the POST of a request was answered without its answer, from the `McpError` the request
 * failed with (see `postUnansweredAnswer`); undefined for any other error.
 */
export function postUnansweredReasonOf(error: unknown): string | undefined {
  return reasonOf(error, POST_UNANSWERED);
}

/** The string under `key` of the `data` of `error`, an `McpError` from an error answer made here. */
function reasonOf(error: unknown, key: string): string | undefined {
  const data =
    error instanceof McpError ? (error.data as Record<string, unknown> | null | undefined) : undefined;
  const reason = data?.[key];
  return typeof reason === "string" ? reason : undefined;
}

/** Whether `error` is an `McpError` from an error answer made here, whose `data` has `key`. */
function isMarked(error: unknown, key: string): boolean {
  const data =
    error instanceof McpError ? (error.data as Record<string, unknown> | null | undefined) : undefined;
  return data?.[key] === true;
}

/** The id of the request `message` answers, if it is an answer. */
export function answeredIdOf(message: unknown): unknown {
  if (typeof message !== "object" || message === null || "method" in message) return undefined;
  return (message as { id?: unknown }).id;
}

/**
 * `message` as the client is to read it: an error answer that names no request as an error answer
 * to each request `answeredBy` its error gives (the requests it may answer; when none, as it is),
 * an answer that breaks the schema as an error answer to the request it names, anything else as it is.
 */
export function messagesReadFrom(
  message: unknown,
  answeredBy: (error: { code: number }) => readonly RequestId[],
): unknown[] {
  const unaddressed = unaddressedErrorIn(message);
  const waiting = unaddressed === undefined ? [] : answeredBy(unaddressed);
  if (unaddressed !== undefined && waiting.length > 0)
    return waiting.map((id) => ({
      jsonrpc: "2.0",
      id,
      error: { code: unaddressed.code, message: unaddressed.message, data: { [UNADDRESSED]: true } },
    }));
  if (isMessage(message)) return [message];
  return [errorAnswerFor(message) ?? message];
}

/**
 * The error of an error answer that names no request: `"id": null`, which JSON-RPC answers a
 * request whose id the server could not read (a parse error, an invalid request), or no `id`,
 * which MCP's schema allows for the same.
 */
function unaddressedErrorIn(message: unknown): { code: number; message: string } | undefined {
  if (typeof message !== "object" || message === null || "method" in message || "result" in message)
    return undefined;
  const { id, error } = message as { id?: unknown; error?: unknown };
  if (id !== null && id !== undefined) return undefined;
  const parsed = JSONRPCErrorResponseSchema.shape.error.safeParse(error);
  return parsed.success ? { code: parsed.data.code, message: parsed.data.message } : undefined;
}

function isMessage(value: unknown): boolean {
  return JSONRPCMessageSchema.safeParse(value).success;
}

export function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * An error answer to the request `message` answers, when it is an answer (an object with an `id`
 * the SDK's requests have, a `result` or an `error`, and no `method`) that breaks the schema.
 */
function errorAnswerFor(message: unknown): JSONRPCMessage | undefined {
  if (typeof message !== "object" || message === null || "method" in message) return undefined;
  const { id } = message as { id?: unknown };
  if (!(typeof id === "string" || Number.isSafeInteger(id))) return undefined;
  if (!("result" in message || "error" in message)) return undefined;
  const schema = "result" in message ? JSONRPCResultResponseSchema : JSONRPCErrorResponseSchema;
  const parsed = schema.safeParse(message);
  if (parsed.success) return undefined;
  return errorAnswer(
    id as string | number,
    `its answer breaks the MCP schema: ${schemaIssuesOf(parsed.error)}`,
    {
      [BROKEN_ANSWER]: parsed.error.issues,
    },
  );
}

/** An InternalError answer to request `id`; `data` holds the key that says which case it is. */
function errorAnswer(id: RequestId, message: string, data: Record<string, unknown>): JSONRPCMessage {
  return { jsonrpc: "2.0", id, error: { code: ErrorCode.InternalError, message, data } };
}

/** The error answer to request `id` whose event stream ended without its answer (see `isStreamEndedError`). */
export function streamEndedAnswer(id: RequestId): JSONRPCMessage {
  return errorAnswer(id, "the event stream of its answer ended without it", { [STREAM_ENDED]: true });
}

/**
 * The error answer to request `id` whose event stream ended without its answer after an event id,
 * and was not resumed from it, for the `reason` given (see `notResumedReasonOf`).
 */
export function notResumedAnswer(id: RequestId, reason: string): JSONRPCMessage {
  return errorAnswer(id, `the event stream of its answer ended without it, and was not resumed: ${reason}`, {
    [NOT_RESUMED]: reason,
  });
}

/**
 * The error answer to request `id` whose POST was answered without its answer, `how` (see
 * `postUnansweredReasonOf`).
 */
export function postUnansweredAnswer(id: RequestId, how: string): JSONRPCMessage {
  return errorAnswer(id, `its POST was answered without its answer: ${how}`, { [POST_UNANSWERED]: how });
}
