import { getEventListeners } from "node:events";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import "@agent-core/agentic"; // registers the default orchestrator, for the real server's agents
import { Agent, defineTool } from "@agent-core/core";
import { type AgentServerOptions, createAgentServer, serveNode } from "@agent-core/http";
import { script as model, scriptedModel } from "@agent-core/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { AgentClient } from "./agent-client.js";
import type { ClientRun } from "./client-types.js";
import { ClientError, type ClientErrorEvent, type ClientEvent } from "./errors.js";

// --- a scriptable HTTP server on 127.0.0.1, port 0 -----------------------------------------------

interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
}

type Handler = (request: Recorded, response: ServerResponse) => void | Promise<void>;

const servers: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(handler: Handler): Promise<{ baseUrl: string; requests: Recorded[] }> {
  const requests: Recorded[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://localhost");
      const recorded = {
        method: req.method ?? "",
        path: url.pathname.replace(/^\/api/, ""),
        query: url.searchParams,
        headers: req.headers,
        body,
      };
      requests.push(recorded);
      Promise.resolve(handler(recorded, res)).catch((error: unknown) => res.destroy(error as Error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push({
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  });
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/api`, requests };
}

const RUN = "r1";

function event(seq: number, type: string, payload: Record<string, unknown> = {}): Record<string, unknown> {
  return { type, runId: RUN, seq, ts: 1_000 + seq, ...payload };
}

function agentEnd(seq: number): Record<string, unknown> {
  return event(seq, "agent_end", {
    stopReason: "completed",
    usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 },
    durationMs: 4,
  });
}

/** The `agent_end` of a run suspended on `call`, whose hook token is "tok". */
function suspendedOn(call: Record<string, unknown>): Record<string, unknown> {
  return {
    ...agentEnd(1),
    stopReason: "awaiting_client_tool",
    pendingClientTools: [{ ...call, hookToken: "tok" }],
  };
}

/** Answers a start with a run that suspends at once: `agent_start`, then `suspended`. */
function endsSuspended(res: ServerResponse, suspended: Record<string, unknown>): void {
  openStream(res);
  res.end(line(event(0, "agent_start")) + line(suspended));
}

/** A run of `count` events: agent_start, text deltas, agent_end. */
function script(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, seq) =>
    seq === 0
      ? event(0, "agent_start")
      : seq === count - 1
        ? agentEnd(seq)
        : event(seq, "text_delta", { text: `héllo ✓ 東京 ${seq}`, index: 0 }),
  );
}

const line = (value: unknown) => `${JSON.stringify(value)}\n`;
const sseFrame = (value: Record<string, unknown>) =>
  `id: ${String(value.seq)}\r\nevent: ${String(value.type)}\r\ndata: ${JSON.stringify(value)}\r\n\r\n`;
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function openStream(res: ServerResponse, contentType = "application/x-ndjson", runId = RUN): void {
  res.writeHead(200, { "content-type": contentType, "x-run-id": runId });
  res.flushHeaders();
}

/** A server whose run starts and stays open (its stream says agent_start only); any other post is taken (202). */
const startedRunServer: Handler = async (req, res) => {
  if (req.path === "/runs") {
    openStream(res);
    res.write(line(event(0, "agent_start")));
    return;
  }
  res.writeHead(202).end();
};

async function writeSlowly(res: ServerResponse, events: Record<string, unknown>[], ms = 3): Promise<void> {
  for (const value of events) {
    res.write(line(value));
    await delay(ms);
  }
}

function fail(res: ServerResponse, status: number, code: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ error: { code, message: `${code}, for the test` } }));
}

async function collect(run: ClientRun): Promise<ClientEvent[]> {
  const events: ClientEvent[] = [];
  for await (const value of run) events.push(value);
  return events;
}

const seqs = (events: ClientEvent[]) => events.map((value) => ("seq" in value ? value.seq : value.type));

async function until(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await delay(5);
  }
}

async function rejection(promise: Promise<unknown>): Promise<ClientError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ClientError);
  return error as ClientError;
}

/** A promise the test settles when it chooses (`resolve`), to hold a server's answer or a tool. */
function latch(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

const fast = { reconnect: { delayMs: 10 }, postRetry: { delayMs: 10 } };

// --- the tests -----------------------------------------------------------------------------------

describe("AgentClient: streaming a run", () => {
  it("posts the prompt with the headers, yields the events in order and resolves result() with agent_end", async () => {
    const events = script(8);
    const { baseUrl, requests } = await serve(async (_req, res) => {
      openStream(res);
      await writeSlowly(res, events);
      res.end();
    });
    const headers = vi.fn(async () => ({ authorization: "Bearer t0k" }));
    const client = new AgentClient({ baseUrl: `${baseUrl}/`, headers, ...fast });
    const run = client.start("hi ✓", { conversationId: "c1", documentId: "d1" });
    expect(await run.runId).toBe(RUN);
    expect(await collect(run)).toEqual(events);
    expect(await run.result()).toEqual(events[7]);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ method: "POST", path: "/runs" });
    expect(JSON.parse(requests[0]?.body ?? "")).toEqual({
      prompt: "hi ✓",
      conversationId: "c1",
      documentId: "d1",
    });
    expect(requests[0]?.headers).toMatchObject({
      authorization: "Bearer t0k",
      accept: "application/x-ndjson",
      "content-type": "application/json",
    });
    expect(headers).toHaveBeenCalledTimes(1);
  });

  it("works without anybody iterating: result() resolves and a late iterator still gets every event once", async () => {
    const events = script(50);
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.end(events.map(line).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    expect(await run.result()).toEqual(events[49]);
    expect(await collect(run)).toEqual(events);
    expect(await collect(run)).toEqual([]);
  });

  it("turns a malformed line into a client_error event and goes on", async () => {
    const events = script(4);
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.write(line(events[0]) + line(events[1]));
      res.write('{"type":"text_delta",oops\n\n[1]\n');
      res.end(line(events[2]) + line(events[3]));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    const seen = await collect(run);
    expect(seen).toEqual([
      events[0],
      events[1],
      expect.objectContaining({
        type: "client_error",
        code: "malformed-event",
        line: '{"type":"text_delta",oops',
      }),
      expect.objectContaining({ type: "client_error", code: "malformed-event", line: "[1]" }),
      events[2],
      events[3],
    ]);
    await expect(run.result()).resolves.toEqual(events[3]);
  });

  it("drops an event of another run with a client_error: another run's agent_end does not settle this one", async () => {
    const events = script(3);
    const stray = { ...agentEnd(7), runId: "r2", stopReason: "aborted" };
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.write(line(events[0]) + line(event(1, "text_delta", { runId: "r2", text: "not yours" })));
      res.end(line(stray) + line(events[1]) + line(events[2]));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    const stranger = expect.objectContaining({ type: "client_error", code: "malformed-event" });
    expect(await collect(run)).toEqual([events[0], stranger, stranger, events[1], events[2]]);
    await expect(run.result()).resolves.toEqual(events[2]);
  });

  it("reads SSE with heartbeats and comments (which keep an idle connection alive) and yields no heartbeat", async () => {
    const events = script(5);
    const { baseUrl, requests } = await serve(async (req, res) => {
      expect(req.headers.accept).toBe("text/event-stream");
      openStream(res, "text/event-stream; charset=utf-8");
      res.write(
        sseFrame(events[0] as Record<string, unknown>) + sseFrame(events[1] as Record<string, unknown>),
      );
      // 600 ms without an event, but a heartbeat (or a comment) every 100 ms: no idle timeout.
      for (let i = 0; i < 6; i++) {
        await delay(100);
        res.write(i % 2 === 0 ? `event: heartbeat\ndata: {"type":"heartbeat","ts":${i}}\n\n` : ": ping\n\n");
      }
      for (const value of events.slice(2)) res.write(sseFrame(value));
      res.end();
    });
    const run = new AgentClient({ baseUrl, format: "sse", idleTimeoutMs: 300, ...fast }).start("hi");
    const heartbeats: ClientEvent[] = [];
    run.on("*", (value) => {
      if ((value.type as string) === "heartbeat") heartbeats.push(value);
    });
    expect(await collect(run)).toEqual(events);
    expect(heartbeats).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it("reads SSE whatever the case of its Content-Type (media types are case-insensitive)", async () => {
    const events = script(3);
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res, "Text/Event-Stream; Charset=UTF-8");
      res.end(events.map(sseFrame).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    expect(await collect(run)).toEqual(events);
    await expect(run.result()).resolves.toEqual(events[2]);
  });

  it("calls listeners by type and for '*', until they are removed", async () => {
    const events = script(5);
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      await writeSlowly(res, events, 20);
      res.end();
    });
    const logged: { fields: Record<string, unknown>; message: string }[] = [];
    const logger = {
      error: (fields: Record<string, unknown>, message: string) => logged.push({ fields, message }),
    };
    const run = new AgentClient({ baseUrl, ...fast, logger }).start("hi");
    const deltas: string[] = [];
    const all: string[] = [];
    const removeDeltas = run.on("text_delta", (value) => {
      deltas.push(value.text);
      removeDeltas();
    });
    run.on("*", (value) => all.push(value.type));
    run.on("agent_end", () => {
      throw new Error("a listener bug");
    });
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      await run.result();
      expect(consoleError).not.toHaveBeenCalled();
    } finally {
      consoleError.mockRestore();
    }
    expect(deltas).toEqual(["héllo ✓ 東京 1"]);
    expect(all).toEqual(["agent_start", "text_delta", "text_delta", "text_delta", "agent_end"]);
    expect(logged).toEqual([
      {
        message: "@agent-core/client: a listener threw",
        fields: {
          runId: await run.runId,
          eventType: "agent_end",
          listenerType: "agent_end",
          err: new Error("a listener bug"),
        },
      },
    ]);
  });

  it("a logger that throws at a listener's throw changes nothing else either", async () => {
    const events = script(5);
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      await writeSlowly(res, events, 20);
      res.end();
    });
    const logger = {
      error: () => {
        throw new Error("the log is down");
      },
    };
    const run = new AgentClient({ baseUrl, ...fast, logger }).start("hi");
    const all: string[] = [];
    run.on("*", () => {
      throw new Error("a listener bug");
    });
    run.on("*", (value) => all.push(value.type));
    expect(await collect(run)).toEqual(events);
    await expect(run.result()).resolves.toEqual(events[4]);
    expect(all).toEqual(["agent_start", "text_delta", "text_delta", "text_delta", "agent_end"]);
  });

  it.each([
    [
      "",
      async () => {
        throw new Error("the log is down");
      },
    ],
    // A logger made in another realm (a vm context) returns that realm's promises, not this one's.
    [" (of another realm)", runInNewContext("async () => { throw new Error('the log is down'); }")],
  ])(
    "an async logger%s whose line rejects at a listener's throw leaves no rejection unhandled",
    async (_realm, error) => {
      const events = script(5);
      const { baseUrl } = await serve(async (_req, res) => {
        openStream(res);
        await writeSlowly(res, events, 20);
        res.end();
      });
      const logger = { error };
      const unhandled: unknown[] = [];
      const recordUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", recordUnhandled);
      try {
        const run = new AgentClient({ baseUrl, ...fast, logger }).start("hi");
        run.on("agent_end", () => {
          throw new Error("a listener bug");
        });
        await expect(run.result()).resolves.toEqual(events[4]);
        // Unhandled rejections are reported once the microtasks ran out.
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off("unhandledRejection", recordUnhandled);
      }
      expect(unhandled).toEqual([]);
    },
  );

  it("has one iterating consumer at a time", async () => {
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.end(script(3).map(line).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    const first = run[Symbol.asyncIterator]();
    expect(() => run[Symbol.asyncIterator]()).toThrow(TypeError);
    expect(await first.next()).toMatchObject({ value: { type: "agent_start" } });
    await first.return?.();
    expect(seqs(await collect(run))).toEqual([1, 2]);
  });
});

describe("AgentClient: reconnects", () => {
  it("re-attaches after a drop mid-line from the last seq, and drops the replayed events", async () => {
    const events = script(9);
    let attaches = 0;
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        await writeSlowly(res, events.slice(0, 4));
        res.write(line(events[4]).slice(0, 15)); // half a line, then the connection dies
        await delay(10);
        res.destroy();
        return;
      }
      attaches++;
      expect(req.path).toBe(`/runs/${RUN}/events`);
      openStream(res);
      // A replay of 2 and 3 (as a sloppy proxy or server might), then the rest.
      await writeSlowly(res, events.slice(2));
      res.end();
    });
    const headers = vi.fn(() => ({ "x-tenant": "t" }));
    const run = new AgentClient({ baseUrl, headers, ...fast }).start("hi");
    const seen = await collect(run);
    expect(seqs(seen)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(seen).toEqual(events);
    expect(attaches).toBe(1);
    expect(requests[1]?.query.get("after")).toBe("3");
    expect(requests[1]?.headers.accept).toBe("application/x-ndjson");
    expect(requests[1]?.headers["x-tenant"]).toBe("t");
    expect(headers).toHaveBeenCalledTimes(2);
    await expect(run.result()).resolves.toEqual(events[8]);
  });

  it("re-attaches after a stream that ended mid-line, with no client_error for the line cut short", async () => {
    const events = script(4);
    const { baseUrl } = await serve(async (req, res) => {
      openStream(res);
      if (req.path === "/runs") res.end(line(events[0]) + line(events[1]).slice(0, 15));
      else res.end(line(events[1]) + line(events[2]) + JSON.stringify(events[3])); // the last \n is optional
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    expect(await collect(run)).toEqual(events);
    await expect(run.result()).resolves.toEqual(events[3]);
  });

  it("re-attaches when the connection goes silent for idleTimeoutMs", async () => {
    const events = script(4);
    const { baseUrl, requests } = await serve(async (req, res) => {
      openStream(res);
      if (req.path === "/runs") {
        res.write(line(events[0]) + line(events[1]));
        return; // then hangs: no byte, no close
      }
      res.end(
        events
          .slice(Number(req.query.get("after")) + 1)
          .map(line)
          .join(""),
      );
    });
    const started = Date.now();
    const run = new AgentClient({ baseUrl, idleTimeoutMs: 250, ...fast }).start("hi");
    expect(await collect(run)).toEqual(events);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(requests.map((r) => `${r.method} ${r.path}?${r.query}`)).toEqual([
      "POST /runs?",
      `GET /runs/${RUN}/events?after=1`,
    ]);
  });

  it("fails with code 'network' once the re-attach attempts are spent", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        res.write(line(event(0, "agent_start")));
        await delay(10);
      }
      res.destroy();
    });
    const run = new AgentClient({ baseUrl, reconnect: { attempts: 2, delayMs: 10 } }).start("hi");
    const error = await rejection(run.result());
    expect(error.code).toBe("network");
    expect(error.message).toMatch(/2 re-attach attempt/);
    expect(requests.filter((r) => r.method === "GET")).toHaveLength(2);
    // The iteration throws it too, after the events that came.
    const seen: ClientEvent[] = [];
    await expect(
      (async () => {
        for await (const value of run) seen.push(value);
      })(),
    ).rejects.toBe(error);
    expect(seqs(seen)).toEqual([0]);
  });

  it("fails with code 'http' (status and server code) on a 4xx re-attach, without retrying", async () => {
    const { baseUrl, requests } = await serve((_req, res) => fail(res, 404, "not-found"));
    const run = new AgentClient({ baseUrl, ...fast }).attach("gone");
    const error = await rejection(run.result());
    expect(error).toMatchObject({ code: "http", status: 404, serverCode: "not-found" });
    expect(error.message).toBe("HTTP 404 not-found: not-found, for the test");
    expect(requests).toHaveLength(1);
    await expect(run.runId).resolves.toBe("gone");
    await expect(collect(run)).rejects.toBe(error);
  });

  it("fails with code 'http' when the server refuses the run", async () => {
    const { baseUrl } = await serve((_req, res) => fail(res, 401, "unauthorized"));
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    expect(await rejection(run.result())).toMatchObject({
      code: "http",
      status: 401,
      serverCode: "unauthorized",
    });
    expect(await rejection(run.runId)).toMatchObject({ code: "http" });
  });

  it("fails with code 'http' (status 204) and says so when the server answers a start with no stream", async () => {
    const { baseUrl, requests } = await serve((_req, res) => void res.writeHead(204).end());
    const error = await rejection(new AgentClient({ baseUrl, ...fast }).start("hi").result());
    expect(error).toMatchObject({ code: "http", status: 204 });
    expect(error.message).toBe(
      "HTTP 204: the server answered the start of a run with no stream of its events.",
    );
    expect(requests).toHaveLength(1);
  });

  it("fails with code 'http' at once, without a malformed-event per line or a retry, when a page comes in place of the stream", async () => {
    const { baseUrl, requests } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "x-run-id": RUN });
      res.end("<!doctype html>\n<html>\n<body>Not here</body>\n</html>\n");
    });
    const run = new AgentClient({ baseUrl, ...fast }).attach(RUN);
    const seen: ClientEvent[] = [];
    const reading = (async () => {
      for await (const event of run) seen.push(event);
    })().catch(() => {});
    const error = await rejection(run.result());
    await reading;
    expect(error).toMatchObject({ code: "http", status: 200 });
    expect(error.message).toBe(
      "HTTP 200: the server answered with text/html, not a stream of the run's events.",
    );
    expect(seen.filter((event) => event.type === "client_error")).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it("fails a start answered 200 with a JSON error (no trailing newline) with the server's message, without posting it again", async () => {
    const { baseUrl, requests } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ error: { code: "quota", message: "The quota is spent." } }));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    const seen: ClientEvent[] = [];
    run.on("*", (event) => seen.push(event));
    const error = await rejection(run.result());
    expect(error).toMatchObject({ code: "http", status: 200, serverCode: "quota" });
    expect(error.message).toBe(
      "HTTP 200: the server answered with application/json, not a stream of the run's events: quota: The quota is spent.",
    );
    expect(seen).toEqual([]);
    expect(requests.filter((request) => request.method === "POST")).toHaveLength(1);
    expect(requests).toHaveLength(1);
  });

  it("says the message of a JSON answer whose error is a string", async () => {
    const { baseUrl, requests } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "x-run-id": RUN });
      res.end('{"error":"no such model"}\n');
    });
    const error = await rejection(new AgentClient({ baseUrl, ...fast }).attach(RUN).result());
    expect(error.message).toBe(
      "HTTP 200: the server answered with application/json, not a stream of the run's events: no such model",
    );
    expect(requests).toHaveLength(1);
  });

  it("fails with code 'http' (status 204), without retrying, when the run ended with the event `after` names", async () => {
    const { baseUrl, requests } = await serve((_req, res) => {
      res.writeHead(204, { "x-run-id": RUN });
      res.end();
    });
    const run = new AgentClient({ baseUrl, ...fast }).attach(RUN, { after: 6 });
    const error = await rejection(run.result());
    expect(error).toMatchObject({ code: "http", status: 204 });
    expect(error.message).toBe(
      `HTTP 204: run "${RUN}" has ended and nothing follows event 6; attach with a lower \`after\` to read its end again.`,
    );
    expect(requests).toHaveLength(1);
  });

  it("attach(runId, { after }) asks for the events after it and yields only those", async () => {
    const events = script(7);
    const { baseUrl, requests } = await serve((_req, res) => {
      openStream(res);
      res.end(events.slice(3).map(line).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).attach(RUN, { after: 4 });
    expect(seqs(await collect(run))).toEqual([5, 6]);
    expect(requests[0]).toMatchObject({ method: "GET", path: `/runs/${RUN}/events` });
    expect(requests[0]?.query.get("after")).toBe("4");
  });
});

describe("AgentClient: attach() arguments", () => {
  it("throws a TypeError for an `after` no seq can be (a fraction, below -1, past 2^53 - 1), and sends nothing", async () => {
    const { baseUrl, requests } = await serve((_req, res) => fail(res, 500, "unexpected"));
    const client = new AgentClient({ baseUrl, ...fast });
    for (const after of [1.5, -2, 1e21, 2 ** 53])
      expect(() => client.attach(RUN, { after }), String(after)).toThrow(TypeError);
    await delay(20);
    expect(requests).toEqual([]);
  });
});

describe("AgentClient: retrying a start", () => {
  const posts = (requests: Recorded[]) => requests.filter((r) => r.method === "POST" && r.path === "/runs");

  it("posts the start again with the same Idempotency-Key when its connection drops before the run's id is known", async () => {
    const events = script(4);
    const { baseUrl, requests } = await serve(async (_req, res) => {
      // The first answer never comes: the server drops the connection before its first byte.
      if (posts(requests).length === 1) return void res.destroy();
      openStream(res);
      await writeSlowly(res, events);
      res.end();
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi", { documentId: "d" });
    expect(await collect(run)).toEqual(events);
    await expect(run.runId).resolves.toBe(RUN);
    const [first, second] = posts(requests);
    expect(requests).toHaveLength(2);
    expect(first?.headers["idempotency-key"]).toMatch(/^[0-9a-f]{32}$/);
    expect(second?.headers["idempotency-key"]).toBe(first?.headers["idempotency-key"]);
    expect(second?.body).toBe(first?.body);
  });

  it("posts it again after a 429 or 503 with Retry-After, and fails at once on a 503 without one", async () => {
    const answers = [
      (res: ServerResponse) => fail(res, 429, "rate-limited", { "retry-after": "0" }),
      (res: ServerResponse) => fail(res, 503, "database-unreachable", { "retry-after": "0" }),
    ];
    const { baseUrl, requests } = await serve((_req, res) => {
      const next = answers.shift();
      if (next !== undefined) return next(res);
      openStream(res);
      res.end(script(2).map(line).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    await expect(run.result()).resolves.toMatchObject({ type: "agent_end" });
    expect(new Set(posts(requests).map((r) => r.headers["idempotency-key"])).size).toBe(1);
    expect(posts(requests)).toHaveLength(3);

    const closing = await serve((_req, res) => fail(res, 503, "server-closing"));
    const error = await rejection(
      new AgentClient({ baseUrl: closing.baseUrl, ...fast }).start("hi").result(),
    );
    expect(error).toMatchObject({ code: "http", status: 503, serverCode: "server-closing" });
    expect(closing.requests).toHaveLength(1);
  });

  it("fails with code 'network' once reconnect.attempts posts again were lost too, all with one key", async () => {
    const { baseUrl, requests } = await serve((_req, res) => void res.destroy());
    const error = await rejection(
      new AgentClient({ baseUrl, reconnect: { attempts: 2, delayMs: 10 } }).start("hi").result(),
    );
    expect(error.code).toBe("network");
    expect(error.message).toMatch(/3 attempt\(s\) to post it with the same Idempotency-Key/);
    expect(posts(requests)).toHaveLength(3);
    expect(new Set(posts(requests).map((r) => r.headers["idempotency-key"])).size).toBe(1);
  });

  it("sends the key given to start(), and a new random key for each start() without one", async () => {
    const { baseUrl, requests } = await serve((_req, res) => {
      openStream(res);
      res.end(script(2).map(line).join(""));
    });
    const client = new AgentClient({ baseUrl, ...fast });
    await client.start("a", { idempotencyKey: "order-42" }).result();
    await client.start("b").result();
    await client.start("c").result();
    const keys = posts(requests).map((r) => r.headers["idempotency-key"]);
    expect(keys[0]).toBe("order-42");
    expect(new Set(keys).size).toBe(3);
    expect(() => client.start("d", { idempotencyKey: "two words" })).toThrow(TypeError);
  });
});

describe("AgentClient: client tools", () => {
  /** A run that calls client tools, then waits for `resultsPosted` before it ends. */
  function toolRun(calls: { toolCallId: string; toolName: string; args: unknown }[], done: Promise<unknown>) {
    return async (res: ServerResponse) => {
      openStream(res);
      res.write(line(event(0, "agent_start")));
      calls.forEach((call, i) => {
        res.write(
          line(
            event(1 + i, "tool_call", { ...call, execution: "client", hookToken: `tok-${call.toolCallId}` }),
          ),
        );
      });
      await done;
      res.end(line(agentEnd(1 + calls.length)));
    };
  }

  it("runs the tool once and retries its post on 503 twice, then 204", async () => {
    let posts = 0;
    const { promise: resultsPosted, resolve: accepted } = latch();
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs")
        return toolRun([{ toolCallId: "c1", toolName: "add", args: { a: 2, b: 3 } }], resultsPosted)(res);
      expect(req.path).toBe(`/runs/${RUN}/tool-results`);
      posts++;
      if (posts <= 2) return fail(res, 503, "busy");
      res.writeHead(204).end();
      accepted();
    });
    const add = vi.fn((args: unknown, context: { signal: AbortSignal; toolCallId: string }) => {
      const { a, b } = args as { a: number; b: number };
      expect(context.toolCallId).toBe("c1");
      expect(context.signal.aborted).toBe(false);
      return { sum: a + b };
    });
    const run = new AgentClient({ baseUrl, tools: { add }, ...fast }).start("add");
    const seen = await collect(run);
    expect(seen.filter((value) => value.type === "client_error")).toEqual([]);
    expect(add).toHaveBeenCalledTimes(1);
    const bodies = requests.filter((r) => r.path.endsWith("/tool-results")).map((r) => JSON.parse(r.body));
    expect(bodies).toEqual([1, 2, 3].map(() => ({ toolCallId: "c1", token: "tok-c1", result: { sum: 5 } })));
    await expect(run.result()).resolves.toMatchObject({ type: "agent_end" });
  });

  it("honours Retry-After on a 429", async () => {
    const times: number[] = [];
    const { promise: resultsPosted, resolve: accepted } = latch();
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs")
        return toolRun([{ toolCallId: "c1", toolName: "t", args: null }], resultsPosted)(res);
      times.push(Date.now());
      if (times.length === 1) return fail(res, 429, "rate-limited", { "retry-after": "1" });
      res.writeHead(204).end();
      accepted();
    });
    const run = new AgentClient({ baseUrl, tools: { t: () => undefined }, ...fast }).start("t");
    await run.result();
    expect(times).toHaveLength(2);
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it("posts a thrown error's message, and an error for a tool with no handler", async () => {
    const bodies: unknown[] = [];
    const { promise: resultsPosted, resolve: accepted } = latch();
    const calls = [
      { toolCallId: "c1", toolName: "boom", args: {} },
      { toolCallId: "c2", toolName: "missing", args: {} },
      { toolCallId: "c3", toolName: "toString", args: {} }, // not an own property of tools
    ];
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") return toolRun(calls, resultsPosted)(res);
      bodies.push(JSON.parse(req.body));
      res.writeHead(204).end();
      if (bodies.length === 3) accepted();
    });
    const tools = {
      boom: async () => {
        throw new Error("kaput ✗");
      },
    };
    await new AgentClient({ baseUrl, tools, ...fast }).start("t").result();
    expect(bodies).toEqual(
      expect.arrayContaining([
        { toolCallId: "c1", token: "tok-c1", error: "kaput ✗" },
        { toolCallId: "c2", token: "tok-c2", error: "no handler for client tool missing" },
        { toolCallId: "c3", token: "tok-c3", error: "no handler for client tool toString" },
      ]),
    );
    expect(bodies).toHaveLength(3);
  });

  it("posts a result JSON cannot carry as an error saying so, once", async () => {
    const bodies: unknown[] = [];
    const { promise: resultsPosted, resolve: accepted } = latch();
    const calls = [
      { toolCallId: "c1", toolName: "big", args: {} },
      { toolCallId: "c2", toolName: "loop", args: {} },
    ];
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") return toolRun(calls, resultsPosted)(res);
      bodies.push(JSON.parse(req.body));
      res.writeHead(204).end();
      if (bodies.length === 2) accepted();
    });
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const tools = { big: () => ({ n: 10n }), loop: () => cycle };
    const run = new AgentClient({ baseUrl, tools, ...fast }).start("t");
    const seen = await collect(run);
    expect(seen.filter((value) => value.type === "client_error")).toEqual([]);
    expect(bodies).toEqual(
      expect.arrayContaining([
        {
          toolCallId: "c1",
          token: "tok-c1",
          error: expect.stringMatching(/^the result is not JSON: .*BigInt/),
        },
        {
          toolCallId: "c2",
          token: "tok-c2",
          error: expect.stringMatching(/^the result is not JSON: .*circular/),
        },
      ]),
    );
    expect(bodies).toHaveLength(2);
  });

  it("posts a result JSON has no value for (a function, a symbol) as an error saying so, not a body without its result", async () => {
    const bodies: unknown[] = [];
    const { promise: resultsPosted, resolve: accepted } = latch();
    const calls = [
      { toolCallId: "c1", toolName: "fn", args: {} },
      { toolCallId: "c2", toolName: "sym", args: {} },
    ];
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") return toolRun(calls, resultsPosted)(res);
      bodies.push(JSON.parse(req.body));
      res.writeHead(204).end();
      if (bodies.length === 2) accepted();
    });
    const tools = { fn: () => () => "called", sym: () => Symbol("s") };
    const seen = await collect(new AgentClient({ baseUrl, tools, ...fast }).start("t"));
    expect(seen.filter((value) => value.type === "client_error")).toEqual([]);
    expect(bodies).toEqual(
      expect.arrayContaining([
        {
          toolCallId: "c1",
          token: "tok-c1",
          error: "the result is not JSON: JSON has no value for a function",
        },
        {
          toolCallId: "c2",
          token: "tok-c2",
          error: "the result is not JSON: JSON has no value for a symbol",
        },
      ]),
    );
    expect(bodies).toHaveLength(2);
  });

  it("posts what a tool threw that String() cannot convert (an object with no prototype) as its tag, instead of losing the call", async () => {
    let posted!: (body: unknown) => void;
    const body = new Promise<unknown>((resolve) => {
      posted = resolve;
    });
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") return toolRun([{ toolCallId: "c1", toolName: "odd", args: {} }], body)(res);
      res.writeHead(204).end();
      posted(JSON.parse(req.body));
    });
    const tools = {
      odd: () => {
        throw Object.create(null);
      },
    };
    const run = new AgentClient({ baseUrl, tools, ...fast }).start("t");
    expect(await body).toEqual({ toolCallId: "c1", token: "tok-c1", error: "[object Object]" });
    expect((await run.result()).stopReason).toBe("completed");
  });

  it("reports a 410 as a tool-result-rejected client_error, without retrying", async () => {
    let posts = 0;
    const { promise: rejected, resolve: answered } = latch();
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") return toolRun([{ toolCallId: "c1", toolName: "t", args: 1 }], rejected)(res);
      posts++;
      fail(res, 410, "call-ended");
      answered();
    });
    const tool = vi.fn(() => "ok");
    const run = new AgentClient({ baseUrl, tools: { t: tool }, ...fast }).start("t");
    const seen = await collect(run);
    expect(seen.filter((value) => value.type === "client_error")).toEqual([
      expect.objectContaining({
        code: "tool-result-rejected",
        status: 410,
        serverCode: "call-ended",
        toolCallId: "c1",
      }),
    ]);
    expect(posts).toBe(1);
    expect(tool).toHaveBeenCalledTimes(1);
  });

  it("posts an error in place of a result the server refuses as too large (413), so the call ends now, and reports it", async () => {
    const bodies: unknown[] = [];
    const { promise: errorPosted, resolve: answered } = latch();
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs")
        return toolRun([{ toolCallId: "c1", toolName: "dump", args: {} }], errorPosted)(res);
      bodies.push(JSON.parse(req.body));
      if (bodies.length > 1) return void res.writeHead(204).end();
      fail(res, 413, "body-too-large");
      // The run ends once the error came, or without it (a call the server gave up).
      void until(() => bodies.length > 1, "the error's post")
        .catch(() => {})
        .then(answered);
    });
    const dump = () => "x".repeat(1000);
    const run = new AgentClient({ baseUrl, tools: { dump }, ...fast }).start("dump");
    const seen = await collect(run);
    expect(bodies).toEqual([
      { toolCallId: "c1", token: "tok-c1", result: "x".repeat(1000) },
      {
        toolCallId: "c1",
        token: "tok-c1",
        error:
          "the result is larger than the server takes: HTTP 413 body-too-large: body-too-large, for the test",
      },
    ]);
    expect(seen.filter((value) => value.type === "client_error")).toEqual([
      expect.objectContaining({ code: "tool-result-rejected", status: 413, toolCallId: "c1" }),
    ]);
    expect((await run.result()).stopReason).toBe("completed");
  });

  it("never runs a tool twice when its tool_call is seen again after a re-attach", async () => {
    let posts = 0;
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        res.write(
          line(event(0, "agent_start")) +
            line(
              event(1, "tool_call", {
                toolCallId: "c1",
                toolName: "t",
                args: {},
                execution: "client",
                hookToken: "k",
              }),
            ),
        );
        await delay(30);
        res.destroy();
        return;
      }
      if (req.path.endsWith("/tool-results")) {
        posts++;
        res.writeHead(204).end();
        return;
      }
      // A server that replays from the start, ignoring ?after.
      openStream(res);
      await until(() => posts > 0, "the tool result");
      res.end(
        line(event(0, "agent_start")) +
          line(
            event(1, "tool_call", {
              toolCallId: "c1",
              toolName: "t",
              args: {},
              execution: "client",
              hookToken: "k",
            }),
          ) +
          line(agentEnd(2)),
      );
    });
    const tool = vi.fn(() => 1);
    const run = new AgentClient({ baseUrl, tools: { t: tool }, ...fast }).start("t");
    expect(seqs(await collect(run))).toEqual([0, 1, 2]);
    expect(tool).toHaveBeenCalledTimes(1);
    expect(posts).toBe(1);
  });
});

