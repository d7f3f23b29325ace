import "@agent-core/agentic";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, type ToolResultMessage } from "@agent-core/core";
import { connectMcp, type McpConnection, type McpServerConfig, McpServerError } from "@agent-core/mcp";
import { script, scriptedModel } from "@agent-core/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { brokenAnswerTo } from "./broken-answers.js";
import { brokenAnswerServer, fixtureServer, startHttpFixture } from "./servers.js";

// The fault cases, against the fixture server (the SDK's server API) over both transports:
// cancellation on abort and on timeouts, a server killed mid-call, error results.

function resultsOf(messages: readonly { role: string }[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
}

/** What the server says it received as `notifications/cancelled`, asked over the same connection. */
async function cancellationsSeen(mcp: McpConnection): Promise<{ tool: string; reason: string }[]> {
  const result = await mcp.callTool("cancellations", {}, new AbortController().signal);
  return JSON.parse((result.content[0] as { text: string }).text);
}

async function serverPid(mcp: McpConnection): Promise<number> {
  const result = await mcp.callTool("pid", {}, new AbortController().signal);
  return Number((result.content[0] as { text: string }).text);
}

const http = { fixture: undefined as Awaited<ReturnType<typeof startHttpFixture>> | undefined };
beforeAll(async () => {
  http.fixture = await startHttpFixture();
});
afterAll(() => http.fixture?.stop());

const transports: [string, () => McpServerConfig][] = [
  ["stdio", fixtureServer],
  ["Streamable HTTP", () => ({ url: http.fixture?.url as string })],
];

describe.each(transports)("the fixture server over %s", (_transport, server) => {
  it("cancels the call when the run is aborted: the server receives notifications/cancelled", async () => {
    await using mcp = await connectMcp(server());
    const provider = scriptedModel([[script.toolCall("wait", { ms: 30_000 })], [script.text("never")]]);
    const agent = new Agent({ provider, tools: await mcp.tools() });
    agent.on("tool_call", () => setTimeout(() => agent.abort("the user left"), 100));
    const started = Date.now();
    const result = await agent.prompt("wait").result();
    expect(result.stopReason).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(resultsOf(result.messages)[0]?.status).toBe("aborted");
    await expect.poll(() => cancellationsSeen(mcp)).toContainEqual({ tool: "wait", reason: "the user left" });
  });

  it("cancels the call when timeouts.toolMs runs out, and the run goes on", async () => {
    await using mcp = await connectMcp(server());
    const provider = scriptedModel([
      [script.toolCall("wait", { ms: 30_000 })],
      [script.text("It took too long.")],
    ]);
    const agent = new Agent({ provider, tools: await mcp.tools(), timeouts: { toolMs: 200 } });
    const result = await agent.prompt("wait").result();
    expect(result.stopReason).toBe("completed");
    expect(resultsOf(result.messages)[0]).toMatchObject({
      status: "timeout",
      content: 'The tool "wait" timed out after 200 ms and was stopped.',
    });
    await expect
      .poll(() => cancellationsSeen(mcp))
      .toContainEqual({ tool: "wait", reason: expect.stringContaining("took longer than 200 ms") });
  });

  it("cancels a call the server does not answer within callTimeoutMs", async () => {
    await using mcp = await connectMcp(server(), { name: "slow", callTimeoutMs: 200 });
    const provider = scriptedModel([
      [script.toolCall("wait", { ms: 30_000 })],
      [script.text("The server is slow.")],
    ]);
    const result = await new Agent({ provider, tools: await mcp.tools() }).prompt("wait").result();
    expect(resultsOf(result.messages)[0]).toMatchObject({
      status: "error",
      content:
        'The MCP server "slow" did not answer "wait" within 200 ms (callTimeoutMs); the call was cancelled.',
    });
    await expect
      .poll(() => cancellationsSeen(mcp))
      .toContainEqual({ tool: "wait", reason: expect.stringContaining("Request timed out") });
  });

  it("maps isError, structuredContent and every kind of content block", async () => {
    await using mcp = await connectMcp(server());
    const provider = scriptedModel([
      [script.toolCall("fail", {}), script.toolCall("weather", {}), script.toolCall("media", {})],
      [script.text("done")],
    ]);
    const result = await new Agent({ provider, tools: await mcp.tools() }).prompt("go").result();
    const [fail, weather, media] = resultsOf(result.messages);
    expect(fail).toMatchObject({ status: "error", content: "the disk is full" });
    expect(weather).toMatchObject({
      status: "ok",
      content: '{"city":"Oslo","celsius":3}',
      details: { city: "Oslo", celsius: 3 },
    });
    expect(media?.content.split("\n")).toEqual([
      "a logo and its notes",
      "[image (image/png) not shown: agent-core gives the model text results]",
      '[resource file:///notes.txt "notes.txt": the notes]',
      "[resource file:///notes.txt]",
      "buy milk",
      "[resource file:///logo.png (image/png) not shown: agent-core gives the model text results]",
    ]);
  });

  it("gives a call whose server is killed an error result at once; the run completes, later calls and listing fail fast", async () => {
    // A server of its own: this one is killed.
    const own = _transport === "stdio" ? undefined : await startHttpFixture();
    try {
      await using mcp = await connectMcp(own ? { url: own.url } : server(), { name: "doomed" });
      const pid = await serverPid(mcp);
      const provider = scriptedModel([
        [script.toolCall("wait", { ms: 30_000 })],
        [script.toolCall("add", { a: 1, b: 2 })],
        [script.text("The server died.")],
      ]);
      const agent = new Agent({ provider, tools: await mcp.tools() });
      agent.on("tool_call", (event) => {
        if (event.toolName === "wait") setTimeout(() => process.kill(pid, "SIGKILL"), 200);
      });
      const started = Date.now();
      const result = await agent.prompt("wait, then add").result();
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(result.stopReason).toBe("completed");
      expect(resultsOf(result.messages).map(({ status, content }) => [status, content])).toEqual([
        ["error", 'The MCP server "doomed" went away during the call: its connection closed.'],
        ["error", 'The MCP server "doomed" is not connected: its connection closed.'],
      ]);
      await expect(mcp.tools()).rejects.toThrow(
        new McpServerError("doomed", "could not list its tools: it is not connected: its connection closed"),
      );
    } finally {
      own?.stop();
    }
  });
});

const httpServers: Server[] = [];
afterEach(() => {
  for (const http of httpServers.splice(0)) {
    http.closeAllConnections();
    http.close();
  }
});

/** A JSON-RPC message the client posted, as the test servers read it. */
type Posted = Parameters<typeof brokenAnswerTo>[0];

/**
 * A Streamable HTTP server of the test's own, on a free port, closed after the test: `post` answers
 * each POST, given the message it carried; `other` every other request (405 when not given).
 */
async function httpServer(
  post: (message: Posted, response: ServerResponse) => void | Promise<void>,
  other: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) =>
    void response.writeHead(405).end(),
): Promise<McpServerConfig> {
  const http = createServer(async (request, response) => {
    if (request.method !== "POST") return other(request, response);
    let body = "";
    for await (const chunk of request) body += chunk;
    await post(JSON.parse(body), response);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  httpServers.push(http);
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` };
}

/**
 * The answers of `broken-answers-http.ts` over Streamable HTTP, in this process: as a POST's JSON answer,
 * or as its event stream (with `\r\n` line breaks, each event cut in two chunks, one between its
 * `\r` and its `\n`).
 */
function brokenAnswersOverHttp(as: "json" | "sse"): Promise<McpServerConfig> {
  return httpServer(async (message, response) => {
    // A call of hang: its POST waits for an answer that never comes.
    if (message.params?.name === "hang") return;
    const answer = brokenAnswerTo(message);
    if (answer === undefined) return void response.writeHead(202).end();
    if (as === "json") {
      response.writeHead(200, { "content-type": "application/json" });
      return void response.end(JSON.stringify(answer));
    }
    response.writeHead(200, { "content-type": "text/event-stream" });
    const event = `event: message\r\ndata: ${JSON.stringify(answer)}\r\n\r\n`;
    response.write(event.slice(0, -3));
    await new Promise((resolve) => setTimeout(resolve, 10));
    response.end(event.slice(-3));
  });
}

const brokenAnswerServers: [string, () => Promise<McpServerConfig>][] = [
  ["stdio", async () => brokenAnswerServer()],
  ["Streamable HTTP, as JSON", () => brokenAnswersOverHttp("json")],
  ["Streamable HTTP, as events", () => brokenAnswersOverHttp("sse")],
];

describe.each(brokenAnswerServers)(
  "a server whose answer breaks JSON-RPC's schema, over %s",
  (transport, server) => {
    it("fails the call it answers at once, naming the fields, where the SDK would drop it until callTimeoutMs; the connection goes on", async () => {
      await using mcp = await connectMcp(await server(), { callTimeoutMs: 2_000 });
      const never = new AbortController().signal;
      await expect(mcp.callTool("null", {}, never)).rejects.toThrow(
        new Error(
          'The MCP server "broken-answer" answered "null" with a result that breaks the MCP schema: result: Invalid input: expected object, received null',
        ),
      );
      await expect(mcp.callTool("string-error", {}, never)).rejects.toThrow(
        new Error(
          'The MCP server "broken-answer" answered "string-error" with a result that breaks the MCP schema: error: Invalid input: expected object, received string',
        ),
      );
      // The broken answers (and over stdio the log lines on its stdout) changed nothing else.
      expect(await mcp.callTool("ok", {}, never)).toEqual({ content: [{ type: "text", text: "ok" }] });
    });

    it("fails a call at once with the server's error when the error answers no request (\"id\": null, or none); over stdio every call waiting, over HTTP the POST's own", async () => {
      const mcp = await connectMcp(await server(), { callTimeoutMs: 2_000 });
      const never = new AbortController().signal;
      const unaddressed = (what: string) =>
        new Error(
          `The MCP server "broken-answer" failed the call with an error that names no request (JSON-RPC's "id": null, for a request it could not read): ${what}`,
        );
      // Over stdio the error cannot tell which call it is for, so every call waiting fails with it.
      // Over HTTP it came in answer to one POST, which carried one call: the others wait on.
      const waiting = mcp.callTool("hang", {}, never).catch((error: unknown) => error);
      await expect(mcp.callTool("null-id", {}, never)).rejects.toThrow(
        unaddressed("MCP error -32700: Parse error"),
      );
      await expect(mcp.callTool("no-id", {}, never)).rejects.toThrow(
        unaddressed("MCP error -32600: Invalid Request"),
      );
      expect(await mcp.callTool("ok", {}, never)).toEqual({ content: [{ type: "text", text: "ok" }] });
      await mcp.close();
      expect(await waiting).toEqual(
        transport === "stdio"
          ? unaddressed("MCP error -32700: Parse error")
          : new Error('The MCP server "broken-answer" went away during the call: it was closed.'),
      );
    });
  },
);

