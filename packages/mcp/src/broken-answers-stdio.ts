import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import {
  ErrorCode,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { messagesReadFrom } from "./broken-answers.js";

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