describe("AgentClient: a client tool whose call ended first", () => {
  const clientCall = event(1, "tool_call", {
    toolCallId: "c1",
    toolName: "ask",
    args: {},
    execution: "client",
    hookToken: "k",
  });

  /** A tool that waits for its signal, then returns all the same: a result nobody waits for. */
  function waitsForItsSignal(started: (signal: AbortSignal) => void) {
    return (_args: unknown, { signal }: { signal: AbortSignal }) => {
      started(signal);
      return new Promise((resolve) => signal.addEventListener("abort", () => resolve("too late")));
    };
  }

  it("aborts the tool's signal once the call's tool_result comes (the server timed it out), and posts nothing for it", async () => {
    let toolSignal: AbortSignal | undefined;
    const { baseUrl, requests } = await serve(async (_req, res) => {
      openStream(res);
      res.write(line(event(0, "agent_start")) + line(clientCall));
      await until(() => toolSignal !== undefined, "the tool to start");
      res.write(
        line(
          event(2, "tool_result", {
            toolCallId: "c1",
            toolName: "ask",
            status: "timeout",
            error: "timed out",
          }),
        ),
      );
      // Ended all the same when it never aborts: the run goes on without the call, as the server's does.
      await until(() => toolSignal?.aborted === true, "the tool's signal to abort").catch(() => {});
      res.end(line(agentEnd(3)));
    });
    const tools = { ask: waitsForItsSignal((signal) => (toolSignal = signal)) };
    const run = new AgentClient({ baseUrl, tools, ...fast }).start("ask");
    const seen = await collect(run);
    expect((await run.result()).stopReason).toBe("completed");
    expect(toolSignal?.aborted).toBe(true);
    expect(seen.filter((value) => value.type === "client_error")).toEqual([]);
    await delay(20);
    expect(requests.map((request) => request.path)).toEqual(["/runs"]);
  });

  it("aborts the signal of a tool still running when the run ends, and posts nothing for it", async () => {
    let toolSignal: AbortSignal | undefined;
    const { baseUrl, requests } = await serve(async (_req, res) => {
      openStream(res);
      res.write(line(event(0, "agent_start")) + line(clientCall));
      await until(() => toolSignal !== undefined, "the tool to start");
      res.end(line(agentEnd(2)));
    });
    const tools = { ask: waitsForItsSignal((signal) => (toolSignal = signal)) };
    const run = new AgentClient({ baseUrl, tools, ...fast }).start("ask");
    expect((await run.result()).stopReason).toBe("completed");
    expect(toolSignal?.aborted).toBe(true);
    await delay(20);
    expect(requests.map((request) => request.path)).toEqual(["/runs"]);
  });
});