describe("a stdio server that answers a notification with an error that names no request", () => {
  it("fails no call with it: only a parse error or an invalid request (-32700, -32600) says it could not read a request", async () => {
    await using mcp = await connectMcp(brokenAnswerServer(), { callTimeoutMs: 2_000 });
    const waiting = mcp.callTool("until-cancel", {}, new AbortController().signal);
    const cancel = new AbortController();
    const cancelled = mcp.callTool("hang", {}, cancel.signal);
    cancel.abort(new Error("no longer needed"));
    await expect(cancelled).rejects.toThrow("no longer needed");
    // The server answered the cancel with "id": null, -32601: a message it read, so no request of ours.
    expect(await waiting).toEqual({ content: [{ type: "text", text: "cancel seen" }] });
  });
});

/**
 * A server that answers a POST with an event stream it closes after a first event (an id, a retry
 * time, no data), as MCP's servers may do (2025-11-25): the client resumes it with a GET naming
 * that event (`Last-Event-ID`), and the answer comes on that GET's stream.
 */
function resumedAnswersOverHttp(): Promise<McpServerConfig> {
  const calls = new Map<string, Posted>();
  // The answer, once: the client resumes its GET stream too (from the answer's id), and is refused.
  const resume = (request: IncomingMessage, response: ServerResponse) => {
    const resumed = calls.get(String(request.headers["last-event-id"]));
    if (request.method !== "GET" || resumed === undefined) return void response.writeHead(405).end();
    calls.delete(String(request.headers["last-event-id"]));
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(
      `id: ${request.headers["last-event-id"]}-answer\ndata: ${JSON.stringify(brokenAnswerTo(resumed))}\n\n`,
    );
  };
  return httpServer((message, response) => {
    if (message.method !== "tools/call") {
      const answer = brokenAnswerTo(message);
      if (answer === undefined) return void response.writeHead(202).end();
      response.writeHead(200, { "content-type": "application/json" });
      return void response.end(JSON.stringify(answer));
    }
    const event = `call-${message.id}`;
    calls.set(event, message);
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(`id: ${event}\nretry: 10\ndata: \n\n`);
  }, resume);
}

