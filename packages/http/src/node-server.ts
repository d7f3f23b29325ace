import { once } from "node:events";
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { ReadableStream } from "node:stream/web";
import {
  InvalidConfigError,
  isLogger,
  LONGEST_TIMER_MS,
  type Logger,
  ownOptions,
  silentLogger,
} from "@agent-core/core";
import { logError } from "./log-error.js";

/** A running Node HTTP server around a Fetch API handler. */
export interface NodeServer {
  /** `http://host:port` it listens on. */
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

export interface ServeNodeOptions {
  /** Default 0: any free port (`url` says which). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  logger?: Logger;
  /**
   * How long a response may wait for the client to take more of its body (default 60,000 ms): a
   * client that stops reading for longer, its connection full, is let go (the connection closed,
   * the body cancelled, as for a client that went away), so it holds neither a socket nor what
   * the body reads from (a run's event log) for ever. A reader that reads, however slowly, keeps
   * its connection; a stream's heartbeats keep an idle one going.
   */
  stalledWriteMs?: number;
}

/**
 * Serves a Fetch API handler (such as `createAgentServer(...).fetch`) with Node's own `http`
 * module. Response bodies are written as the client takes them (a slow client slows the reading of
 * the body, never grows a buffer; one that takes nothing for `stalledWriteMs` is let go), and a
 * client that goes away cancels the body and aborts `request.signal`. What the handler leaves
 * unread of a request's body (a request it refused) is read and dropped once the response went
 * out, as Node does, so the connection takes the next request.
 */
export async function serveNode(
  handler: (request: Request) => Promise<Response>,
  given: ServeNodeOptions = {},
): Promise<NodeServer> {
  if (typeof handler !== "function")
    throw new InvalidConfigError("serveNode() needs a handler: a function from a Request to a Response.");
  const options = ownOptions("serveNode() options", given, ["port", "host", "logger", "stalledWriteMs"]);
  // Refused as createAgentServer refuses it: a logger without its levels would lose every line.
  if (options.logger !== undefined && !isLogger(options.logger))
    throw new InvalidConfigError("serveNode(): logger must have error, warn, info and debug methods.");
  const logger = options.logger ?? silentLogger;
  // Checked here, as the others are: Node's own checks throw a RangeError, or none (a host of 5).
  const { port = 0, host = "127.0.0.1" } = options;
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new InvalidConfigError(
      `serveNode(): port must be a whole number from 0 to 65535, got ${String(port)}.`,
    );
  if (typeof host !== "string" || host === "")
    throw new InvalidConfigError(`serveNode(): host must be a non-empty string, got ${String(host)}.`);
  const stalledWriteMs = options.stalledWriteMs ?? 60_000;
  if (!Number.isInteger(stalledWriteMs) || stalledWriteMs < 1 || stalledWriteMs > LONGEST_TIMER_MS)
    throw new InvalidConfigError(
      `serveNode(): stalledWriteMs must be a whole number of ms from 1 to ${LONGEST_TIMER_MS}, got ${String(stalledWriteMs)}.`,
    );
  /** Each connection's response in progress, so that a parse error never writes into one begun. */
  const inProgress = new WeakMap<Socket, ServerResponse>();
  const server = createServer((req, res) => {
    inProgress.set(req.socket, res);
    res.once("close", () => {
      if (inProgress.get(req.socket) === res) inProgress.delete(req.socket);
    });
    void respond(handler, req, res, logger, stalledWriteMs);
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) =>
    refuseUnparsed(error, socket, inProgress.get(socket)),
  );
  // Without a listener Node drops a CONNECT's connection without a word.
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    if (socket.writable) writeError(socket, 501, "not-implemented", unserved("CONNECT"));
    socket.destroy();
  });
  server.listen(port, host);
  await once(server, "listening");
  const bound = server.address() as AddressInfo;
  const boundHost = bound.address.includes(":") ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${boundHost}:${bound.port}`,
    server,
    close: () =>
      new Promise((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function respond(
  handler: (request: Request) => Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
  stalledWriteMs: number,
): Promise<void> {
  const aborted = new AbortController();
  // Node drains an unread body itself, but not one the handler began to read.
  res.once("finish", () => req.resume());
  res.once("close", () => {
    if (!res.writableFinished) aborted.abort(new Error("the client closed the connection"));
  });
  const response = await answer(handler, req, aborted.signal, logger);
  if (res.destroyed) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  try {
    res.writeHead(response.status, Object.fromEntries(response.headers));
  } catch (error) {
    // A status or header Node refuses (Response.error()'s 0, a control character): thrown here, it
    // was an unhandled rejection that ended the process, or a client left waiting for ever.
    logError(
      logger,
      { err: error, method: req.method, url: req.url },
      "agent-core http: the response was refused",
    );
    await response.body?.cancel().catch(() => {});
    const failed = { error: { code: "internal", message: "The server failed." } };
    res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify(failed));
    return;
  }
  if (response.body === null) {
    res.end();
    return;
  }
  // Headers now, not with the first chunk: a re-attached stream may wait long for its first event.
  res.flushHeaders();
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  res.once("close", cancel);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // Backpressure: wait until the socket took what it has before reading more.
      if (!res.write(value)) await drained(res, stalledWriteMs);
      if (res.destroyed) return;
    }
    res.end();
  } catch {
    // A socket error, or a client that took nothing for `stalledWriteMs`: let go of both ends.
    res.destroy();
    cancel();
  } finally {
    res.off("close", cancel);
  }
}

/**
 * What Node's parser refused (a body cut off before its `Content-Length`, malformed chunked
 * encoding, headers too large, a request slower than `headersTimeout`/`requestTimeout`), answered
 * as Node would (400, 431, 408) but in the JSON error shape the handler's refusals have. A socket
 * already gone, or whose response has begun, gets nothing written; the socket is destroyed either
 * way, as Node does: its parser cannot go on, and a slow client keeps no connection.
 */
function refuseUnparsed(error: NodeJS.ErrnoException, socket: Socket, response: ServerResponse | undefined) {
  if (socket.writable && response?.headersSent !== true) {
    const [status, code, message] =
      error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "headers-too-large", "The request's headers are too large."]
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? [408, "request-timeout", "The request did not arrive in time."]
          : [
              400,
              "malformed-request",
              "The request is not valid HTTP (a body cut off before its Content-Length, or malformed chunked encoding).",
            ];
    writeError(socket, status, code, message);
  }
  socket.destroy();
}

/** An error in the JSON shape, written on a socket Node gave up parsing or handed over (CONNECT). */
function writeError(socket: Socket, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

const unserved = (method: string) => `${method} requests are not served here.`;

/** The handler's response; 400 for a request no `Request` can be made of, 500 when the handler threw. */
async function answer(
  handler: (request: Request) => Promise<Response>,
  req: IncomingMessage,
  signal: AbortSignal,
  logger: Logger,
): Promise<Response> {
  // The Fetch API makes no `Request` of a TRACE (nor of a CONNECT, which Node hands to its own
  // event, nor of a TRACK, which its parser refuses): no handler can serve one.
  if (req.method === "TRACE") {
    const error = { code: "not-implemented", message: unserved("TRACE") };
    return Response.json({ error }, { status: 501 });
  }
  let request: Request;
  try {
    request = toRequest(req, signal);
  } catch {
    // A Host header no URL can be made of (`a b`, `user@host`): the client's mistake, not a 500.
    const message = "The request's Host and target make no URL.";
    return Response.json({ error: { code: "invalid-request", message } }, { status: 400 });
  }
  try {
    return await handler(request);
  } catch (error) {
    logError(logger, { err: error, method: req.method, url: req.url }, "agent-core http: the handler threw");
    return Response.json({ error: { code: "internal", message: "The server failed." } }, { status: 500 });
  }
}

/**
 * Resolves once the socket took what was written, or the response closed; rejects on its error,
 * or when the socket took nothing for `stalledMs` (the caller then destroys the response).
 */
function drained(res: ServerResponse, stalledMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    // Removed after each wait: a slow reader waits thousands of times on one response.
    const settle = (error?: Error) => {
      clearTimeout(stalled);
      res.off("drain", onDrain).off("close", onDrain).off("error", settle);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onDrain = () => settle();
    const stalled = setTimeout(
      () => settle(new Error(`the client took nothing for ${stalledMs} ms (stalledWriteMs)`)),
      stalledMs,
    );
    res.on("drain", onDrain).on("close", onDrain).on("error", settle);
  });
}

function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const target = req.url ?? "/";
  // The absolute form (`GET http://host/path`, what a proxy may send, and HTTP/1.1 servers must
  // take) is the URL itself: glued after the Host, its path became `//host/path`, a 404.
  const url = /^https?:\/\//i.test(target) ? target : `http://${req.headers.host ?? "localhost"}${target}`;
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(url, {
    method: req.method,
    headers,
    signal,
    // Read only when the handler reads it, and cancelled without destroying the socket (unlike
    // Readable.toWeb): the response to a refused body must still reach the client.
    ...(hasBody
      ? { body: ReadableStream.from(req.iterator({ destroyOnReturn: false })), duplex: "half" }
      : {}),
  } as RequestInit);
}