describe("AgentClient: cancel", () => {
  it("cancel() aborts the stream and the tool's signal, posts /cancel, and result() rejects with 'cancelled'", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        res.write(
          line(event(0, "agent_start")) +
            line(
              event(1, "tool_call", {
                toolCallId: "c1",
                toolName: "slow",
                args: {},
                execution: "client",
                hookToken: "k",
              }),
            ),
        );
        return; // and waits
      }
      res.writeHead(202).end();
    });
    let toolSignal: AbortSignal | undefined;
    const slow = (_args: unknown, { signal }: { signal: AbortSignal }) => {
      toolSignal = signal;
      return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    };
    const run = new AgentClient({ baseUrl, tools: { slow }, ...fast }).start("go");
    const iterated = collect(run);
    await until(() => toolSignal !== undefined, "the tool to start");
    await run.cancel();
    expect(toolSignal?.aborted).toBe(true);
    expect((await rejection(run.result())).code).toBe("cancelled");
    // A cancelled run's iteration ends quietly, after the events that came.
    expect(seqs(await iterated)).toEqual([0, 1]);
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /runs", `POST /runs/${RUN}/cancel`]);
    expect(run.cancel()).toBe(run.cancel());
  });

  it("aborting the signal given to start() cancels the run", async () => {
    const { baseUrl, requests } = await serve(startedRunServer);
    const controller = new AbortController();
    const run = new AgentClient({ baseUrl, ...fast }).start("go", { signal: controller.signal });
    await run.runId;
    controller.abort();
    expect((await rejection(run.result())).code).toBe("cancelled");
    await until(() => requests.length === 2, "the cancel post");
    expect(requests[1]).toMatchObject({ method: "POST", path: `/runs/${RUN}/cancel` });
  });

  it("one signal given to many start()s adds one listener to it (no MaxListenersExceededWarning), removed once they settled, and cancels them all", async () => {
    const { baseUrl } = await serve(startedRunServer);
    const controller = new AbortController();
    // One client each: a client's new start() would cancel its run in flight.
    const runs = Array.from({ length: 20 }, () =>
      new AgentClient({ baseUrl, ...fast }).start("go", { signal: controller.signal }),
    );
    await Promise.all(runs.map((run) => run.runId));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort();
    for (const run of runs) expect((await rejection(run.result())).code).toBe("cancelled");

    // Runs that settle without an abort let go of the signal too.
    const { baseUrl: endingUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.end(line(event(0, "agent_start")) + line(agentEnd(1)));
    });
    const kept = new AbortController();
    const ended = Array.from({ length: 20 }, () =>
      new AgentClient({ baseUrl: endingUrl, ...fast }).start("go", { signal: kept.signal }),
    );
    await Promise.all(ended.map((run) => run.result()));
    expect(getEventListeners(kept.signal, "abort")).toHaveLength(0);
  });

  it("a signal already aborted sends nothing at all", async () => {
    const { baseUrl, requests } = await serve((_req, res) => fail(res, 500, "unexpected"));
    const run = new AgentClient({ baseUrl, ...fast }).start("go", { signal: AbortSignal.abort() });
    expect((await rejection(run.result())).code).toBe("cancelled");
    await delay(20);
    expect(requests).toEqual([]);
  });

  it("cancel() from a listener of a client tool_call runs no tool for it", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path !== "/runs") return void res.writeHead(202).end();
      openStream(res);
      res.write(
        line(event(0, "agent_start")) +
          line(
            event(1, "tool_call", {
              toolCallId: "c1",
              toolName: "erase",
              args: {},
              execution: "client",
              hookToken: "k",
            }),
          ),
      );
    });
    const erase = vi.fn(() => "erased");
    const run = new AgentClient({ baseUrl, tools: { erase }, ...fast }).start("go");
    run.on("tool_call", () => void run.cancel());
    expect((await rejection(run.result())).code).toBe("cancelled");
    await until(() => requests.length === 2, "the cancel post");
    expect(erase).not.toHaveBeenCalled();
    expect(requests.map((request) => request.path)).toEqual(["/runs", `/runs/${RUN}/cancel`]);
  });

  it("cancel() after agent_end changes nothing and posts nothing", async () => {
    const { baseUrl, requests } = await serve((_req, res) => {
      openStream(res);
      res.end(script(3).map(line).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("go");
    const end = await run.result();
    await run.cancel();
    await expect(run.result()).resolves.toBe(end);
    expect(requests).toHaveLength(1);
  });

  it("cancel() from a listener of agent_end changes nothing and posts nothing: the agent_end came first", async () => {
    const events = script(3);
    const { baseUrl, requests } = await serve((_req, res) => {
      openStream(res);
      res.end(events.map(line).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("go");
    const cancelled = new Promise<void>((resolve) => run.on("agent_end", () => resolve(run.cancel())));
    await cancelled;
    await expect(run.result()).resolves.toEqual(events[2]);
    expect(await collect(run)).toEqual(events);
    expect(requests).toHaveLength(1);
  });

  it("start() cancels the client's run in flight before it posts the new prompt", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        const prompt = (JSON.parse(req.body) as { prompt: string }).prompt;
        const runId = prompt === "first" ? "r-first" : "r-second";
        openStream(res, "application/x-ndjson", runId);
        if (prompt === "first") {
          res.write(line({ type: "agent_start", runId, seq: 0, ts: 0 }));
          return; // in flight until cancelled
        }
        res.end(line({ type: "agent_start", runId, seq: 0, ts: 0 }) + line({ ...agentEnd(1), runId }));
        return;
      }
      await delay(30); // a slow cancel: the new run must wait for it
      res.writeHead(202).end();
    });
    const client = new AgentClient({ baseUrl, ...fast });
    const first = client.start("first");
    expect(await first.runId).toBe("r-first");
    const second = client.start("second");
    expect((await rejection(first.result())).code).toBe("cancelled");
    await expect(second.result()).resolves.toMatchObject({ type: "agent_end", runId: "r-second" });
    expect(requests.map((r) => `${r.method} ${r.path} ${r.body}`)).toEqual([
      'POST /runs {"prompt":"first"}',
      "POST /runs/r-first/cancel ",
      'POST /runs {"prompt":"second"}',
    ]);
  });
});