describe("a Streamable HTTP server that answers on the stream the client resumes (GET with Last-Event-ID)", () => {
  it("fails the call at once when that answer breaks JSON-RPC's schema, as on a POST's stream; a sound one is read", async () => {
    await using mcp = await connectMcp(await resumedAnswersOverHttp(), { callTimeoutMs: 2_000 });
    const never = new AbortController().signal;
    await expect(mcp.callTool("null", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "broken-answer" answered "null" with a result that breaks the MCP schema: result: Invalid input: expected object, received null',
      ),
    );
    expect(await mcp.callTool("ok", {}, never)).toEqual({ content: [{ type: "text", text: "ok" }] });
  });
});

describe("a Streamable HTTP server that ends a call's event stream without its answer, and with no event id to resume it by", () => {
  it("fails the call at once, where the SDK would wait for callTimeoutMs; the connection goes on", async () => {
    const server = await httpServer(async (message, response) => {
      const answer = brokenAnswerTo(message);
      const hang = message.params?.name === "hang";
      if (answer === undefined && !hang) return void response.writeHead(202).end();
      response.writeHead(200, { "content-type": "text/event-stream" });
      // A comment, then the end: no answer, and nothing the client could resume the stream from.
      if (hang) return void response.end(": working on it\n\n");
      response.end(`data: ${JSON.stringify(answer)}\n\n`);
    });
    await using mcp = await connectMcp(server, { callTimeoutMs: 2_000 });
    const never = new AbortController().signal;
    await expect(mcp.callTool("hang", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "broken-answer" ended the event stream of its answer to "hang" without the answer.',
      ),
    );
    expect(await mcp.callTool("ok", {}, never)).toEqual({ content: [{ type: "text", text: "ok" }] });
  });
});

