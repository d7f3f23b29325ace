import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
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
 * Has a stdio transport read an answer that breaks JSON-RPC's schema (`"result": null`, an
 * `"error"` that is a string) as an error answer to the request it names, so that the request
 * fails at once; and an error answer that names no request (`"id": null`, or no `id`, as MCP's
 * schema allows) that is a parse error or an invalid request (-32700, -32600: JSON-RPC's errors for
 * a request whose id the server could not read) as one to every request still waiting, since
 * nothing tells which of them it could not read. With another code it is left as it is: the server
 * read the message, so it answered one with no id, a notification (against JSON-RPC's rules; the
 * cancel of a call, say), and no request of ours. The SDK's transport drops the first (its
 * `onerror` is told a schema error that names no request) and its client the second ("a response
 * for an unknown message ID"), so the requests would wait for their timeout (`callTimeoutMs`).
 *
 * The SDK reads the lines with a `ReadBuffer` of a private field, `_readBuffer`: it is replaced
 * when it is there, and otherwise (another version of the SDK) the SDK's own reading stays. The
 * requests waiting are those `send` sent that no answer, and no cancel, has ended yet.
 */
export function readBrokenAnswers(transport: StdioClientTransport): void {
  const fields = transport as unknown as { _readBuffer?: unknown };
  if (!(fields._readBuffer instanceof ReadBuffer)) return;
  const waiting = new WaitingRequests();
  const send = transport.send.bind(transport);
  transport.send = (message) => {
    waiting.sent(message);
    return send(message);
  };
  fields._readBuffer = new BrokenAnswerReader(waiting);
}

/** The ids of the requests a client sent that no answer, and no `notifications/cancelled`, has ended yet. */
class WaitingRequests {
  readonly #ids = new Set<RequestId>();

  sent(message: JSONRPCMessage): void {
    if (!("method" in message)) return; // the client's answer to a request of the server's
    if ("id" in message) this.#ids.add(message.id);
    else if (message.method === "notifications/cancelled") {
      const { requestId } = (message.params ?? {}) as { requestId?: RequestId };
      if (requestId !== undefined) this.#ids.delete(requestId);
    }
  }

  answered(message: JSONRPCMessage): void {
    if (!("method" in message) && message.id !== undefined) this.#ids.delete(message.id);
  }

  get ids(): RequestId[] {
    return [...this.#ids];
  }
}

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

/** Whether `error` is an `McpError` from an error answer made here, whose `data` has `key`. */
function isMarked(error: unknown, key: string): boolean {
  const data =
    error instanceof McpError ? (error.data as Record<string, unknown> | null | undefined) : undefined;
  return data?.[key] === true;
}

/**
 * The SDK's `ReadBuffer` (one JSON-RPC message a line, at most its 10 MiB buffered), but a line
 * that answers a request and breaks the schema is read as an error answer to that request, and an
 * error answer that names no request, for one it could not read, as one to each request waiting.
 * Any other line that is no message (a log line on stdout) throws, as the SDK's does: the
 * transport tells `onerror` and reads on.
 */
class BrokenAnswerReader {
  readonly #waiting: WaitingRequests;
  #buffer: Buffer | undefined;
  /** Messages read from one line that are still to be given, after the first. */
  readonly #read: JSONRPCMessage[] = [];

  constructor(waiting: WaitingRequests) {
    this.#waiting = waiting;
  }

  append(chunk: Buffer): void {
    if ((this.#buffer?.length ?? 0) + chunk.length > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes`);
    }
    this.#buffer = this.#buffer === undefined ? chunk : Buffer.concat([this.#buffer, chunk]);
  }

  readMessage(): JSONRPCMessage | null {
    const next = this.#read.shift();
    if (next !== undefined) return next;
    const end = this.#buffer?.indexOf("\n") ?? -1;
    if (this.#buffer === undefined || end === -1) return null;
    const line = this.#buffer.toString("utf8", 0, end).replace(/\r$/, "");
    this.#buffer = this.#buffer.subarray(end + 1);
    // Throws the SDK's own errors for a line that is no JSON, or no message.
    const read = messagesReadFrom(JSON.parse(line), ({ code }) =>
      code === ErrorCode.ParseError || code === ErrorCode.InvalidRequest ? this.#waiting.ids : [],
    ).map((message) => JSONRPCMessageSchema.parse(message));
    for (const message of read) this.#waiting.answered(message);
    this.#read.push(...read);
    return this.#read.shift() ?? null;
  }

  clear(): void {
    this.#buffer = undefined;
    this.#read.length = 0;
  }
}

/**
 * `fetch` for the Streamable HTTP transport that makes an answer that breaks JSON-RPC's schema
 * (`"result": null`) an error answer to the request it names, and an error answer that names no
 * request (`"id": null`) one to the request the POST carried, in a POST's JSON answer or its event
 * stream, as `readBrokenAnswers` does over stdio. The SDK's transport drops such an event (the call
 * waits for its timeout), and fails a JSON answer with zod's union error, which names no field.
 *
 * A GET's event stream is read so too: a server sends its own requests and notifications on it,
 * but also the answers of a POST's stream that the client resumes on it (`Last-Event-ID`), after
 * the stream broke off or the server closed it early. A GET carries no request, so an error
 * answer on it that names none stays as it is (the SDK drops it): a server that could not read
 * a POST says so in the POST's own answer.
 */
export function brokenAnswerFetch(base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    const method = init?.method ?? "GET";
    if ((method !== "POST" && method !== "GET") || !response.ok || response.body === null) return response;
    // The requests this POST carried: what it is answered is theirs, named or not.
    const posted = method === "POST" ? requestIdsIn(init?.body) : [];
    const type = response.headers.get("content-type") ?? "";
    if (type.startsWith("text/event-stream"))
      return withBody(
        response,
        response.body
          .pipeThrough(new TextDecoderStream())
          .pipeThrough(eventsWithErrorAnswers(posted))
          .pipeThrough(new TextEncoderStream()),
      );
    if (method === "POST" && type.startsWith("application/json"))
      return withBody(response, jsonWithErrorAnswers(await response.text(), posted));
    return response;
  };
}

/** The ids of the requests in a POST's body (the SDK's client sends one message as a JSON string). */
function requestIdsIn(body: unknown): RequestId[] {
  const value = typeof body === "string" ? parsedOrUndefined(body) : undefined;
  const messages: unknown[] = Array.isArray(value) ? value : [value];
  return messages.flatMap((message) => {
    if (typeof message !== "object" || message === null || !("method" in message)) return [];
    const { id } = message as { id?: unknown };
    return typeof id === "string" || typeof id === "number" ? [id] : [];
  });
}

function withBody(response: Response, body: BodyInit): Response {
  const headers = new Headers(response.headers);
  headers.delete("content-length"); // the body may have been rewritten
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** A JSON answer (one message, or a batch) as `messagesReadFrom` reads each of its messages. */
function jsonWithErrorAnswers(text: string, posted: readonly RequestId[]): string {
  const value = parsedOrUndefined(text);
  if (value === undefined) return text; // the SDK says it is no JSON
  const messages: unknown[] = Array.isArray(value) ? value : [value];
  const read = messages.flatMap((message) => messagesReadFrom(message, () => posted));
  if (read.length === messages.length && read.every((message, i) => message === messages[i])) return text;
  return JSON.stringify(Array.isArray(value) || read.length > 1 ? read : read[0]);
}

/**
 * Server-sent events with the data of each read as `messagesReadFrom` reads it (an event for each
 * message it gives); everything else as it came (line breaks as `\n`: `\r\n` and `\r` mean the
 * same to the SDK's parser). An event goes on once its blank line came.
 *
 * A POST's stream that ends before the answers of its requests, and gave no event id, ends with an
 * error answer to each: the SDK resumes a stream (a GET with `Last-Event-ID`) from an event id
 * only, and a server sends answers on no other stream, so they could not come and the requests
 * would wait for their timeout (`callTimeoutMs`).
 */
function eventsWithErrorAnswers(posted: readonly RequestId[]): TransformStream<string, string> {
  /** The current line so far. */
  let line = "";
  /** The last chunk ended with `\r`: a `\n` next belongs to that line break. */
  let afterCR = false;
  /** The current event's lines. */
  let event: string[] = [];
  /** The posted requests no event has answered yet. */
  const unanswered = new Set(posted);
  /** An event gave an id, which the SDK resumes the stream from when it ends. */
  let resumable = false;
  return new TransformStream<string, string>({
    transform(chunk, controller) {
      let text = chunk;
      if (afterCR && text.startsWith("\n")) text = text.slice(1);
      afterCR = text.endsWith("\r");
      const lines = (line + text).split(/\r\n|\r|\n/);
      line = lines.pop() ?? "";
      let out = "";
      for (const complete of lines) {
        if (complete !== "") {
          event.push(complete);
          continue;
        }
        for (const read of eventsReadFrom(event, posted)) {
          out += `${read.lines.join("\n")}${read.lines.length > 0 ? "\n" : ""}\n`;
          unanswered.delete(answeredIdOf(read.message) as RequestId);
        }
        resumable ||= givesEventId(event);
        event = [];
      }
      if (out !== "") controller.enqueue(out);
    },
    // What is left is an event with no blank line after it, which the SDK's parser drops.
    flush(controller) {
      if (resumable) return;
      for (const id of unanswered)
        controller.enqueue(
          `data: ${JSON.stringify({
            jsonrpc: "2.0",
            id,
            error: {
              code: ErrorCode.InternalError,
              message: "the event stream of its answer ended without it",
              data: { [STREAM_ENDED]: true },
            },
          })}\n\n`,
        );
    },
  });
}

/**
 * An event's lines, as they are when its data is a message; else, when `messagesReadFrom` reads
 * its data as other messages, an event of the same lines for each, its `data:` lines replaced.
 * Each with the message of its data.
 */
function eventsReadFrom(
  event: string[],
  posted: readonly RequestId[],
): { lines: string[]; message: unknown }[] {
  const data = event.filter(isDataLine).map((line) => line.slice(5).replace(/^ /, ""));
  if (data.length === 0) return [{ lines: event, message: undefined }];
  const message = parsedOrUndefined(data.join("\n"));
  const read = messagesReadFrom(message, () => posted);
  if (read.length === 1 && read[0] === message) return [{ lines: event, message }];
  const rest = event.filter((line) => !isDataLine(line));
  return read.map((answer) => ({ lines: [...rest, `data: ${JSON.stringify(answer)}`], message: answer }));
}

function isDataLine(line: string): boolean {
  return line === "data" || line.startsWith("data:");
}

/** Whether the SDK's parser gives the event with an id: it has data, and an `id:` line with a value. */
function givesEventId(event: string[]): boolean {
  return event.some(isDataLine) && event.some((line) => /^id: ?./.test(line));
}

/** The id of the request `message` answers, if it is an answer. */
function answeredIdOf(message: unknown): unknown {
  if (typeof message !== "object" || message === null || "method" in message) return undefined;
  return (message as { id?: unknown }).id;
}

/**
 * `message` as the client is to read it: an error answer that names no request as an error answer
 * to each request `answeredBy` its error gives (the requests it may answer; when none, as it is),
 * an answer that breaks the schema as an error answer to the request it names, anything else as it is.
 */
function messagesReadFrom(
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

function parsedOrUndefined(text: string): unknown {
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
  return {
    jsonrpc: "2.0",
    id: id as string | number,
    error: {
      code: ErrorCode.InternalError,
      message: `its answer breaks the MCP schema: ${schemaIssuesOf(parsed.error)}`,
      data: { [BROKEN_ANSWER]: parsed.error.issues },
    },
  };
}