describe("AgentClient: cancel before the server named the run", () => {
  it("cancel() while the start is unanswered posts /cancel once the answer names the run", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        await delay(150); // the server builds its agent
        openStream(res);
        res.write(line(event(0, "agent_start")));
        return; // and runs on until cancelled
      }
      res.writeHead(202).end();
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("go");
    await until(() => requests.length === 1, "the start to be posted");
    await run.cancel();
    expect((await rejection(run.result())).code).toBe("cancelled");
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /runs", `POST /runs/${RUN}/cancel`]);
  });

  it("a new start() cancels such a run on the server before it posts its own", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        const prompt = (JSON.parse(req.body) as { prompt: string }).prompt;
        const runId = prompt === "first" ? "r-first" : "r-second";
        if (prompt === "first") await delay(150);
        openStream(res, "application/x-ndjson", runId);
        if (prompt === "first") return void res.write(line({ type: "agent_start", runId, seq: 0, ts: 0 }));
        return void res.end(
          line({ type: "agent_start", runId, seq: 0, ts: 0 }) + line({ ...agentEnd(1), runId }),
        );
      }
      res.writeHead(202).end();
    });
    const client = new AgentClient({ baseUrl, ...fast });
    const first = client.start("first");
    await until(() => requests.length === 1, "the first start to be posted");
    const second = client.start("second");
    await expect(second.result()).resolves.toMatchObject({ type: "agent_end", runId: "r-second" });
    expect((await rejection(first.result())).code).toBe("cancelled");
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /runs",
      "POST /runs/r-first/cancel",
      "POST /runs",
    ]);
  });

  it("cancel() waits for the start's answer no longer than idleTimeoutMs, asks once more, then posts nothing", async () => {
    const { baseUrl, requests } = await serve(() => {}); // never answers
    const run = new AgentClient({ baseUrl, ...fast, idleTimeoutMs: 100 }).start("go");
    await until(() => requests.length === 1, "the start to be posted");
    const started = Date.now();
    await run.cancel();
    // The start's wait, then the wait for the answer to its post again: idleTimeoutMs each (the
    // first began with the post, before \`started\`, so only the bound above is certain).
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await rejection(run.result())).code).toBe("cancelled");
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /runs", "POST /runs"]);
  });

  /** A server whose first `POST /runs` drops before any answer; a post of it again gets run r1. */
  async function dropsFirstStart() {
    const served = await serve((req, res) => {
      if (req.path === "/runs") {
        if (served.requests.filter((r) => r.path === "/runs").length === 1) return void res.socket?.destroy();
        openStream(res);
        return void res.write(line(event(0, "agent_start"))); // and runs on until cancelled
      }
      res.writeHead(202).end();
    });
    return served;
  }

  function expectTheStartAskedAgainThenCancelled(requests: Recorded[]): void {
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /runs",
      "POST /runs",
      `POST /runs/${RUN}/cancel`,
    ]);
    const [first, again] = requests;
    expect(again?.body).toBe(first?.body);
    expect(again?.headers["idempotency-key"]).toMatch(/^[0-9a-f]{32}$/);
    expect(again?.headers["idempotency-key"]).toBe(first?.headers["idempotency-key"]);
  }

  it("cancel() while a dropped start waits to be posted again: the start is posted again with its key, and the run it names cancelled", async () => {
    const { baseUrl, requests } = await dropsFirstStart();
    const run = new AgentClient({ baseUrl, reconnect: { attempts: 3, delayMs: 60_000 } }).start("go", {
      outliveStream: true,
    });
    await until(() => requests.length === 1, "the start to be posted");
    await run.cancel();
    expect((await rejection(run.result())).code).toBe("cancelled");
    expectTheStartAskedAgainThenCancelled(requests);
  });

  it("cancel() after a start failed unnamed (its attempts spent) cancels the run it may have started", async () => {
    const { baseUrl, requests } = await dropsFirstStart();
    const run = new AgentClient({ baseUrl, reconnect: { attempts: 0, delayMs: 10 } }).start("go", {
      outliveStream: true,
    });
    expect((await rejection(run.result())).code).toBe("network");
    await run.cancel();
    expectTheStartAskedAgainThenCancelled(requests);
  });

  it("cancel() after the server refused the start (a 4xx, or a JSON error with status 200) posts nothing: it started nothing", async () => {
    for (const status of [403, 200]) {
      const { baseUrl, requests } = await serve((_req, res) => fail(res, status, "refused"));
      const run = new AgentClient({ baseUrl, ...fast }).start("go");
      expect(await rejection(run.result())).toMatchObject({ code: "http", status, serverCode: "refused" });
      await run.cancel();
      expect(requests.map((request) => `${request.method} ${request.path}`)).toEqual(["POST /runs"]);
    }
  });

  it("cancel() before the start was posted posts nothing", async () => {
    const { baseUrl, requests } = await serve((_req, res) => void res.writeHead(202).end());
    const run = new AgentClient({ baseUrl, ...fast }).start("go");
    await run.cancel();
    expect((await rejection(run.result())).code).toBe("cancelled");
    await delay(50);
    expect(requests).toEqual([]);
  });
});

describe("AgentClient: steering", () => {
  it("steer() and followUp() post the message; a refusal rejects with code 'http'", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        res.write(line(event(0, "agent_start")));
        await until(() => requests.length >= 4, "the commands");
        res.end(line(agentEnd(1)));
        return;
      }
      if (req.path.endsWith("/follow-up") && req.body.includes("late")) return fail(res, 409, "run-ended");
      res.writeHead(202).end();
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("go");
    await run.steer("left ✓");
    await run.followUp("then this");
    const error = await rejection(run.followUp("late"));
    expect(error).toMatchObject({ code: "http", status: 409, serverCode: "run-ended" });
    await run.result();
    expect(requests.slice(1).map((r) => [r.path, JSON.parse(r.body)])).toEqual([
      [`/runs/${RUN}/steer`, { message: "left ✓" }],
      [`/runs/${RUN}/follow-up`, { message: "then this" }],
      [`/runs/${RUN}/follow-up`, { message: "late" }],
    ]);
  });
});

describe("AgentClient: steering a server that never answers", () => {
  it("steer() and followUp() reject with code 'network' after idleTimeoutMs, never hang", async () => {
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path !== "/runs") return; // a command: no answer, ever
      openStream(res);
      res.write(line(event(0, "agent_start")));
    });
    const run = new AgentClient({ baseUrl, ...fast, idleTimeoutMs: 100 }).start("go");
    for (const send of [() => run.steer("left"), () => run.followUp("then")]) {
      const answered = send().then(
        () => "accepted",
        (error: unknown) => error,
      );
      const error = await Promise.race([answered, delay(2_000).then(() => "still waiting")]);
      expect(error).toBeInstanceOf(ClientError);
      expect(error).toMatchObject({
        code: "network",
        message: expect.stringContaining("no answer came for 100 ms"),
      });
    }
    await run.cancel();
  });

  it("steer() rejects with the answer's status after idleTimeoutMs when the body of a refusal never ends", async () => {
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path !== "/runs") {
        res.writeHead(409, { "content-type": "application/json" });
        return void res.write('{"error":');
      }
      openStream(res);
      res.write(line(event(0, "agent_start")));
    });
    const run = new AgentClient({ baseUrl, ...fast, idleTimeoutMs: 100 }).start("go");
    const answered = run.steer("left").then(
      () => "accepted",
      (error: unknown) => error,
    );
    const error = await Promise.race([answered, delay(5_000).then(() => "still waiting")]);
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ code: "http", status: 409 });
    await run.cancel();
  });
});

describe("AgentClient: backpressure", () => {
  /** A fetch whose response body makes one event per pull, and counts the pulls. */
  function endlessFetch(total: number) {
    const state = { pulls: 0 };
    const encoder = new TextEncoder();
    const fetch = async () =>
      new Response(
        new ReadableStream<Uint8Array>(
          {
            pull(controller) {
              const seq = state.pulls++;
              const value =
                seq === total - 1
                  ? agentEnd(seq)
                  : event(seq, seq === 0 ? "agent_start" : "thinking", { text: "x" });
              controller.enqueue(encoder.encode(line(value)));
              if (seq === total - 1) controller.close();
            },
          },
          { highWaterMark: 0 },
        ),
        { headers: { "content-type": "application/x-ndjson", "x-run-id": RUN } },
      );
    return { state, fetch: fetch as typeof globalThis.fetch };
  }

  it("reads no further than the iterating consumer pulls, plus a bounded buffer", async () => {
    const { state, fetch } = endlessFetch(500);
    const run = new AgentClient({ baseUrl: "http://test/api", fetch }).start("go");
    const iterator = run[Symbol.asyncIterator]();
    for (let i = 0; i < 5; i++) await iterator.next();
    await delay(50);
    const paused = state.pulls;
    expect(paused).toBeLessThan(5 + 64);
    await delay(50);
    expect(state.pulls).toBe(paused);
    // Once the consumer leaves, the rest is read (and buffered) so result() still comes.
    await iterator.return?.();
    await expect(run.result()).resolves.toMatchObject({ seq: 499 });
    expect(state.pulls).toBe(500);
  });

  it("reads everything when nobody iterates", async () => {
    const { state, fetch } = endlessFetch(500);
    const run = new AgentClient({ baseUrl: "http://test/api", fetch }).start("go");
    await expect(run.result()).resolves.toMatchObject({ seq: 499 });
    expect(state.pulls).toBe(500);
    expect(await collect(run)).toHaveLength(500);
  });
});