describe("a Streamable HTTP server that sends a call's answer as an event of a type of its own (event: result)", () => {
  it("fails the call at once, as a stream that ended without the answer: the SDK reads only message events", async () => {
    const server = await httpServer(async (message, response) => {
      const answer = brokenAnswerTo(message);
      if (answer === undefined) return void response.writeHead(202).end();
      response.writeHead(200, { "content-type": "text/event-stream" });
      const type = message.params?.name === "null" ? "event: message\n" : "event: result\n";
      response.end(`${message.method === "tools/call" ? type : ""}data: ${JSON.stringify(answer)}\n\n`);
    });
    await using mcp = await connectMcp(server, { callTimeoutMs: 5_000 });
    const never = new AbortController().signal;
    await expect(mcp.callTool("ok", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "broken-answer" ended the event stream of its answer to "ok" without the answer.',
      ),
    );
    // "event: message" is what no event type means.
    await expect(mcp.callTool("null", {}, never)).rejects.toThrow(
      /answered "null" with a result that breaks/,
    );
  });
});

describe("a Streamable HTTP server that sends a long answer on an event stream, a little at a time", () => {
  it("is read whole within the default callTimeoutMs, as the SDK alone reads it (each piece is read once, not the line so far again)", async () => {
    const text = "x".repeat(40_000_000);
    const server = await httpServer(async (message, response) => {
      const answer =
        message.method === "tools/call"
          ? { jsonrpc: "2.0", id: message.id, result: { content: [{ type: "text", text }] } }
          : brokenAnswerTo(message);
      if (answer === undefined) return void response.writeHead(202).end();
      response.writeHead(200, { "content-type": "text/event-stream" });
      const events = `data: ${JSON.stringify(answer)}\n\n`;
      // 16 KiB at a time, as a network gives it.
      for (let at = 0; at < events.length; at += 16_384)
        if (!response.write(events.slice(at, at + 16_384))) await once(response, "drain");
      response.end();
    });
    await using mcp = await connectMcp(server);
    const result = await mcp.callTool("ok", {}, new AbortController().signal);
    expect((result.content[0] as { text: string }).text.length).toBe(text.length);
  }, 90_000);
});

