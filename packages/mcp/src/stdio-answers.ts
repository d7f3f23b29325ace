import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  deserializeMessage,
  ReadBuffer,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
} from "@modelcontextprotocol/sdk/shared/stdio.js";
import {
  ErrorCode,
  JSONRPCErrorResponseSchema,
  type JSONRPCMessage,
  JSONRPCResultResponseSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { schemaIssuesOf } from "./schema-issues.js";

/**
 * The schema errors of the answers {@link BrokenAnswerReader} turned into error answers: what
 * `brokenAnswerOf` knows them by (a server cannot send one of these objects).
 */
const brokenAnswers = new WeakSet<object>();

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

/** The schema error of an answer the server sent broken, from the `McpError` its request failed with. */
export function brokenAnswerOf(error: unknown): object | undefined {
  const data = error instanceof McpError ? (error.data as unknown) : undefined;
  return typeof data === "object" && data !== null && brokenAnswers.has(data) ? data : undefined;
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
      const answer = errorAnswerFor(line);
      if (answer === undefined) throw error;
      return answer;
    }
  }

  clear(): void {
    this.#buffer = undefined;
  }
}

/**
 * An error answer to the request `line` answers, when it is an answer (an object with an `id` the
 * SDK's requests have, a `result` or an `error`, and no `method`) that breaks the schema.
 */
function errorAnswerFor(line: string): JSONRPCMessage | undefined {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof message !== "object" || message === null || "method" in message) return undefined;
  const { id } = message as { id?: unknown };
  if (!(typeof id === "string" || Number.isSafeInteger(id))) return undefined;
  if (!("result" in message || "error" in message)) return undefined;
  const schema = "result" in message ? JSONRPCResultResponseSchema : JSONRPCErrorResponseSchema;
  const parsed = schema.safeParse(message);
  if (parsed.success) return undefined;
  brokenAnswers.add(parsed.error);
  return {
    jsonrpc: "2.0",
    id: id as string | number,
    error: {
      code: ErrorCode.InternalError,
      message: `its answer breaks the MCP schema: ${schemaIssuesOf(parsed.error)}`,
      data: parsed.error,
    },
  };
}