describe('AgentClient: suspended runs (clientTools: "suspend")', () => {
  interface Pending {
    toolCallId: string;
    toolName: string;
    args: unknown;
    hookToken?: string;
  }

  const of = (runId: string, seq: number, type: string, payload: Record<string, unknown> = {}) => ({
    ...event(seq, type, payload),
    runId,
  });

  const call = (toolCallId: string, toolName = "t", args: unknown = { id: toolCallId }): Pending => ({
    toolCallId,
    toolName,
    args,
    hookToken: `tok-${toolCallId}`,
  });

  /** A run that ends suspended on `calls`: agent_start, then agent_end awaiting_client_tool. */
  const suspendedRun = (runId: string, calls: Pending[]) => [
    of(runId, 0, "agent_start"),
    of(runId, 1, "agent_end", {
      stopReason: "awaiting_client_tool",
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      durationMs: 1,
      pendingClientTools: calls,
    }),
  ];

  /** A resumed run that ends completed: agent_start, the tool results, a text delta, agent_end. */
  const completedRun = (runId: string, toolCallIds: string[]) => [
    of(runId, 0, "agent_start"),
    ...toolCallIds.map((toolCallId, i) =>
      of(runId, 1 + i, "tool_result", { toolCallId, toolName: "t", status: "ok", result: toolCallId }),
    ),
    of(runId, 1 + toolCallIds.length, "text_delta", { text: "done", index: 0 }),
    { ...agentEnd(2 + toolCallIds.length), runId },
  ];

  /** Serves each run's events (POST /runs for the first, GET …/events for the others) at once. */
  function streamRun(res: ServerResponse, runId: string, events: Record<string, unknown>[]): void {
    openStream(res, "application/x-ndjson", runId);
    res.end(events.map(line).join(""));
  }

  const resumedAs = (res: ServerResponse, runId: string) => {
    res.writeHead(202, { "content-type": "application/json" });
    res.end(JSON.stringify({ runId }));
  };

  const route = (r: Recorded) => `${r.method} ${r.path}${r.query.size > 0 ? `?${r.query}` : ""}`;

  it("answers the pending calls, follows the run the last result resumed, and resolves with its agent_end", async () => {
    const first = suspendedRun("r1", [call("c1", "t", { n: 1 }), call("c2", "u", { n: 2 })]);
    const second = completedRun("r2", ["c1", "c2"]);
    let posts = 0;
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", first);
      if (req.path === "/runs/r1/tool-results") {
        posts++;
        if (posts === 1) return void res.writeHead(204).end();
        return resumedAs(res, "r2");
      }
      expect(req.path).toBe("/runs/r2/events");
      streamRun(res, "r2", second);
    });
    const t = vi.fn(async (args: unknown) => {
      await delay(5);
      return { got: args };
    });
    const u = vi.fn(async (args: unknown) => {
      await delay(40); // posts after t: the last result
      return { got: args };
    });
    const run = new AgentClient({ baseUrl, tools: { t, u }, ...fast }).start("go");
    const seen = await collect(run);
    expect(seen).toEqual([...first, ...second]);
    const end = await run.result();
    expect(end).toEqual(second.at(-1));
    expect(end).toMatchObject({ runId: "r2", stopReason: "completed" });
    expect(await run.runId).toBe("r1");
    expect(run.currentRunId).toBe("r2");
    expect(t).toHaveBeenCalledTimes(1);
    expect(u).toHaveBeenCalledTimes(1);
    expect(t.mock.calls[0]?.[0]).toEqual({ n: 1 });
    expect(requests.map(route)).toEqual([
      "POST /runs",
      "POST /runs/r1/tool-results",
      "POST /runs/r1/tool-results",
      "GET /runs/r2/events",
    ]);
    expect(requests.slice(1, 3).map((r) => JSON.parse(r.body))).toEqual([
      { toolCallId: "c1", token: "tok-c1", result: { got: { n: 1 } } },
      { toolCallId: "c2", token: "tok-c2", result: { got: { n: 2 } } },
    ]);
  });

  it("goes through two suspensions in a row", async () => {
    const runs: Record<string, Record<string, unknown>[]> = {
      r1: suspendedRun("r1", [call("c1")]),
      r2: [
        of("r2", 0, "agent_start"),
        of("r2", 1, "tool_result", { toolCallId: "c1", toolName: "t", status: "ok", result: "c1" }),
        ...suspendedRun("r2", [call("c2")])
          .slice(1)
          .map((value) => ({ ...value, seq: 2 })),
      ],
      r3: completedRun("r3", ["c2"]),
    };
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", runs.r1 ?? []);
      if (req.path === "/runs/r1/tool-results") return resumedAs(res, "r2");
      if (req.path === "/runs/r2/tool-results") return resumedAs(res, "r3");
      const runId = req.path.split("/")[2] as string;
      streamRun(res, runId, runs[runId] ?? []);
    });
    const t = vi.fn((args: unknown) => args);
    const run = new AgentClient({ baseUrl, tools: { t }, ...fast }).start("go");
    const currentRunIds = new Set<string | undefined>();
    run.on("*", () => currentRunIds.add(run.currentRunId));
    expect(await collect(run)).toEqual([...(runs.r1 ?? []), ...(runs.r2 ?? []), ...(runs.r3 ?? [])]);
    await expect(run.result()).resolves.toMatchObject({ runId: "r3", stopReason: "completed" });
    expect(t.mock.calls.map(([args]) => args)).toEqual([{ id: "c1" }, { id: "c2" }]);
    expect([...currentRunIds]).toEqual(["r1", "r2", "r3"]);
    expect(requests.map(route)).toEqual([
      "POST /runs",
      "POST /runs/r1/tool-results",
      "GET /runs/r2/events",
      "POST /runs/r2/tool-results",
      "GET /runs/r3/events",
    ]);
  });

  it("retries the last result's post after a 503 and follows the run its 202 names; the tool runs once", async () => {
    let posts = 0;
    const second = completedRun("r2", ["c1"]);
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", suspendedRun("r1", [call("c1")]));
      if (req.path.endsWith("/tool-results")) {
        posts++;
        return posts === 1 ? fail(res, 503, "busy") : resumedAs(res, "r2");
      }
      streamRun(res, "r2", second);
    });
    const t = vi.fn(() => "ok");
    const run = new AgentClient({ baseUrl, tools: { t }, ...fast }).start("go");
    const seen = await collect(run);
    expect(seen.filter((value) => value.type === "client_error")).toEqual([]);
    await expect(run.result()).resolves.toEqual(second.at(-1));
    expect(t).toHaveBeenCalledTimes(1);
    const bodies = requests.filter((r) => r.path.endsWith("/tool-results")).map((r) => JSON.parse(r.body));
    expect(bodies).toEqual([1, 2].map(() => ({ toolCallId: "c1", token: "tok-c1", result: "ok" })));
    expect(requests.at(-1)).toMatchObject({ method: "GET", path: "/runs/r2/events" });
  });

  it("resolves with the suspended agent_end when no post resumes the run (a 410), with a client_error", async () => {
    const first = suspendedRun("r1", [call("c1"), call("c2")]);
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", first);
      if (JSON.parse(req.body).toolCallId === "c1") return void res.writeHead(204).end();
      fail(res, 410, "token-expired");
    });
    const t = vi.fn(() => "ok");
    const run = new AgentClient({ baseUrl, tools: { t }, ...fast }).start("go");
    const end = await run.result();
    expect(end).toEqual(first[1]);
    expect(end.stopReason).toBe("awaiting_client_tool");
    expect(run.currentRunId).toBe("r1");
    const seen = await collect(run);
    expect(seen.slice(0, 2)).toEqual(first);
    expect(seen.slice(2)).toEqual([
      expect.objectContaining({
        type: "client_error",
        code: "tool-result-rejected",
        status: 410,
        serverCode: "token-expired",
        toolCallId: "c2",
      }),
    ]);
    expect(t).toHaveBeenCalledTimes(2);
    expect(requests.map(route)).toEqual([
      "POST /runs",
      "POST /runs/r1/tool-results",
      "POST /runs/r1/tool-results",
    ]);
  });

  it("resolves with the suspended agent_end, running nothing and reporting nothing, when its calls have no hookToken (answered already)", async () => {
    const first = suspendedRun("r1", [{ toolCallId: "c1", toolName: "t", args: {} }]);
    const { baseUrl, requests } = await serve((_req, res) => streamRun(res, "r1", first));
    const t = vi.fn(() => "ok");
    const run = new AgentClient({ baseUrl, tools: { t }, ...fast }).start("go");
    await expect(run.result()).resolves.toEqual(first[1]);
    expect(await collect(run)).toEqual(first);
    expect(t).not.toHaveBeenCalled();
    expect(requests).toHaveLength(1);
  });

  it("resolves with the suspended agent_end, with a malformed-event, when a call's hookToken is no string", async () => {
    const first = suspendedRun("r1", [{ toolCallId: "c1", toolName: "t", args: {}, hookToken: 7 as never }]);
    const { baseUrl, requests } = await serve((_req, res) => streamRun(res, "r1", first));
    const t = vi.fn(() => "ok");
    const run = new AgentClient({ baseUrl, tools: { t }, ...fast }).start("go");
    await expect(run.result()).resolves.toEqual(first[1]);
    expect((await collect(run)).slice(2)).toEqual([
      expect.objectContaining({ type: "client_error", code: "malformed-event", toolCallId: "c1" }),
    ]);
    expect(t).not.toHaveBeenCalled();
    expect(requests).toHaveLength(1);
  });

  it.each([
    ["an object", { c1: call("c1") }],
    ["a string", "c1"],
    ["a list of no objects", [null, 7]],
  ])(
    "resolves with the suspended agent_end, with a malformed-event, when its pendingClientTools is %s",
    async (_, pending) => {
      const first = suspendedRun("r1", pending as never);
      const { baseUrl, requests } = await serve((_req, res) => streamRun(res, "r1", first));
      const t = vi.fn(() => "ok");
      const run = new AgentClient({ baseUrl, tools: { t }, ...fast }).start("go");
      await expect(run.result()).resolves.toEqual(first[1]);
      expect((await collect(run)).slice(2)).toEqual([
        expect.objectContaining({ type: "client_error", code: "malformed-event" }),
      ]);
      expect(t).not.toHaveBeenCalled();
      expect(requests).toHaveLength(1);
    },
  );

  it("gives a result post idleTimeoutMs for its whole answer: one never answered, or never finished, does not hold the run", async () => {
    const first = suspendedRun("r1", [call("c1"), call("c2")]);
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", first);
      // c1: no answer ever; c2: a 202 whose body never ends.
      if (JSON.parse(req.body).toolCallId === "c2") {
        res.writeHead(202, { "content-type": "application/json" });
        res.write('{"runId":');
      }
    });
    const run = new AgentClient({ baseUrl, tools: { t: () => "ok" }, ...fast, idleTimeoutMs: 100 }).start(
      "go",
    );
    const end = await Promise.race([run.result(), delay(5_000).then(() => "still waiting")]);
    expect(end).toEqual(first[1]);
    const errors = (await collect(run)).slice(2) as ClientErrorEvent[];
    expect(errors.sort((a, b) => String(a.toolCallId).localeCompare(String(b.toolCallId)))).toEqual([
      expect.objectContaining({
        type: "client_error",
        code: "tool-result-failed",
        message: 'The result of the client tool call "c1" (t) could not be posted: no answer came for 100 ms',
        toolCallId: "c1",
      }),
      expect.objectContaining({
        type: "client_error",
        code: "tool-result-failed",
        message:
          'The server took the result of the client tool call "c2" (t) (202), but its answer named no run to follow: no answer came for 100 ms',
        status: 202,
        toolCallId: "c2",
      }),
    ]);
  });

  it("cancel() during a pending tool aborts its signal, cancels the suspended run (giving its calls up), posts no result, and result() rejects with 'cancelled'", async () => {
    const first = suspendedRun("r1", [call("c1", "slow")]);
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", first);
      if (req.path === "/runs/r1/cancel") return void res.writeHead(202).end();
      fail(res, 500, "unexpected");
    });
    let toolSignal: AbortSignal | undefined;
    const slow = (_args: unknown, { signal }: { signal: AbortSignal }) => {
      toolSignal = signal;
      return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    };
    const run = new AgentClient({ baseUrl, tools: { slow }, ...fast }).start("go");
    const iterated = collect(run);
    await until(() => toolSignal !== undefined, "the tool to start");
    await run.cancel();
    expect(toolSignal?.aborted).toBe(true);
    expect((await rejection(run.result())).code).toBe("cancelled");
    expect(await iterated).toEqual(first);
    await delay(30);
    // The suspended run gives its calls up: a page that attaches to it later runs none of them,
    // and so cannot resume the run that was cancelled. The result is not posted.
    expect(requests.map(route)).toEqual(["POST /runs", "POST /runs/r1/cancel"]);
  });

  it("cancel() ends a suspended run whose tool never settles and ignores its signal: result() rejects with 'cancelled'", async () => {
    const first = suspendedRun("r1", [call("c1", "stuck")]);
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", first);
      if (req.path === "/runs/r1/cancel") return void res.writeHead(202).end();
      fail(res, 500, "unexpected");
    });
    let started = false;
    const stuck = () => {
      started = true;
      return new Promise(() => {});
    };
    const run = new AgentClient({ baseUrl, tools: { stuck }, ...fast }).start("go");
    const iterated = collect(run);
    await until(() => started, "the tool to start");
    await run.cancel();
    expect((await rejection(run.result())).code).toBe("cancelled");
    expect(await iterated).toEqual(first);
    expect(requests.map(route)).toEqual(["POST /runs", "POST /runs/r1/cancel"]);
  });

  it("cancel() while the last result's post is under way cancels the run that post resumed", async () => {
    const { promise: postArrived, resolve: posted } = latch();
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", suspendedRun("r1", [call("c1")]));
      if (req.path === "/runs/r1/tool-results") {
        posted();
        await delay(50); // the server takes the result, and answers late
        return resumedAs(res, "r2");
      }
      if (req.path === "/runs/r1/cancel" || req.path === "/runs/r2/cancel")
        return void res.writeHead(202).end();
      fail(res, 500, "unexpected");
    });
    const run = new AgentClient({ baseUrl, tools: { t: () => "ok" }, ...fast }).start("go");
    await postArrived;
    await run.cancel();
    expect((await rejection(run.result())).code).toBe("cancelled");
    // The suspended run's cancel too, at once: had it come first, the result would have resumed nothing.
    expect(requests.map(route)).toEqual([
      "POST /runs",
      "POST /runs/r1/tool-results",
      "POST /runs/r1/cancel",
      "POST /runs/r2/cancel",
    ]);
  });

  it("steer() and cancel() act on the run that resumed the suspended one", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") return streamRun(res, "r1", suspendedRun("r1", [call("c1")]));
      if (req.path === "/runs/r1/tool-results") return resumedAs(res, "r2");
      if (req.path === "/runs/r2/events") {
        openStream(res, "application/x-ndjson", "r2");
        res.write(line(of("r2", 0, "agent_start")));
        return; // and goes on until cancelled
      }
      res.writeHead(202).end();
    });
    const run = new AgentClient({ baseUrl, tools: { t: () => "ok" }, ...fast }).start("go");
    await until(() => run.currentRunId === "r2", "the resumed run");
    await run.steer("left");
    await run.cancel();
    expect((await rejection(run.result())).code).toBe("cancelled");
    expect(requests.map(route)).toEqual([
      "POST /runs",
      "POST /runs/r1/tool-results",
      "GET /runs/r2/events",
      "POST /runs/r2/steer",
      "POST /runs/r2/cancel",
    ]);
  });
});