describe("a Streamable HTTP server that answers a call's POST without its answer", () => {
  it("fails the call at once, saying how, where the SDK would wait for callTimeoutMs: 202, or JSON that answers another request", async () => {
    const server = await httpServer(async (message, response) => {
      const answer = brokenAnswerTo(message);
      if (answer === undefined || message.params?.name === "hang") return void response.writeHead(202).end();
      response.writeHead(200, { "content-type": "application/json" });
      const other =
        message.params?.name === "null" ? { ...(answer as object), id: 1_000, result: {} } : answer;
      response.end(JSON.stringify(other));
    });
    await using mcp = await connectMcp(server, { callTimeoutMs: 5_000 });
    const never = new AbortController().signal;
    await expect(mcp.callTool("hang", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "broken-answer" answered the POST of its call of "hang" without the answer: 202 Accepted.',
      ),
    );
    await expect(mcp.callTool("null", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "broken-answer" answered the POST of its call of "null" without the answer: its JSON answers another request.',
      ),
    );
    expect(await mcp.callTool("ok", {}, never)).toEqual({ content: [{ type: "text", text: "ok" }] });
  });
});

/**
 * A server that ends a call's event stream after a first event (an id, a retry time, no data), and
 * answers the GET that resumes it (`Last-Event-ID`) with `resume`; a GET with no `Last-Event-ID`
 * (the client's own stream for the server's requests) gets 405.
 */
function resumeFailingServer(
  resume: (response: ServerResponse, lastEventId: string) => void,
): Promise<McpServerConfig> {
  const resuming = (request: IncomingMessage, response: ServerResponse) => {
    const lastEventId = request.headers["last-event-id"];
    if (request.method === "GET" && typeof lastEventId === "string") return resume(response, lastEventId);
    response.writeHead(405).end();
  };
  return httpServer((message, response) => {
    const answer = brokenAnswerTo(message);
    const hang = message.params?.name === "hang";
    if (answer === undefined && !hang) return void response.writeHead(202).end();
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(
      hang ? `id: call-${message.id}\nretry: 10\ndata: \n\n` : `data: ${JSON.stringify(answer)}\n\n`,
    );
  }, resuming);
}

