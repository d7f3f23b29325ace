import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { InvalidConfigError, LONGEST_TIMER_MS } from "@agent-core/core";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  type AgentMcpServerOptions,
  checkServerOptions,
  SERVER_KEYS,
  serveAgent,
} from "./agent-mcp-server.js";

export interface AgentMcpHttpOptions extends AgentMcpServerOptions {
  /**
   * The `Host` values to answer (with the port: `"localhost:3000"`, in any case); any other, or
   * none, gets 403, and an empty list answers no request. Set it when serving on localhost: a web
   * page can reach a local server through DNS rebinding, under a host name of its own.
   */
  allowedHosts?: readonly string[];
  /**
   * The `Origin` values to answer when a request has one (a browser's: `"http://localhost:3000"`);
   * any other gets 403. A request without an `Origin` is not checked.
   */
  allowedOrigins?: readonly string[];
  /**
   * How long a session is kept once no request used it and no call of it runs (default 600000 ms,
   * 10 minutes); then it is closed, and a request naming it is answered 404.
   */
  sessionIdleMs?: number;
}

/** The keys of `AgentMcpHttpOptions`: a misspelt `allowedHosts` would otherwise leave every host let in. */
const HTTP_KEYS = [
  ...SERVER_KEYS,
  "allowedHosts",
  "allowedOrigins",
  "sessionIdleMs",
] as const satisfies readonly (keyof AgentMcpHttpOptions)[];

/** As the SDK's transport reads a body: at most 4 MiB. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** A client's session: its server knows its calls, so a cancel (a POST of its own) reaches the call. */
interface Session {
  readonly server: McpServer;
  readonly transport: StreamableHTTPServerTransport;
  calls: number;
  timer: NodeJS.Timeout | undefined;
}

/** What a call learns of the POST it came in: a drop of that connection aborts the call's run. */
interface Arrival {
  readonly response: ServerResponse;
  readonly session: Session | undefined;
}

/**
 * `createAgentMcpServer(options)` over Streamable HTTP, as a Node request handler: for
 * `http.createServer(handler)`, or a framework's route (with the body it parsed). An `initialize`
 * opens a session (`Mcp-Session-Id`), so the client's `notifications/cancelled`, sent in a POST of
 * its own, reaches the call it cancels; a POST with no session and no `initialize` is answered by a
 * server of its own, statelessly. Either way a POST whose connection drops before its answer
 * aborts the runs it started (the SDK's transport would keep them going for a client that resumes
 * the stream, which this server does not offer). DELETE ends a session; GET answers 405. It checks
 * no credentials: serve it behind your own; `allowedHosts` and `allowedOrigins` refuse requests
 * for other hosts and from other origins (403).
 */