describe("AgentClient: a hostile server", () => {
  const clientCall = { toolCallId: "c1", toolName: "t", args: {}, execution: "client" };

  it("follows no redirect: the headers never reach another origin, and each request fails with code 'http' and the 3xx status", async () => {
    const elsewhere = await serve((_req, res) => fail(res, 404, "not-found"));
    const redirect = (req: Recorded, res: ServerResponse) => {
      res.writeHead(307, { location: `${elsewhere.baseUrl}${req.path}` });
      res.end();
    };
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path !== "/runs" || req.body.includes("away")) return redirect(req, res);
      openStream(res);
      res.write(line(event(0, "agent_start")));
      res.write(line(event(1, "tool_call", { ...clientCall, hookToken: "tok" })));
    });
    const client = new AgentClient({
      baseUrl,
      headers: { "x-api-key": "secret" },
      tools: { t: () => 1 },
      ...fast,
    });
    const run = client.start("stay");
    const rejected = new Promise<ClientEvent>((resolve) => run.on("client_error", resolve));
    expect(await rejected).toMatchObject({ code: "tool-result-rejected", status: 307 });
    expect(await rejection(run.steer("left"))).toMatchObject({ code: "http", status: 307 });
    const started = await rejection(client.start("away").result());
    expect(started).toMatchObject({ code: "http", status: 307 });
    expect(started.message).toBe(
      `HTTP 307: the server redirected the request to ${elsewhere.baseUrl}/runs; the client follows no redirect, so its headers only ever go to baseUrl's server.`,
    );
    const attached = await rejection(client.attach("r2").result());
    expect(attached).toMatchObject({ code: "http", status: 307 });
    expect(elsewhere.requests).toEqual([]);
  });

  it("drops an object with no runId or no whole seq with a client_error: a bare agent_end does not settle the run", async () => {
    const events = script(3);
    const bare = { type: "agent_end", stopReason: "completed" };
    const stringSeq = { ...agentEnd(1), seq: "1" };
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.write(line(events[0]) + line(bare) + line(stringSeq) + line({ type: "ping" }));
      res.end(line(events[1]) + line(events[2]));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    const dropped = (value: unknown) =>
      expect.objectContaining({ type: "client_error", code: "malformed-event", line: JSON.stringify(value) });
    expect(await collect(run)).toEqual([
      events[0],
      dropped(bare),
      dropped(stringSeq),
      dropped({ type: "ping" }),
      events[1],
      events[2],
    ]);
    await expect(run.result()).resolves.toEqual(events[2]);
  });

  it("runs no tool for a client tool_call whose toolCallId or toolName is no string: a malformed-event, and nothing posted", async () => {
    const arrayName = event(1, "tool_call", { ...clientCall, toolName: ["t"], hookToken: "tok" });
    const objectId = event(2, "tool_call", { ...clientCall, toolCallId: { id: "c1" }, hookToken: "tok" });
    const { baseUrl, requests } = await serve(async (_req, res) => {
      openStream(res);
      res.end(line(event(0, "agent_start")) + line(arrayName) + line(objectId) + line(agentEnd(3)));
    });
    const t = vi.fn(() => 1);
    const run = new AgentClient({ baseUrl, tools: { t }, ...fast }).start("hi");
    const errors = (await collect(run)).filter((value) => value.type === "client_error");
    expect(errors).toEqual(
      [arrayName, objectId].map((value) =>
        expect.objectContaining({ code: "malformed-event", line: JSON.stringify(value) }),
      ),
    );
    expect(t).not.toHaveBeenCalled();
    expect(requests.map((r) => r.path)).toEqual(["/runs"]);
  });

  it('names the run id attach() refuses as it was given: an empty one is shown as ""', () => {
    const client = new AgentClient({ baseUrl: "http://127.0.0.1:9", ...fast });
    expect(() => client.attach("")).toThrow('attach() needs a run id (not "." or ".."), got "".');
    expect(() => client.attach("..")).toThrow('got "..".');
  });

  it("takes no run id '.' or '..' (a URL would drop the segment, or the one before: another route): attach() throws, a server's is no name", async () => {
    const client = new AgentClient({ baseUrl: "http://127.0.0.1:9", ...fast });
    expect(() => client.attach("..")).toThrow(TypeError);
    expect(() => client.attach(".")).toThrow(TypeError);
    const dots = { type: "agent_start", runId: "..", seq: 0, ts: 1 };
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs" && req.body.includes("dots")) {
        openStream(res, "application/x-ndjson", "..");
        res.end(line(dots));
      } else if (req.path === "/runs") endsSuspended(res, suspendedOn(clientCall));
      else res.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ runId: ".." }));
    });
    const named = new AgentClient({ baseUrl, reconnect: { attempts: 1, delayMs: 10 } }).start("dots");
    const seen: ClientEvent[] = [];
    named.on("*", (value) => seen.push(value));
    expect(await rejection(named.result())).toMatchObject({ code: "network" });
    expect(seen).toEqual([
      expect.objectContaining({ code: "malformed-event", line: JSON.stringify(dots) }),
      expect.objectContaining({ code: "malformed-event", line: JSON.stringify(dots) }),
    ]);
    const resumed = new AgentClient({ baseUrl, tools: { t: () => 1 }, ...fast }).start("tools");
    const failed = new Promise<ClientEvent>((resolve) => resumed.on("client_error", resolve));
    expect(await resumed.result()).toMatchObject({ stopReason: "awaiting_client_tool" });
    expect(await failed).toMatchObject({ code: "tool-result-failed", status: 202 });
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /runs",
      "POST /runs",
      "POST /runs",
      `POST /runs/${RUN}/tool-results`,
    ]);
  });

  it("keeps no chunk it has read while the stream stays open: a long stream's memory does not grow with its chunks", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const encoder = new TextEncoder();
    let stream!: ReadableStreamDefaultController<Uint8Array>;
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>(
      {
        start(controller) {
          stream = controller;
        },
        pull() {
          pulls++;
        },
      },
      { highWaterMark: 0 },
    );
    const headers = { "content-type": "application/x-ndjson", "x-run-id": RUN };
    const fetchBody: typeof fetch = async () => new Response(body, { headers });
    const run = new AgentClient({ baseUrl: "http://127.0.0.1:9", fetch: fetchBody }).start("hi");
    // Made in a function of its own: a local of this (async) one may outlive its block.
    const send = (value: unknown) => {
      const chunk = encoder.encode(line(value));
      stream.enqueue(chunk);
      return new WeakRef(chunk);
    };
    send(event(0, "agent_start"));
    const heartbeat = send({ type: "heartbeat", ts: 1 });
    // The chunk read last may still be in the reading function's hands: two more come after.
    send({ type: "heartbeat", ts: 2 });
    send({ type: "heartbeat", ts: 3 });
    // All read, and the next read asked for: the client holds the first heartbeat's chunk no more.
    await until(() => pulls >= 1, "the read after the heartbeats");
    for (let i = 0; i < 20 && heartbeat.deref() !== undefined; i++) {
      await delay(10);
      gc();
    }
    expect(heartbeat.deref()).toBeUndefined();
    send(agentEnd(1));
    stream.close();
    await expect(run.result()).resolves.toMatchObject({ stopReason: "completed" });
  });

  it("re-attaches from the last event when the stream skips a seq, and yields each event once, in order", async () => {
    const events = script(6);
    const { baseUrl, requests } = await serve(async (req, res) => {
      openStream(res);
      // The start's stream leaves out 2 and 3; the re-attach brings them.
      if (req.path === "/runs")
        res.end(line(events[0]) + line(events[1]) + line(events[4]) + line(events[5]));
      else
        res.end(
          events
            .slice(Number(req.query.get("after")) + 1)
            .map(line)
            .join(""),
        );
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    expect(await collect(run)).toEqual(events);
    expect(requests.map((r) => `${r.method} ${r.path} ${r.query}`)).toEqual([
      "POST /runs ",
      `GET /runs/${RUN}/events after=1`,
    ]);
  });

  it("takes the run's id from an event that skips seqs, before the run was named: it re-attaches, not posts the start again", async () => {
    const events = script(3);
    const { baseUrl, requests } = await serve(async (req, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" }); // no X-Run-Id
      res.end(req.path === "/runs" ? line(events[1]) : events.map(line).join(""));
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("hi");
    expect(await collect(run)).toEqual(events);
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /runs", `GET /runs/${RUN}/events`]);
  });

  it("fails with code 'network', after the events before the gap, when every re-attach skips the same seqs", async () => {
    const events = script(5);
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.end(line(events[0]) + line(events[1]) + line(events[3]) + line(events[4]));
    });
    const run = new AgentClient({ baseUrl, reconnect: { attempts: 2, delayMs: 10 } }).start("hi");
    const seen: ClientEvent[] = [];
    run.on("*", (value) => seen.push(value));
    const error = await rejection(run.result());
    expect(error).toMatchObject({
      code: "network",
      message: expect.stringMatching(/event 3 .* after event 1/),
    });
    expect(seen).toEqual([events[0], events[1]]);
  });

  it("gives up at once on a Retry-After longer than a minute, instead of retrying back to back (a timer cannot wait that long)", async () => {
    const forever = { "retry-after": "99999999" };
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        res.write(line(event(0, "agent_start")));
        res.write(line(event(1, "tool_call", { ...clientCall, hookToken: "tok" })));
        await until(() => requests.some((r) => r.path.endsWith("/steer")), "the steer");
        return void res.end();
      }
      if (req.path.endsWith("/events")) return fail(res, 503, "server-busy", forever);
      fail(res, 429, "rate-limited", forever);
    });
    const run = new AgentClient({ baseUrl, tools: { t: () => 1 }, ...fast }).start("go");
    const failed = new Promise<ClientEvent>((resolve) => run.on("client_error", resolve));
    expect(await failed).toMatchObject({ code: "tool-result-failed", status: 429 });
    expect(await rejection(run.steer("left"))).toMatchObject({ code: "http", status: 429 });
    // The stream ends now, and its re-attach is answered 503.
    const error = await rejection(run.result());
    expect(error).toMatchObject({ code: "http", status: 503, serverCode: "server-busy" });
    expect(requests.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      "GET /runs/r1/events",
      "POST /runs",
      "POST /runs/r1/steer",
      "POST /runs/r1/tool-results",
    ]);
  });
  it("counts only new events as progress: a server that drops each re-attach after heartbeats alone is given up on after reconnect.attempts", async () => {
    const { baseUrl, requests } = await serve((req, res) => {
      const gets = requests.filter((r) => r.method === "GET").length;
      if (gets > 10) return fail(res, 404, "not-found");
      openStream(res);
      if (req.path === "/runs") res.write(line(event(0, "agent_start")));
      // A heartbeat, the last event again, and an object that is no event of the run: none is new.
      res.write(line({ type: "heartbeat", ts: 1 }) + line(event(0, "agent_start")) + line({ type: "ping" }));
      res.end();
    });
    const run = new AgentClient({ baseUrl, reconnect: { attempts: 2, delayMs: 10 } }).start("hi");
    const error = await rejection(run.result());
    expect(error).toMatchObject({ code: "network", message: expect.stringMatching(/2 re-attach attempt/) });
    expect(requests.filter((r) => r.method === "GET")).toHaveLength(2);
  });

  /**
   * Writes `text` again and again (64 MiB at most, then ends the response) as fast as the client
   * reads it, until the client goes away; resolves with the bytes written.
   */
  async function flood(res: ServerResponse, text: string): Promise<number> {
    const chunk = Buffer.from(text.repeat(Math.ceil(65_536 / text.length)));
    let written = 0;
    while (!res.destroyed && written < 64 * 1024 * 1024) {
      written += chunk.length;
      if (res.write(chunk)) continue;
      await new Promise<void>((resolve) => {
        const resume = () => {
          res.off("drain", resume).off("close", resume);
          resolve();
        };
        res.on("drain", resume).on("close", resume);
      });
    }
    res.end();
    return written;
  }

  it("fails with code 'too-large' and cancels the body when a line (NDJSON) or an event (SSE) grows past maxEventBytes", async () => {
    for (const format of ["ndjson", "sse"] as const) {
      let written: Promise<number> | undefined;
      const { baseUrl, requests } = await serve(async (req, res) => {
        if (req.path !== "/runs") return fail(res, 404, "not-found");
        openStream(res, format === "sse" ? "text/event-stream" : "application/x-ndjson");
        res.write(format === "sse" ? sseFrame(event(0, "agent_start")) : line(event(0, "agent_start")));
        // A line that never ends; in SSE, data lines of an event that never ends.
        written = flood(res, format === "sse" ? `data: ${"x".repeat(1_000)}\n` : "x");
      });
      const run = new AgentClient({ baseUrl, format, maxEventBytes: 1024 * 1024, ...fast }).start("go");
      const error = await rejection(run.result());
      expect(error.code).toBe("too-large");
      expect(error.message).toBe(
        "The server sent more than 1048576 bytes without completing an event (maxEventBytes): the stream was cancelled.",
      );
      expect(await written).toBeLessThan(32 * 1024 * 1024);
      expect(requests).toHaveLength(1);
    }
  });

  it("reads at most 1 MiB of an error's body, then cancels it: the request fails with code 'http' and its status", async () => {
    let written: Promise<number> | undefined;
    const { baseUrl } = await serve(async (_req, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      written = flood(res, "x");
    });
    const error = await rejection(new AgentClient({ baseUrl, ...fast }).start("go").result());
    expect(error).toMatchObject({ code: "http", status: 500 });
    expect(error.message).toBe(`HTTP 500 Internal Server Error: ${"x".repeat(200)}…`);
    expect(await written).toBeLessThan(32 * 1024 * 1024);
  });

  it("keeps the first 2,000 characters of the server's error.message (and 200 of its code), then '…': an error message is never megabytes long", async () => {
    const { baseUrl } = await serve((_req, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "c".repeat(300_000), message: "m".repeat(500_000) } }));
    });
    const error = await rejection(new AgentClient({ baseUrl, ...fast }).start("go").result());
    expect(error).toMatchObject({ code: "http", status: 500, serverCode: `${"c".repeat(200)}…` });
    expect(error.message).toBe(`HTTP 500 ${"c".repeat(200)}…: ${"m".repeat(2000)}…`);
  });

  it("reads at most 1 MiB of a 202's body too (the run a tool result resumed): no run is named, the suspended agent_end is the result", async () => {
    let written: Promise<number> | undefined;
    const suspended = suspendedOn(clientCall);
    const { baseUrl } = await serve(async (req, res) => {
      if (req.path === "/runs") return endsSuspended(res, suspended);
      res.writeHead(202, { "content-type": "application/json" });
      written = flood(res, '{"runId":"r2"');
    });
    const run = new AgentClient({ baseUrl, tools: { t: () => 1 }, ...fast }).start("go");
    expect(await run.result()).toEqual(suspended);
    expect(await written).toBeLessThan(32 * 1024 * 1024);
  });
});