const failedResumes: [string, (response: ServerResponse, lastEventId: string) => void, string][] = [
  [
    "refuses it with 405",
    (response) => void response.writeHead(405).end(),
    "its GET with Last-Event-ID was answered 405 Method Not Allowed",
  ],
  [
    "answers it with 500, every time the client tries",
    (response) => void response.writeHead(500).end(),
    "its GET with Last-Event-ID was tried 2 times, the last answered 500 Internal Server Error",
  ],
  [
    "drops the connection of every try without an answer",
    (response) => void response.socket?.destroy(),
    "its GET with Last-Event-ID was tried 2 times, the last failed: fetch failed",
  ],
  [
    "resumes it with a stream that ends without the answer, or any event id",
    (response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(": still working\n\n");
    },
    "the stream that resumed it ended without it, and gave no event id to resume it from",
  ],
  [
    "resumes it with a stream that breaks off before the answer, or any event id",
    (response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(": still working\n\n", () => response.socket?.destroy());
    },
    "the stream that resumed it broke off without it, and gave no event id to resume it from",
  ],
  [
    "resumes it with a stream that gives a new event id and breaks off, then refuses to resume that one",
    (response, lastEventId) => {
      if (lastEventId.endsWith("-again")) return void response.writeHead(405).end();
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(`id: ${lastEventId}-again\ndata: \n\n`, () => response.socket?.destroy());
    },
    "its GET with Last-Event-ID was answered 405 Method Not Allowed",
  ],
];

describe.each(failedResumes)(
  "a Streamable HTTP server that ends a call's event stream without its answer after an event id, and %s",
  (_server, resume, what) => {
    it("fails the call at once, saying so, where the SDK would wait for callTimeoutMs; the connection goes on", async () => {
      await using mcp = await connectMcp(await resumeFailingServer(resume), { callTimeoutMs: 5_000 });
      const never = new AbortController().signal;
      await expect(mcp.callTool("hang", {}, never)).rejects.toThrow(
        new Error(
          `The MCP server "broken-answer" ended the event stream of its answer to "hang" without the answer, and it was not resumed: ${what}.`,
        ),
      );
      expect(await mcp.callTool("ok", {}, never)).toEqual({ content: [{ type: "text", text: "ok" }] });
    });
  },
);

describe("a Streamable HTTP server that forgets the client's session (404 to a request that names it)", () => {
  it("fails the call saying the server ended the session and connectMcp() is to be called again, and every later call too", async () => {
    let forgotten = false;
    const server = await httpServer(async (message, response) => {
      if (forgotten) {
        response.writeHead(404, { "content-type": "application/json" });
        const notFound = { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null };
        return void response.end(JSON.stringify(notFound));
      }
      const answer = brokenAnswerTo(message);
      if (answer === undefined) return void response.writeHead(202).end();
      response.writeHead(200, { "content-type": "application/json", "mcp-session-id": "session-1" });
      response.end(JSON.stringify(answer));
    });
    await using mcp = await connectMcp(server, { callTimeoutMs: 5_000 });
    const never = new AbortController().signal;
    expect(await mcp.callTool("ok", {}, never)).toEqual({ content: [{ type: "text", text: "ok" }] });
    forgotten = true;
    const ended =
      'The MCP server "broken-answer" ended the session (it answered 404 Not Found to a request of the session): the connection is closed; call connectMcp() again.';
    await expect(mcp.callTool("ok", {}, never)).rejects.toThrow(new Error(ended));
    await expect(mcp.callTool("ok", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "broken-answer" is not connected: it ended the session; call connectMcp() again.',
      ),
    );
  });

  it("fails tools() saying the server ended the session, and a later tools() too", async () => {
    let forgotten = false;
    const server = await httpServer(async (message, response) => {
      if (forgotten) return void response.writeHead(404).end();
      const answer = brokenAnswerTo(message);
      if (answer === undefined) return void response.writeHead(202).end();
      response.writeHead(200, { "content-type": "application/json", "mcp-session-id": "session-1" });
      response.end(JSON.stringify(answer));
    });
    await using mcp = await connectMcp(server, { callTimeoutMs: 5_000 });
    forgotten = true;
    const ended = new McpServerError(
      "broken-answer",
      "could not list its tools: it ended the session (it answered 404 Not Found to a request of the session): the connection is closed; call connectMcp() again",
    );
    await expect(mcp.tools()).rejects.toThrow(ended);
    await expect(mcp.tools()).rejects.toThrow(
      new McpServerError(
        "broken-answer",
        "could not list its tools: it is not connected: it ended the session; call connectMcp() again",
      ),
    );
  });
});
