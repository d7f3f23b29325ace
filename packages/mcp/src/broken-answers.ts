import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  deserializeMessage,
  ReadBuffer,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
} from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  JSONRPCErrorResponseSchema,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  JSONRPCResultResponseSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { schemaIssuesOf } from "./schema-issues.js";

/**
 * The key of an error answer's `data` that holds the schema issues of the broken answer it stands
 * for. It goes through JSON (an HTTP answer is rewritten as text), so it is a name, not an object
 * of the client's: a server could send one, and would only choose how its own error reads.
 */
const BROKEN_ANSWER = "agent-core/broken-answer";

/**
 * Has a stdio transport read an answer that breaks JSON-RPC's schema (`"result": null`, an
 * `"error"` that is a string) as an error answer to the request it names, so that the request
 * fails at once. The SDK's transport drops such a line and tells its `onerror` a schema error that
 * names no request, so the request would wait for its timeout (`callTimeoutMs`).
 *
 * The SDK reads the lines with a `ReadBuffer` of a private field, `_readBuffer`: it is replaced
 * when it is there, and otherwise (another version of the SDK) the SDK's own reading stays.
 */
export function readBrokenAnswers(transport: StdioClientTransport): void {
  const fields = transport as unknown as { _readBuffer?: unknown };
  if (fields._readBuffer instanceof ReadBuffer) fields._readBuffer = new BrokenAnswerReader();
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
 * The SDK's `ReadBuffer` (one JSON-RPC message a line, at most its 10 MiB buffered), but a line
 * that answers a request and breaks the schema is read as an error answer to that request. Any
 * other line that is no message (a log line on stdout) throws, as the SDK's does: the transport
 * tells `onerror` and reads on.
 */
class BrokenAnswerReader {
  #buffer: Buffer | undefined;

  append(chunk: Buffer): void {
    if ((this.#buffer?.length ?? 0) + chunk.length > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes`);
    }
    this.#buffer = this.#buffer === undefined ? chunk : Buffer.concat([this.#buffer, chunk]);
  }

  readMessage(): JSONRPCMessage | null {
    const end = this.#buffer?.indexOf("\n") ?? -1;
    if (this.#buffer === undefined || end === -1) return null;
    const line = this.#buffer.toString("utf8", 0, end).replace(/\r$/, "");
    this.#buffer = this.#buffer.subarray(end + 1);
    try {
      return deserializeMessage(line);
    } catch (error) {
      const answer = errorAnswerFor(parsedOrUndefined(line));
      if (answer === undefined) throw error;
      return answer;
    }
  }

  clear(): void {
    this.#buffer = undefined;
  }
}

/**
 * `fetch` for the Streamable HTTP transport that makes an answer that breaks JSON-RPC's schema
 * (`"result": null`) an error answer to the request it names, in a POST's JSON answer or its event
 * stream, as `readBrokenAnswers` does over stdio. The SDK's transport drops such an event (the
 * call waits for its timeout), and fails a JSON answer with zod's union error, which names no field.
 */
export function brokenAnswerFetch(base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (init?.method !== "POST" || !response.ok || response.body === null) return response;
    const type = response.headers.get("content-type") ?? "";
    if (type.startsWith("text/event-stream"))
      return withBody(
        response,
        response.body
          .pipeThrough(new TextDecoderStream())
          .pipeThrough(eventsWithErrorAnswers())
          .pipeThrough(new TextEncoderStream()),
      );
    if (type.startsWith("application/json"))
      return withBody(response, jsonWithErrorAnswers(await response.text()));
    return response;
  };
}

function withBody(response: Response, body: BodyInit): Response {
  const headers = new Headers(response.headers);
  headers.delete("content-length"); // the body may have been rewritten
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** A JSON answer (one message, or a batch) with its broken answers made error answers. */
function jsonWithErrorAnswers(text: string): string {
  const value = parsedOrUndefined(text);
  if (value === undefined) return text; // the SDK says it is no JSON
  const messages: unknown[] = Array.isArray(value) ? value : [value];
  if (messages.every(isMessage)) return text;
  const read = messages.map((message) =>
    isMessage(message) ? message : (errorAnswerFor(message) ?? message),
  );
  return JSON.stringify(Array.isArray(value) ? read : read[0]);
}

/**
 * Server-sent events with the data of each that is a broken answer replaced by an error answer;
 * everything else as it came (line breaks as `\n`: `\r\n` and `\r` mean the same to the SDK's
 * parser). An event goes on once its blank line came; what is left at the end, as it is.
 */
function eventsWithErrorAnswers(): TransformStream<string, string> {
  /** The current line so far. */
  let line = "";
  /** The last chunk ended with `\r`: a `\n` next belongs to that line break. */
  let afterCR = false;
  /** The current event's lines. */
  let event: string[] = [];
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
        out += `${withErrorAnswer(event).join("\n")}${event.length > 0 ? "\n" : ""}\n`;
        event = [];
      }
      if (out !== "") controller.enqueue(out);
    },
    flush(controller) {
      const rest = [...event, line].join("\n");
      if (rest !== "") controller.enqueue(rest);
    },
  });
}

/** An event's lines, with its `data:` lines replaced by an error answer's when they are a broken answer. */
function withErrorAnswer(event: string[]): string[] {
  const isData = (line: string) => line === "data" || line.startsWith("data:");
  const data = event.filter(isData).map((line) => line.slice(5).replace(/^ /, ""));
  if (data.length === 0) return event;
  const message = parsedOrUndefined(data.join("\n"));
  if (isMessage(message)) return event;
  const answer = errorAnswerFor(message);
  if (answer === undefined) return event;
  return [...event.filter((line) => !isData(line)), `data: ${JSON.stringify(answer)}`];
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