describe("AgentClient: the documented bounds, exactly", () => {
  const clientCall = { toolCallId: "c1", toolName: "t", args: {}, execution: "client" };

  it("waits at most 2^31 - 1 ms between re-attaches, not at once, when the doubled delay is longer (a timer past it fires at once)", async () => {
    vi.useFakeTimers();
    try {
      let requests = 0;
      const unreachable: typeof fetch = async () => {
        requests++;
        throw new TypeError("fetch failed");
      };
      const reconnect = { attempts: 2, delayMs: 2 ** 30 };
      const run = new AgentClient({ baseUrl: "http://127.0.0.1:9", fetch: unreachable, reconnect }).attach(
        RUN,
      );
      await vi.advanceTimersByTimeAsync(2 ** 30);
      expect(requests).toBe(2);
      // The next wait, 2^31 ms, is cut to the longest a timer takes: not 1 ms.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(requests).toBe(2);
      await vi.advanceTimersByTimeAsync(2 ** 31 - 1);
      expect(requests).toBe(3);
      expect(await rejection(run.result())).toMatchObject({ code: "network" });
    } finally {
      vi.useRealTimers();
    }
  });

  it("throws a TypeError when made with a count or a time it cannot keep: a timer past 2^31 - 1 ms fires at once, a NaN count never ends", () => {
    const baseUrl = "http://127.0.0.1:9";
    for (const options of [
      { idleTimeoutMs: Number.POSITIVE_INFINITY },
      { idleTimeoutMs: 2 ** 31 },
      { idleTimeoutMs: 0 },
      { reconnect: { attempts: Number.NaN } },
      { reconnect: { attempts: 1.5 } },
      { postRetry: { attempts: -1 } },
      { postRetry: { delayMs: Number.NaN } },
      { reconnect: { delayMs: 2 ** 31 } },
      { maxEventBytes: 0 },
      { maxEventBytes: Number.POSITIVE_INFINITY },
    ])
      expect(() => new AgentClient({ baseUrl, ...options }), JSON.stringify(options)).toThrow(TypeError);
    const edges = { idleTimeoutMs: 2 ** 31 - 1, reconnect: { attempts: 0, delayMs: 0 }, maxEventBytes: 1 };
    expect(new AgentClient({ baseUrl, ...edges })).toBeInstanceOf(AgentClient);
  });

  it("throws a TypeError when made with a logger that has no error method, which would lose every line", () => {
    const baseUrl = "http://127.0.0.1:9";
    for (const logger of [{}, "console", { error: "no" }])
      expect(() => new AgentClient({ baseUrl, logger: logger as never }), JSON.stringify(logger)).toThrow(
        /logger as an object with an error\(fields, message\) method/,
      );
    expect(new AgentClient({ baseUrl, logger: { error: () => {} } })).toBeInstanceOf(AgentClient);
  });

  it("throws a TypeError when baseUrl carries a query or a fragment, which the routes would follow", () => {
    for (const baseUrl of ["http://127.0.0.1:9/api?key=1", "/api#top", "/api?"])
      expect(() => new AgentClient({ baseUrl }), baseUrl).toThrow(
        /baseUrl is the routes' prefix, so it takes no query or fragment/,
      );
    expect(new AgentClient({ baseUrl: "/api/" })).toBeInstanceOf(AgentClient);
  });

  it("throws a TypeError naming an option it does not know, a promise of the options, or an option that cannot be read; undefined keeps the default", () => {
    const baseUrl = "http://127.0.0.1:9";
    expect(() => new AgentClient({ baseUrl, idleTimeoutMS: 1000 } as never)).toThrow(
      new TypeError(
        "AgentClient has no option idleTimeoutMS (known: baseUrl, headers, format, tools, fetch, reconnect, postRetry, idleTimeoutMs, maxEventBytes, logger).",
      ),
    );
    expect(() => new AgentClient({ baseUrl, reconnect: { attempt: 0 } } as never)).toThrow(
      "AgentClient's reconnect has no option attempt (known: attempts, delayMs).",
    );
    expect(() => new AgentClient(Promise.resolve({ baseUrl }) as never)).toThrow(
      "AgentClient needs its options as an object (the options themselves, not a promise of them), got a promise.",
    );
    const boom = new Error("boom");
    const unreadable = Object.defineProperty({ baseUrl }, "idleTimeoutMs", {
      enumerable: true,
      get: () => {
        throw boom;
      },
    });
    expect(() => new AgentClient(unreadable)).toThrow(
      expect.objectContaining({
        message: "AgentClient's option idleTimeoutMs could not be read: boom",
        cause: boom,
      }),
    );
    const client = new AgentClient({
      baseUrl,
      format: undefined,
      fetch: undefined,
      reconnect: { attempts: undefined },
    });
    expect(() => client.start("hi", { conversationID: "c" } as never)).toThrow(
      "start() has no option conversationID (known: conversationId, documentId, outliveStream, idempotencyKey, signal).",
    );
    expect(() => client.attach(RUN, { aftr: 3 } as never)).toThrow(
      "attach() has no option aftr (known: after, signal).",
    );
    expect(() => client.start("hi", Promise.resolve({}) as never)).toThrow(TypeError);
  });

  it("throws a TypeError for options of the wrong kind, which would fail only later (a format, a tool, a start's ids, a signal)", () => {
    const baseUrl = "http://127.0.0.1:9";
    for (const [options, message] of [
      [{ format: "json" }, 'AgentClient needs format as "ndjson" or "sse", got "json".'],
      [{ tools: [] }, "AgentClient needs tools as an object of functions by name, got an array."],
      [{ tools: { now: "12:00" } }, 'AgentClient needs tools.now as a function, got "12:00".'],
    ] as const)
      expect(() => new AgentClient({ baseUrl, ...(options as object) }), message).toThrow(
        new TypeError(message),
      );
    const client = new AgentClient({ baseUrl });
    for (const [options, message] of [
      [{ conversationId: 5 }, "start() needs conversationId as a string, got 5."],
      [{ documentId: {} }, "start() needs documentId as a string, got an object."],
      [{ outliveStream: "yes" }, 'start() needs outliveStream as a boolean, got "yes".'],
      [{ signal: 5 }, "start() needs signal as an AbortSignal, got 5."],
    ] as const)
      expect(() => client.start("hi", options as never), message).toThrow(new TypeError(message));
    expect(() => client.attach(RUN, { signal: {} } as never)).toThrow(
      new TypeError("attach() needs signal as an AbortSignal, got an object."),
    );
  });

  it("ends a tool result's post at idleTimeoutMs even while a Retry-After would have it wait longer", async () => {
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        res.write(line(event(0, "agent_start")));
        return void res.write(line(event(1, "tool_call", { ...clientCall, hookToken: "tok" })));
      }
      fail(res, 429, "rate-limited", { "retry-after": "30" });
    });
    const run = new AgentClient({ baseUrl, tools: { t: () => 1 }, ...fast, idleTimeoutMs: 200 }).start("go");
    const failed = new Promise<ClientEvent>((resolve) => run.on("client_error", resolve));
    const error = await Promise.race([failed, delay(5_000).then(() => "still waiting")]);
    expect(error).toMatchObject({
      type: "client_error",
      code: "tool-result-failed",
      toolCallId: "c1",
      message: 'The result of the client tool call "c1" (t) could not be posted: no answer came for 200 ms',
    });
    expect(requests.filter((r) => r.path.endsWith("/tool-results"))).toHaveLength(1);
    await run.cancel();
  });

  it("reports a 202 whose answer never ends (or names no run) as tool-result-failed, then resolves with the suspended agent_end", async () => {
    for (const body of ['{"runId":', '{"run":"r2"}']) {
      const suspended = suspendedOn(clientCall);
      const { baseUrl } = await serve(async (req, res) => {
        if (req.path === "/runs") return endsSuspended(res, suspended);
        res.writeHead(202, { "content-type": "application/json" });
        if (body.endsWith(":")) res.write(body);
        else res.end(body);
      });
      const run = new AgentClient({ baseUrl, tools: { t: () => 1 }, ...fast, idleTimeoutMs: 200 }).start(
        "go",
      );
      const end = await Promise.race([run.result(), delay(5_000).then(() => "still waiting")]);
      expect(end).toEqual(suspended);
      expect((await collect(run)).filter((value) => value.type === "client_error")).toEqual([
        {
          type: "client_error",
          code: "tool-result-failed",
          message: expect.stringMatching(
            /^The server took the result of the client tool call "c1" \(t\) \(202\), but its answer named no run to follow: /,
          ),
          status: 202,
          toolCallId: "c1",
        },
      ]);
    }
  });

  it("counts toward maxEventBytes the bytes after the last event of a chunk: an unfinished line that came with an event fails at once", async () => {
    for (const format of ["ndjson", "sse"] as const) {
      const { baseUrl } = await serve(async (_req, res) => {
        openStream(res, format === "sse" ? "text/event-stream" : "application/x-ndjson");
        // One write: an event, then more than maxEventBytes of the next one, which never ends.
        res.write(
          format === "sse"
            ? `${sseFrame(event(0, "agent_start"))}data: ${"x".repeat(100)}\ndata: ${"y".repeat(100)}`
            : `${line(event(0, "agent_start"))}${"x".repeat(200)}`,
        );
      });
      const run = new AgentClient({ baseUrl, format, maxEventBytes: 150, ...fast }).start("go");
      const error = await Promise.race([rejection(run.result()), delay(5_000).then(() => "still waiting")]);
      expect(error, format).toMatchObject({ code: "too-large" });
    }
  });

  it("refuses a whole event past maxEventBytes too, though it came in one chunk, after the events before it", async () => {
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.write(
        line(event(0, "agent_start")) + line(event(1, "text_delta", { text: "x".repeat(200), index: 0 })),
      );
    });
    const run = new AgentClient({ baseUrl, maxEventBytes: 150, ...fast }).start("go");
    const seen: ClientEvent[] = [];
    run.on("*", (value) => seen.push(value));
    expect(await rejection(run.result())).toMatchObject({ code: "too-large" });
    expect(seqs(seen)).toEqual([0]);
  });

  it("retries a steer answered 429 queue-full (after its Retry-After), and never one that failed otherwise", async () => {
    let steers = 0;
    const { baseUrl, requests } = await serve(async (req, res) => {
      if (req.path === "/runs") {
        openStream(res);
        return void res.write(line(event(0, "agent_start")));
      }
      if (req.path.endsWith("/steer") && ++steers === 1)
        return fail(res, 429, "queue-full", { "retry-after": "0" });
      if (req.path.endsWith("/steer")) return void res.writeHead(202).end();
      fail(res, 503, "server-busy");
    });
    const run = new AgentClient({ baseUrl, ...fast }).start("go");
    await run.steer("left");
    expect(await rejection(run.followUp("then"))).toMatchObject({ code: "http", status: 503 });
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /runs",
      "POST /runs/r1/steer",
      "POST /runs/r1/steer",
      "POST /runs/r1/follow-up",
    ]);
    await run.cancel();
  });

  it("cancel() resolves after idleTimeoutMs when the server never answers its /cancel, or asks for a long Retry-After", async () => {
    for (const answer of ["never", "retry-after"]) {
      const { baseUrl, requests } = await serve(async (req, res) => {
        if (req.path === "/runs") {
          openStream(res);
          return void res.write(line(event(0, "agent_start")));
        }
        if (answer === "retry-after") fail(res, 429, "rate-limited", { "retry-after": "30" });
      });
      const run = new AgentClient({ baseUrl, ...fast, idleTimeoutMs: 200 }).start("go");
      await run.runId;
      const cancelled = await Promise.race([
        run.cancel().then(() => "resolved"),
        delay(5_000).then(() => "still waiting"),
      ]);
      expect(cancelled, answer).toBe("resolved");
      expect((await rejection(run.result())).code).toBe("cancelled");
      expect(
        requests.filter((r) => r.path.endsWith("/cancel")),
        answer,
      ).toHaveLength(1);
    }
  });

  it("bounds a headers() that never settles by idleTimeoutMs: steer() rejects with code 'network', cancel() resolves", async () => {
    const { baseUrl, requests } = await serve((req, res) => {
      if (req.path !== "/runs") return;
      openStream(res);
      res.write(line(event(0, "agent_start")));
    });
    let calls = 0;
    // The start gets its headers; every later request asks for them in vain.
    const headers = () => (calls++ === 0 ? {} : new Promise<Record<string, string>>(() => {}));
    const run = new AgentClient({ baseUrl, headers, ...fast, idleTimeoutMs: 200 }).start("go");
    await run.runId;
    expect((await rejection(run.steer("left"))).code).toBe("network");
    const cancelled = await Promise.race([
      run.cancel().then(() => "resolved"),
      delay(5_000).then(() => "still waiting"),
    ]);
    expect(cancelled).toBe("resolved");
    expect(requests.map((r) => r.path)).toEqual(["/runs"]);
  });

  it("tells a headers() that fails as such, and that the start was never posted: no claim that the server did not answer", async () => {
    const { baseUrl, requests } = await serve(() => {});
    const headers = async (): Promise<Record<string, string>> => {
      throw new Error("no token yet");
    };
    const run = new AgentClient({ baseUrl, headers, ...fast, reconnect: { attempts: 1, delayMs: 10 } }).start(
      "go",
    );
    const error = await rejection(run.result());
    expect(error.code).toBe("network");
    expect(error.message).toBe(
      "The run could not be started: 2 attempt(s) to post it with the same Idempotency-Key got no answer naming the run: the headers() option failed: no token yet",
    );
    expect(requests).toEqual([]);
  });

  it("tells a headers() that gives a header fetch cannot send (a line break in a value) as the headers() option's failure, not the network's", async () => {
    const { baseUrl, requests } = await serve(() => {});
    const headers = () => ({ authorization: "Bearer a\nb" });
    const run = new AgentClient({ baseUrl, headers, ...fast, reconnect: { attempts: 1, delayMs: 10 } }).start(
      "go",
    );
    const error = await rejection(run.result());
    expect(error.code).toBe("network");
    expect(error.message).toMatch(
      /^The run could not be started: 2 attempt\(s\) to post it with the same Idempotency-Key got no answer naming the run: the headers\(\) option failed: it gave headers fetch cannot send: .*invalid header value/s,
    );
    expect(requests).toEqual([]);
  });

  it("refuses headers fetch cannot send when the client is made, naming the option", () => {
    expect(
      () => new AgentClient({ baseUrl: "http://127.0.0.1:1/api", headers: { authorization: "Bearer a\nb" } }),
    ).toThrow(/^AgentClient's headers option holds headers fetch cannot send: .*invalid header value/s);
    expect(
      () =>
        new AgentClient({
          baseUrl: "http://127.0.0.1:1/api",
          headers: 5 as unknown as Record<string, string>,
        }),
    ).toThrow(TypeError);
  });

  it("takes an event whose bytes are exactly maxEventBytes", async () => {
    const start = line(event(0, "agent_start"));
    const end = line(agentEnd(1));
    const { baseUrl } = await serve(async (_req, res) => {
      openStream(res);
      res.end(start + end);
    });
    const bytes = Math.max(Buffer.byteLength(start), Buffer.byteLength(end));
    const run = new AgentClient({ baseUrl, maxEventBytes: bytes, ...fast }).start("go");
    await expect(run.result()).resolves.toMatchObject({ type: "agent_end" });
  });
});