export function createAgentMcpHttpHandler(
  options: AgentMcpHttpOptions,
): (request: IncomingMessage, response: ServerResponse, parsedBody?: unknown) => Promise<void> {
  checkServerOptions(options, HTTP_KEYS, "createAgentMcpHttpHandler()");
  // A string would be searched as text: "http://localhost:3000" would let in the origin "http://localhost:3".
  for (const key of ["allowedHosts", "allowedOrigins"] as const) {
    const list: unknown = options[key];
    if (list !== undefined && !(Array.isArray(list) && list.every((entry) => typeof entry === "string")))
      throw new InvalidConfigError(
        `createAgentMcpHttpHandler(): ${key} must be an array of strings, got ${JSON.stringify(list)}.`,
      );
  }
  const idleMs = options.sessionIdleMs ?? 600_000;
  if (!Number.isSafeInteger(idleMs) || idleMs < 1 || idleMs > LONGEST_TIMER_MS)
    throw new InvalidConfigError(
      `createAgentMcpHttpHandler(): sessionIdleMs must be a whole number of ms >= 1 and <= ${LONGEST_TIMER_MS}, got ${idleMs}.`,
    );
  // Checked here, as given: the SDK's own check (deprecated) takes an empty list as no check at all.
  const allowedHosts = options.allowedHosts?.map((host) => host.toLowerCase());
  const { allowedOrigins } = options;
  const sessions = new Map<string, Session>();
  const arrivals = new AsyncLocalStorage<Arrival>();

  const callSignal = (signal: AbortSignal): { signal: AbortSignal; done: () => void } => {
    const arrival = arrivals.getStore();
    if (arrival === undefined) return { signal, done: () => {} };
    const { response, session } = arrival;
    const dropped = new AbortController();
    const onClose = () => {
      if (!response.writableFinished)
        dropped.abort(new Error("the client's connection dropped before the answer"));
    };
    if (response.closed) onClose();
    else response.once("close", onClose);
    if (session !== undefined) {
      session.calls++;
      touch(session);
    }
    return {
      signal: AbortSignal.any([signal, dropped.signal]),
      done: () => {
        response.off("close", onClose);
        if (session === undefined) return;
        session.calls--;
        touch(session);
      },
    };
  };

  /** Starts the session's idle time again; a session with a call running is never closed. */
  const touch = (session: Session) => {
    clearTimeout(session.timer);
    session.timer = setTimeout(() => {
      if (session.calls > 0) touch(session);
      else void session.transport.close();
    }, idleMs);
    session.timer.unref();
  };

  const openSession = async (): Promise<Session> => {
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, session);
        touch(session);
      },
    });
    const session: Session = {
      server: serveAgent(options, callSignal),
      transport,
      calls: 0,
      timer: undefined,
    };
    transport.onclose = () => {
      clearTimeout(session.timer);
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      void session.server.close();
    };
    await session.server.connect(transport);
    return session;
  };

  return async (request, response, parsedBody) => {
    const refuse = (status: number, message: string, headers: Record<string, string> = {}, code = -32000) => {
      const refusal = { jsonrpc: "2.0", error: { code, message }, id: null };
      response.writeHead(status, { ...headers, "content-type": "application/json" });
      response.end(JSON.stringify(refusal));
    };
    const { host, origin } = request.headers;
    if (allowedHosts !== undefined && !allowedHosts.includes(host?.toLowerCase() ?? ""))
      return refuse(403, `Invalid Host header: ${host ?? "(none)"}`);
    if (allowedOrigins !== undefined && origin !== undefined && !allowedOrigins.includes(origin))
      return refuse(403, `Invalid Origin header: ${origin}`);
    const sessionId = request.headers["mcp-session-id"];
    if (request.method === "DELETE" && sessionId === undefined)
      return refuse(405, "Method not allowed.", { allow: "POST, DELETE" });
    if (request.method !== "POST" && request.method !== "DELETE")
      return refuse(405, "Method not allowed.", { allow: "POST, DELETE" });
    if (sessionId !== undefined) {
      const session = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
      if (session === undefined) return refuse(404, "Session not found.", {}, -32001);
      touch(session);
      return arrivals.run({ response, session }, () =>
        session.transport.handleRequest(request, response, parsedBody),
      );
    }
    let body = parsedBody;
    if (body === undefined) {
      const read = await readJson(request);
      if (read.kind === "too-large")
        return refuse(413, `Payload Too Large: Request body must not exceed ${MAX_BODY_BYTES} bytes`);
      if (read.kind === "invalid") return refuse(400, "Parse error: Invalid JSON", {}, -32700);
      if (read.kind === "dropped") return;
      body = read.body;
    }
    if (isInitialize(body)) {
      const session = await openSession();
      return arrivals.run({ response, session }, () =>
        session.transport.handleRequest(request, response, body),
      );
    }
    const server = serveAgent(options, callSignal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // Once the answer is sent, nothing of this server is needed.
    response.once("close", () => void server.close());
    await server.connect(transport);
    await arrivals.run({ response, session: undefined }, () =>
      transport.handleRequest(request, response, body),
    );
  };
}

function isInitialize(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some(
    (message) => typeof message === "object" && message !== null && message.method === "initialize",
  );
}

async function readJson(
  request: IncomingMessage,
): Promise<
  { kind: "json"; body: unknown } | { kind: "too-large" } | { kind: "invalid" } | { kind: "dropped" }
> {
  if (Number(request.headers["content-length"]) > MAX_BODY_BYTES) return { kind: "too-large" };
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    for await (const chunk of request as AsyncIterable<Buffer>) {
      received += chunk.byteLength;
      if (received > MAX_BODY_BYTES) return { kind: "too-large" };
      chunks.push(chunk);
    }
  } catch {
    // The client went away mid-body: no one is left to answer.
    return { kind: "dropped" };
  }
  try {
    return { kind: "json", body: JSON.parse(Buffer.concat(chunks).toString("utf8")) };
  } catch {
    return { kind: "invalid" };
  }
}