describe("AgentClient against the real @agent-core/http server", () => {
  const readPage = defineTool({
    name: "read_page",
    description: "r",
    inputSchema: z.object({ selector: z.string() }),
    execution: "client",
  });

  async function realServer(clientTools: AgentServerOptions["clientTools"]): Promise<string> {
    const server = createAgentServer({
      agent: () => {
        const provider = scriptedModel([
          [model.toolCall("read_page", { selector: "a" }, { id: "c1" })],
          [model.text("done")],
        ]);
        return new Agent({ provider, tools: [readPage] });
      },
      authorize: () => ({ userId: "u" }),
      hookSecret: "x".repeat(32),
      ...(clientTools === undefined ? {} : { clientTools }),
    });
    const node = await serveNode(server.fetch);
    servers.push({
      close: () => {
        server.close();
        return node.close();
      },
    });
    return node.url;
  }

  it("re-attaches through a repeat of the start whose answer was lost before its first event: the agent runs once", async () => {
    let made = 0;
    const server = createAgentServer({
      agent: () => {
        made++;
        return new Agent({ provider: scriptedModel([[model.text("Hello.")]]) });
      },
      authorize: () => ({ userId: "u" }),
      hookSecret: "x".repeat(32),
    });
    const node = await serveNode(server.fetch);
    servers.push({ close: () => server.close().then(() => node.close()) });
    let starts = 0;
    // The server took the first start and began its run; its answer is lost on the way back.
    const dropFirstStart: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method !== "POST" || !String(input).endsWith("/runs") || starts++ > 0) return response;
      await response.body?.cancel();
      throw new TypeError("fetch failed: the connection was reset");
    };
    const run = new AgentClient({ baseUrl: node.url, fetch: dropFirstStart, ...fast }).start("hi");
    const seen = await collect(run);
    expect(await run.result()).toMatchObject({ stopReason: "completed" });
    expect(starts).toBe(2);
    expect(made).toBe(1);
    // Each event once, from the run's first.
    expect(seqs(seen)).toEqual(seen.map((_, seq) => seq));
    expect([seen[0]?.type, seen.at(-1)?.type]).toEqual(["agent_start", "agent_end"]);
  });

  it("runs a batch of 12 client tool calls at once without a MaxListenersExceededWarning (one listener on the run's signal for them all)", async () => {
    const calls = 12;
    const server = createAgentServer({
      agent: () =>
        new Agent({
          provider: scriptedModel([
            Array.from({ length: calls }, (_, n) => model.toolCall("read_page", { selector: `s${n}` })),
            [model.text("done")],
          ]),
          tools: [readPage],
          toolExecution: "parallel",
          maxConcurrency: calls,
        }),
      authorize: () => ({ userId: "u" }),
      hookSecret: "x".repeat(32),
    });
    const node = await serveNode(server.fetch);
    servers.push({ close: () => server.close().then(() => node.close()) });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      // Every call waits until all have started: the 12 are running at once.
      let started = 0;
      let allStarted!: () => void;
      const together = new Promise<void>((resolve) => (allStarted = resolve));
      const tools = {
        read_page: async (args: unknown) => {
          if (++started === calls) allStarted();
          await together;
          return (args as { selector: string }).selector;
        },
      };
      const run = new AgentClient({ baseUrl: node.url, tools, ...fast }).start("go");
      await expect(run.result()).resolves.toMatchObject({ stopReason: "completed" });
      await delay(10); // a warning is emitted on a later tick
      expect(started).toBe(calls);
      expect(warnings).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  for (const mode of ["suspend", undefined] as const)
    it(`runs a client tool once and completes, with clientTools: ${mode === undefined ? "the default (wait)" : `"${mode}"`}`, async () => {
      const baseUrl = await realServer(mode);
      const readPageTool = vi.fn((args: unknown) => `text of ${(args as { selector: string }).selector}`);
      const run = new AgentClient({ baseUrl, tools: { read_page: readPageTool }, ...fast }).start("go");
      const seen = await collect(run);
      const end = await run.result();
      expect(end.stopReason).toBe("completed");
      expect(readPageTool).toHaveBeenCalledTimes(1);
      expect(readPageTool.mock.calls[0]?.[0]).toEqual({ selector: "a" });
      expect(seen.filter((value) => value.type === "client_error")).toEqual([]);
      expect(seen.find((value) => value.type === "tool_result")).toMatchObject({
        toolCallId: "c1",
        status: "ok",
        result: "text of a",
      });
      const ends = seen.filter((value) => value.type === "agent_end");
      if (mode === "suspend") {
        expect(ends.map((value) => value.stopReason)).toEqual(["awaiting_client_tool", "completed"]);
        expect(run.currentRunId).not.toBe(await run.runId);
        expect(end.runId).toBe(run.currentRunId);
      } else {
        expect(ends.map((value) => value.stopReason)).toEqual(["completed"]);
        expect(run.currentRunId).toBe(await run.runId);
      }
    });

  it('a run cancelled while its client tool works (clientTools: "suspend") is not resumed by a page that attaches to it later', async () => {
    const baseUrl = await realServer("suspend");
    let started = false;
    const stuck = () => {
      started = true;
      return new Promise(() => {});
    };
    const run = new AgentClient({ baseUrl, tools: { read_page: stuck }, ...fast }).start("go", {
      outliveStream: true,
    });
    await until(() => started, "the tool to start");
    await run.cancel();
    // The page reloads, and follows the run it had.
    const readPageTool = vi.fn(() => "text");
    const again = new AgentClient({ baseUrl, tools: { read_page: readPageTool }, ...fast }).attach(
      await run.runId,
    );
    expect((await again.result()).stopReason).toBe("awaiting_client_tool");
    expect(readPageTool).not.toHaveBeenCalled();
  });
});
