import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { AgentClient } from "@agent-core/client";
import { Agent, defineTool, InvalidConfigError } from "@agent-core/core";
import {
  type AgentServerOptions,
  createAgentServer,
  createUseChatHandler,
  serveNode,
} from "@agent-core/http";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  addNumbers,
  agentEvents,
  headers,
  NdjsonReader,
  ndjsonEvents,
  ofType,
  post,
  readPage,
  SECRET,
  startServer,
} from "./harness.js";

// The routes of @agent-core/http on Node's own http server, as a client sees them on the wire.

const answer = (text: string) => () => ({ provider: scriptedModel([[script.text(text)]]) });

describe("POST /runs", () => {
  it("streams the run as NDJSON: the same events as in process, one per line, agent_end last", async () => {
    const { url } = await startServer(() => ({
      provider: scriptedModel([
        [script.toolCall("add", { a: 2, b: 3 }, { id: "t1" })],
        [script.text("It is ", "5.")],
      ]),
      tools: [addNumbers],
    }));
    const response = await post(`${url}/runs`, { prompt: "What is 2+3?" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    expect(response.headers.get("x-accel-buffering")).toBe("no");
    const text = await response.text();
    expect(text.endsWith("\n")).toBe(true);
    expect(text).not.toContain("\r");
    const events = ndjsonEvents(text);
    assertEventProtocol(events);
    expect(response.headers.get("x-run-id")).toBe(events[0]?.runId);
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ status: "ok", result: 5 });
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
  });

  it("streams SSE when Accept asks for it: id is the seq, event the type, data the JSON", async () => {
    const { url } = await startServer(answer("Hello there."));
    const response = await post(`${url}/runs`, { prompt: "hi" }, "alice", { accept: "text/event-stream" });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const frames = (await response.text()).split("\n\n").filter(Boolean);
    const events = frames.map((frame) => {
      const [id, type, data] = frame.split("\n");
      const event = JSON.parse((data as string).replace(/^data: /, ""));
      expect(id).toBe(`id: ${event.seq}`);
      expect(type).toBe(`event: ${event.type}`);
      return event;
    });
    assertEventProtocol(agentEvents(events));
    expect(events.filter(ofType("text_delta")).map((event) => event.text)).toEqual(["Hello there."]);
  });

  it("sends heartbeats while the run is quiet, outside the run's seq", async () => {
    const { url } = await startServer(
      () => ({
        provider: scriptedModel([[script.toolCall("read_page", { selector: "h1" })], [script.text("ok")]]),
        tools: [readPage],
      }),
      { heartbeatMs: 20, clientToolTimeoutMs: 150 },
    );
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const events = await reader.rest();
    const heartbeats = events.filter(ofType("heartbeat"));
    expect(heartbeats.length).toBeGreaterThanOrEqual(2);
    for (const heartbeat of heartbeats) expect(Object.keys(heartbeat).sort()).toEqual(["ts", "type"]);
    assertEventProtocol(agentEvents(reader.seen));
  });

  it("keeps a conversation's history across runs with the same conversationId, per user", async () => {
    let made = 0;
    const { url } = await startServer(() => {
      made++;
      return { provider: scriptedModel([[script.text("first")], [script.text("second")]]) };
    });
    await (await post(`${url}/runs`, { prompt: "one", conversationId: "c" })).text();
    const second = await (await post(`${url}/runs`, { prompt: "two", conversationId: "c" })).text();
    expect(second).toContain('"text":"second"');
    expect(made).toBe(1);
    await (await post(`${url}/runs`, { prompt: "one", conversationId: "c" }, "bob")).text();
    expect(made).toBe(2);
  });

  it("counts a conversation idle from its run's end: a run longer than conversationTtlMs keeps its history for the next prompt", async () => {
    let made = 0;
    const slow = defineTool({
      name: "slow",
      description: "Takes its time",
      inputSchema: z.object({}),
      execute: () => new Promise((resolve) => setTimeout(() => resolve("done"), 300)),
    });
    const { url } = await startServer(
      () => {
        made++;
        return {
          provider: scriptedModel([
            [script.toolCall("slow", {})],
            [script.text("first")],
            [script.text("second")],
          ]),
          tools: [slow],
        };
      },
      { conversationTtlMs: 150 },
    );
    await (await post(`${url}/runs`, { prompt: "one", conversationId: "c" })).text();
    const second = await (await post(`${url}/runs`, { prompt: "two", conversationId: "c" })).text();
    expect(second).toContain('"text":"second"');
    expect(made).toBe(1);
  });

  it("lets go of a conversation's agent once idle for conversationTtlMs, though no other request comes", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    let agent: WeakRef<Agent> | undefined;
    const { url } = await startServer(answer("x"), {
      conversationTtlMs: 50,
      retainEndedMs: 0,
      agent: () => {
        const made = new Agent({ provider: scriptedModel([[script.text("x")]]) });
        agent = new WeakRef(made);
        return made;
      },
    });
    await (await post(`${url}/runs`, { prompt: "one", conversationId: "c" })).text();
    for (let i = 0; i < 40 && agent?.deref() !== undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      gc();
    }
    expect(agent).toBeDefined();
    expect(agent?.deref()).toBeUndefined();
  });

  it("asks an async agent factory once for starts of a new conversation at once, which run in turn on its agent", async () => {
    let made = 0;
    const agent = async () => {
      made++;
      await new Promise((resolve) => setTimeout(resolve, 30));
      return new Agent({
        provider: scriptedModel([[script.text("1")], [script.text("2")], [script.text("3")]]),
      });
    };
    const { url } = await startServer(answer("x"), { agent });
    const texts = await Promise.all(
      ["one", "two"].map(async (prompt) =>
        (await post(`${url}/runs`, { prompt, conversationId: "new" })).text(),
      ),
    );
    expect(made).toBe(1);
    expect(texts.map((text) => ndjsonEvents(text).at(-1))).toMatchObject([
      { type: "agent_end", stopReason: "completed" },
      { type: "agent_end", stopReason: "completed" },
    ]);
    const third = ndjsonEvents(
      await (await post(`${url}/runs`, { prompt: "three", conversationId: "new" })).text(),
    );
    // The same agent's third model call: one agent ran the whole conversation.
    const history = (third.find((event) => event.type === "turn_end") as { message: unknown } | undefined)
      ?.message;
    expect(history).toMatchObject({ role: "assistant", content: [{ type: "text", text: "3" }] });
    expect(made).toBe(1);
  });

  it("refuses bad bodies with a clear 4xx JSON error and starts nothing", async () => {
    let made = 0;
    const { url } = await startServer(
      () => {
        made++;
        return answer("x")();
      },
      { maxBodyBytes: 1000 },
    );
    const cases: [RequestInit, number, string][] = [
      [{ body: "{", headers: headers() }, 400, "invalid-json"],
      [{ body: JSON.stringify({ prompt: "" }), headers: headers() }, 400, "invalid-body"],
      [{ body: JSON.stringify({ prompt: "hi", extra: 1 }), headers: headers() }, 400, "invalid-body"],
      [{ body: JSON.stringify({ prompt: 5 }), headers: headers() }, 400, "invalid-body"],
      [{ body: JSON.stringify({ prompt: "x".repeat(2000) }), headers: headers() }, 413, "body-too-large"],
      [
        { body: "prompt=hi", headers: { "x-user": "alice", "content-type": "text/plain" } },
        415,
        "unsupported-media-type",
      ],
      [
        { body: JSON.stringify({ prompt: "hi" }), headers: { "content-type": "application/json" } },
        401,
        "unauthorized",
      ],
    ];
    for (const [init, status, code] of cases) {
      const response = await fetch(`${url}/runs`, { method: "POST", ...init });
      expect([response.status, (await response.json()).error.code]).toEqual([status, code]);
    }
    const invalid = await (await post(`${url}/runs`, { prompt: 5 })).json();
    expect(invalid.error.issues).toEqual([{ path: "prompt", message: expect.any(String) }]);
    expect(made).toBe(0);
  });

  it("answers a body it refuses unread at once over real HTTP, and the client's next request works", async () => {
    const { url } = await startServer(answer("x"));
    const refusals: [RequestInit, number][] = [
      [{ body: JSON.stringify({ prompt: "p".repeat(400_000) }), headers: headers() }, 413],
      [
        {
          body: JSON.stringify({ prompt: "p".repeat(100_000) }),
          headers: { "content-type": "application/json" },
        },
        401,
      ],
      [{ body: "p".repeat(100_000), headers: headers("alice", { "content-type": "text/plain" }) }, 415],
      // Not UTF-8 from its first byte: refused there, the rest of it unread.
      [{ body: new Uint8Array(100_000).fill(0xff), headers: headers() }, 400],
    ];
    for (const [init, status] of refusals) {
      const startedAt = Date.now();
      const refused = await fetch(`${url}/runs`, { method: "POST", ...init });
      expect(refused.status).toBe(status);
      await refused.text();
      expect(Date.now() - startedAt).toBeLessThan(2_000);
      const next = await fetch(`${url}/runs/r1/events`, { headers: headers() });
      expect(next.status).toBe(404);
      await next.text();
    }
  });

  it("answers unknown routes 404 and wrong methods 405", async () => {
    const { url } = await startServer(answer("x"), { basePath: "/api" });
    expect((await fetch(`${url}/runs`, { method: "POST", headers: headers() })).status).toBe(404);
    expect((await fetch(`${url}/api/nope`, { headers: headers() })).status).toBe(404);
    // The base path is a whole segment of the path, not a prefix of its text.
    const glued = await post(`${url}/apiruns`, { prompt: "hi" });
    expect([glued.status, (await glued.json()).error.code]).toEqual([404, "not-found"]);
    const wrong = await fetch(`${url}/api/runs`, { headers: headers() });
    expect([wrong.status, wrong.headers.get("allow")]).toEqual([405, "POST"]);
    expect((await post(`${url}/api/runs/r1/unknown`, {})).status).toBe(404);
  });

  it("answers a path with an empty segment (an extra slash) 404 not-found, as any path that is no route", async () => {
    const { url } = await startServer(answer("x"), { basePath: "/api" });
    const runId = (await post(`${url}/api/runs`, { prompt: "hi" })).headers.get("x-run-id");
    expect((await fetch(`${url}/api/runs/${runId}/events`, { headers: headers() })).status).toBe(200);
    for (const [method, path] of [
      ["POST", "/api//runs"],
      ["POST", "/api/runs/"],
      ["GET", `//api/runs/${runId}/events`],
      ["GET", `/api/runs//${runId}/events`],
      ["GET", `/api/runs/${runId}//events`],
      ["GET", `/api/runs/${runId}/events/`],
    ] as const) {
      const body = method === "POST" ? JSON.stringify({ prompt: "hi" }) : undefined;
      const response = await fetch(`${url}${path}`, { method, headers: headers(), body });
      expect([path, response.status, (await response.json()).error.code]).toEqual([path, 404, "not-found"]);
    }
  });

  it("answers 405 only where another method is a route: its Allow names it, and that method is served", async () => {
    const { url } = await startServer(answer("x"));
    const answers: [string, string, number, string, string | null][] = [];
    for (const [method, path] of [
      ["GET", "/runs"],
      ["PUT", "/runs/r1/events"],
      ["GET", "/runs/r1/steer"],
      ["DELETE", "/runs/r1/cancel"],
      ["GET", "/runs/r1"],
      ["POST", "/runs/r1"],
      ["GET", "/runs/r1/unknown"],
      ["POST", "/runs/r1/unknown"],
    ] as const) {
      const response = await fetch(`${url}${path}`, { method, headers: headers() });
      const { error } = await response.json();
      answers.push([method, path, response.status, error.code, response.headers.get("allow")]);
    }
    expect(answers).toEqual([
      ["GET", "/runs", 405, "method-not-allowed", "POST"],
      ["PUT", "/runs/r1/events", 405, "method-not-allowed", "GET"],
      ["GET", "/runs/r1/steer", 405, "method-not-allowed", "POST"],
      ["DELETE", "/runs/r1/cancel", 405, "method-not-allowed", "POST"],
      ["GET", "/runs/r1", 404, "not-found", null],
      ["POST", "/runs/r1", 404, "not-found", null],
      ["GET", "/runs/r1/unknown", 404, "not-found", null],
      ["POST", "/runs/r1/unknown", 404, "not-found", null],
    ]);
  });

  it("refuses a run id that is not valid percent-encoding with 400 invalid-path", async () => {
    const { url } = await startServer(answer("x"));
    const requests: [string, string][] = [
      ["GET", "/runs/%E0%A4%A/events"],
      ["POST", "/runs/%ZZ/cancel"],
      ["POST", "/runs/%/steer"],
    ];
    for (const [method, path] of requests) {
      const response = await fetch(`${url}${path}`, { method, headers: headers() });
      expect([response.status, (await response.json()).error.code]).toEqual([400, "invalid-path"]);
    }
  });

  it("keeps a user to their documents", async () => {
    const { url } = await startServer(answer("x"));
    const refused = await post(`${url}/runs`, { prompt: "hi", documentId: "doc-2" }, "alice", {
      "x-documents": "doc-1",
    });
    expect([refused.status, (await refused.json()).error.code]).toEqual([403, "document-forbidden"]);
    const allowed = await post(`${url}/runs`, { prompt: "hi", documentId: "doc-1" }, "alice", {
      "x-documents": "doc-1",
    });
    expect(allowed.status).toBe(200);
    await allowed.text();
  });

  it("answers 500 internal when authorize gives documents that is not a list: never a match on part of a string", async () => {
    for (const documents of ["doc-12", null]) {
      const { url } = await startServer(answer("x"), {
        authorize: () => ({ userId: "alice", documents: documents as never }),
      });
      const response = await post(`${url}/runs`, { prompt: "hi", documentId: "doc-1" });
      expect([response.status, (await response.json()).error.code]).toEqual([500, "internal"]);
    }
  });

  it("checks the run's document on every request: a user who lost it may not read, steer or cancel the run", async () => {
    const { url } = await startServer(() => ({
      provider: scriptedModel([[script.text("a"), script.delay(5_000), script.text("b")]]),
    }));
    const started = await post(`${url}/runs`, { prompt: "hi", documentId: "doc-1" }, "alice", {
      "x-documents": "doc-1",
    });
    const runId = started.headers.get("x-run-id") as string;
    const lost = { "x-documents": "doc-2" };
    const answers = [
      await fetch(`${url}/runs/${runId}/events`, { headers: headers("alice", lost) }),
      await post(`${url}/runs/${runId}/steer`, { message: "go" }, "alice", lost),
      await post(`${url}/runs/${runId}/follow-up`, { message: "go" }, "alice", lost),
      await post(`${url}/runs/${runId}/cancel`, undefined, "alice", lost),
    ];
    expect(await Promise.all(answers.map(async (r) => [r.status, (await r.json()).error.code]))).toEqual(
      Array(4).fill([403, "document-forbidden"]),
    );
    // Its owner with the document still has it: the run was not cancelled by the refused request.
    const cancel = await post(`${url}/runs/${runId}/cancel`, undefined, "alice", { "x-documents": "doc-1" });
    expect(cancel.status).toBe(202);
    expect(ndjsonEvents(await started.text()).at(-1)).toMatchObject({
      type: "agent_end",
      stopReason: "aborted",
    });
  });

  it("limits starts per user with 429 and Retry-After, without touching other users", async () => {
    const { url } = await startServer(answer("x"), { rateLimits: { start: { points: 2, durationSec: 60 } } });
    for (let i = 0; i < 2; i++) await (await post(`${url}/runs`, { prompt: "hi" })).text();
    const limited = await post(`${url}/runs`, { prompt: "hi" });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await limited.json()).error.code).toBe("rate-limited");
    const other = await post(`${url}/runs`, { prompt: "hi" }, "bob");
    expect(other.status).toBe(200);
    await other.text();
  });

  it("limits tool-result callbacks per user too, before looking at the token", async () => {
    const { url } = await startServer(answer("x"), {
      rateLimits: { callback: { points: 1, durationSec: 60 } },
    });
    const body = { toolCallId: "c1", token: "whatever" };
    expect((await post(`${url}/runs/r1/tool-results`, { ...body, result: 1 })).status).toBe(403);
    const limited = await post(`${url}/runs/r1/tool-results`, { ...body, result: 1 });
    expect([limited.status, limited.headers.get("retry-after")]).toEqual([
      429,
      expect.stringMatching(/^\d+$/),
    ]);
  });

  it("ends a run at its overall timeout", async () => {
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.hang()]]) }), {
      runTimeoutMs: 50,
    });
    const events = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "hi" })).text());
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "timeout" });
    // The option the user set, not the agent's timeouts.totalMs they never did.
    expect(events.find((event) => event.type === "error")).toMatchObject({
      message: "The run took longer than 50 ms (runTimeoutMs).",
    });
  });

  it("counts starts still awaiting an async agent factory against maxRuns, and frees a failed one's place", async () => {
    let failing = false;
    // An agent made asynchronously (say, after loading the user's settings), or failing to be.
    const agent = async () => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      if (failing) throw new Error("no agent today");
      return new Agent({ provider: scriptedModel([[script.text("a"), script.delay(100)]]) });
    };
    const busy = await startServer(answer("x"), { maxRuns: 2, rateLimits: { start: false }, agent });
    const started = await Promise.all(
      Array.from({ length: 6 }, () => post(`${busy.url}/runs`, { prompt: "hi" })),
    );
    const answers = await Promise.all(
      started.map(async (response) => {
        const text = await response.text();
        return response.status === 200 ? "200" : `${response.status} ${JSON.parse(text).error.code}`;
      }),
    );
    expect(answers.sort()).toEqual(["200", "200", ...Array(4).fill("503 server-busy")]);
    const { url } = await startServer(answer("x"), { maxRuns: 1, agent });
    failing = true;
    expect((await post(`${url}/runs`, { prompt: "hi" })).status).toBe(500);
    failing = false;
    const after = await post(`${url}/runs`, { prompt: "hi" });
    expect(after.status).toBe(200);
    await after.text();
  });

  it("lets an agent's own timeouts.totalMs be the run's whole time, shorter or longer than runTimeoutMs", async () => {
    const slowly = (totalMs: number) => () => ({
      provider: scriptedModel([[script.text("a"), script.delay(300), script.text("b")]]),
      timeouts: { totalMs },
    });
    const short = await startServer(slowly(50));
    const cut = ndjsonEvents(await (await post(`${short.url}/runs`, { prompt: "hi" })).text());
    expect(cut.at(-1)).toMatchObject({ type: "agent_end", stopReason: "timeout" });
    const long = await startServer(slowly(60_000), { runTimeoutMs: 50 });
    const whole = ndjsonEvents(await (await post(`${long.url}/runs`, { prompt: "hi" })).text());
    expect(whole.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
  });

  it("refuses nonsense options when it is created", async () => {
    await expect(startServer(answer("x"), { hookSecret: "short" })).rejects.toThrow(/at least 32 characters/);
    await expect(startServer(answer("x"), { heartbeatMs: -1 })).rejects.toThrow(
      /heartbeatMs must be a number > 0/,
    );
    await expect(startServer(answer("x"), { maxQueuedMessages: 0 })).rejects.toThrow(
      /maxQueuedMessages must be a whole number >= 1/,
    );
    await expect(startServer(answer("x"), { maxStreamsPerRun: 0 })).rejects.toThrow(
      /maxStreamsPerRun must be a whole number >= 1/,
    );
    await expect(startServer(answer("x"), { basePath: "api" })).rejects.toThrow(
      /basePath must start with "\/"/,
    );
  });

  it("refuses a time longer than a timer waits (about 24.8 days), which would fire after 1 ms, when it is created", async () => {
    const thirtyDays = 30 * 24 * 3_600_000;
    for (const name of [
      "clientToolTimeoutMs",
      "runTimeoutMs",
      "heartbeatMs",
      "detachGraceMs",
      "retainEndedMs",
      "suspendedTtlMs",
    ] as const) {
      await expect(startServer(answer("x"), { [name]: thirtyDays })).rejects.toThrow(
        new RegExp(`${name} must be at most 2147483647 ms`),
      );
      await expect(startServer(answer("x"), { [name]: Number.POSITIVE_INFINITY })).rejects.toThrow(
        InvalidConfigError,
      );
    }
    expect(() =>
      createUseChatHandler({
        agent: () => new Agent({}),
        authorize: () => undefined,
        runTimeoutMs: thirtyDays,
      }),
    ).toThrow(/runTimeoutMs must be at most 2147483647 ms/);
    // The longest a timer waits is taken: a suspended run kept that long is still there to resume.
    const { url } = await startServer(answer("kept"), {
      suspendedTtlMs: 2_147_483_647,
      retainEndedMs: 2_147_483_647,
    });
    const runId = (await post(`${url}/runs`, { prompt: "go" })).headers.get("x-run-id");
    expect((await fetch(`${url}/runs/${runId}/events`, { headers: headers() })).status).toBe(200);
  });

  it("refuses rate limits that refuse every request or never give points back, when it is created", () => {
    const agent = () => new Agent({ provider: scriptedModel([[script.text("x")]]) });
    const server = (rateLimits: AgentServerOptions["rateLimits"]) =>
      createAgentServer({ agent, authorize: () => ({ userId: "u" }), hookSecret: SECRET, rateLimits });
    for (const limit of [
      { points: 0, durationSec: 60 },
      { points: -1, durationSec: 60 },
      { points: 10, durationSec: 0 },
      { points: 10, durationSec: Number.NaN },
      { points: "10" as unknown as number, durationSec: 60 },
      // Past the longest a timer waits (about 24.8 days), the points would come back after 1 ms.
      { points: 10, durationSec: 2_147_484 },
      { points: 10, durationSec: Number.POSITIVE_INFINITY },
    ]) {
      expect(() => server({ start: limit })).toThrow(InvalidConfigError);
      expect(() => server({ callback: limit })).toThrow(/rateLimits.callback must be/);
      expect(() => createUseChatHandler({ agent, authorize: () => undefined, rateLimit: limit })).toThrow(
        /rateLimit must be/,
      );
    }
    expect(() => server({ start: { points: 1, durationSec: 0.5 }, callback: false })).not.toThrow();
    expect(() => server({ start: { points: 1, durationSec: 2_147_483 } })).not.toThrow();
    expect(() => server({ start: { points: Number.NaN, durationSec: 60 } })).toThrow(
      "rateLimits.start must be { points: a whole number >= 1, durationSec: a number > 0, at most 2147483.647 } or false, got { points: NaN, durationSec: 60 }.",
    );
  });

  it("refuses an unknown option, a promise of the options and an option that cannot be read, naming it, when it is created", async () => {
    const agent = () => new Agent({ provider: scriptedModel([[script.text("x")]]) });
    const authorize = () => ({ userId: "u" });
    const options = { agent, authorize, hookSecret: SECRET };
    const server = (extra: object) => createAgentServer({ ...options, ...extra } as AgentServerOptions);
    expect(() => server({ fooo: 1 })).toThrow(
      /^Invalid createAgentServer\(\) options: fooo is not an option \(known: agent, backend, authorize, hookSecret, basePath,/,
    );
    expect(() => server({ rateLimits: { start: false, callbak: false } })).toThrow(
      "Invalid rateLimits: callbak is not an option (known: start, callback).",
    );
    expect(() => server({ rateLimits: { start: { points: 1, durationSec: 1, burst: 2 } } })).toThrow(
      "Invalid rateLimits.start: burst is not an option (known: points, durationSec).",
    );
    expect(() => createAgentServer(Promise.resolve(options) as never)).toThrow(
      "createAgentServer() options must be an object of options (the options themselves, not a promise of them), got a promise.",
    );
    const boom = new Error("boom");
    const unreadable = Object.defineProperty({ ...options }, "maxRuns", {
      enumerable: true,
      get: () => {
        throw boom;
      },
    });
    expect(() => createAgentServer(unreadable)).toThrow(
      expect.objectContaining({
        name: "InvalidConfigError",
        message: "Invalid createAgentServer() options: maxRuns could not be read: boom.",
        cause: boom,
      }),
    );
    expect(() => createUseChatHandler({ agent, authorize, maxMesages: 10 } as never)).toThrow(
      /^Invalid createUseChatHandler\(\) options: maxMesages is not an option \(known: agent, authorize,/,
    );
    expect(() =>
      createUseChatHandler({ agent, authorize, rateLimit: { points: 1, durationSec: 1, x: 1 } } as never),
    ).toThrow("Invalid rateLimit: x is not an option (known: points, durationSec).");
    await expect(serveNode(async () => new Response(), { prot: 8080 } as never)).rejects.toThrow(
      "Invalid serveNode() options: prot is not an option (known: port, host, logger, stalledWriteMs).",
    );
    // An option given as undefined is one left out: it keeps its default.
    const kept = server({ maxRuns: undefined, basePath: undefined, rateLimits: { start: undefined } });
    expect(kept.runCount).toBe(0);
    await kept.close();
  });

  it("refuses options of the wrong kind with an InvalidConfigError when it is created, not at the first request", async () => {
    const agent = () => new Agent({ provider: scriptedModel([[script.text("x")]]) });
    const authorize = () => ({ userId: "u" });
    const server = (extra: object) =>
      createAgentServer({ agent, authorize, hookSecret: SECRET, ...extra } as AgentServerOptions);
    for (const [extra, message] of [
      [
        { hookSecret: undefined },
        "hookSecret must be a secret of 32+ characters or an array of { id, secret } keys, got undefined.",
      ],
      [{ basePath: 5 }, "basePath must be a string, got number."],
      [{ ledger: {} }, "ledger must be a TokenLedger: an object with a use method."],
      [{ now: 5 }, "now must be a function returning the time in ms (as Date.now does)."],
      [
        { agent: undefined, backend: {} },
        "backend must be a RunBackend: an object with start, find and close methods.",
      ],
    ] as const)
      expect(() => server(extra)).toThrow(new InvalidConfigError(message));
    expect(() => createUseChatHandler({ agent, authorize, now: 5 } as never)).toThrow(
      new InvalidConfigError("now must be a function returning the time in ms (as Date.now does)."),
    );
    const handler = async () => new Response();
    for (const [options, message] of [
      [{ port: "8080" }, "serveNode(): port must be a whole number from 0 to 65535, got 8080."],
      [{ port: 70_000 }, "serveNode(): port must be a whole number from 0 to 65535, got 70000."],
      [{ host: 5 }, "serveNode(): host must be a non-empty string, got 5."],
    ] as const)
      await expect(serveNode(handler, options as never)).rejects.toThrow(new InvalidConfigError(message));
    await expect(serveNode(5 as never)).rejects.toThrow(InvalidConfigError);
  });

  it("refuses a count that is no whole number (a fraction, an infinity) when it is created", () => {
    const agent = () => new Agent({ provider: scriptedModel([[script.text("x")]]) });
    const authorize = () => ({ userId: "u" });
    for (const name of [
      "maxStreamsPerRun",
      "maxEventsPerRun",
      "maxRuns",
      "maxQueuedMessages",
      "maxBodyBytes",
    ])
      for (const value of [1.5, Number.POSITIVE_INFINITY])
        expect(() => createAgentServer({ agent, authorize, hookSecret: SECRET, [name]: value })).toThrow(
          new InvalidConfigError(`${name} must be a whole number >= 1, got ${value}.`),
        );
    for (const name of ["maxMessages", "maxBodyBytes"])
      expect(() => createUseChatHandler({ agent, authorize, [name]: 2.5 })).toThrow(
        new InvalidConfigError(`${name} must be a whole number >= 1, got 2.5.`),
      );
  });
});

describe("close()", () => {
  it("aborts the runs and lets their streams end with agent_end; new runs get 503 server-closing", async () => {
    const { url, server } = await startServer(() => ({
      provider: scriptedModel([[script.text("a"), script.hang()]]),
    }));
    const raw = new NdjsonReader(await post(`${url}/runs`, { prompt: "hi" }));
    await raw.until(ofType("text_delta"));
    const client = new AgentClient({ baseUrl: url, headers: { "x-user": "alice" } });
    const run = client.start("hi");
    await new Promise<void>((resolve) => run.on("text_delta", () => resolve()));
    const closed = server.close();
    expect((await raw.rest()).at(-1)).toMatchObject({ type: "agent_end", stopReason: "aborted" });
    expect((await run.result()).stopReason).toBe("aborted");
    const refused = await post(`${url}/runs`, { prompt: "hi" });
    expect([refused.status, (await refused.json()).error.code]).toEqual([503, "server-closing"]);
    await closed;
    expect(server.runCount).toBe(0);
  });

  it("ends a run whose agent was still being made when it began, and refuses one made after it", async () => {
    const made: Agent[] = [];
    let factoryMs = 150;
    const agent = async () => {
      await new Promise((resolve) => setTimeout(resolve, factoryMs));
      const made1 = new Agent({ provider: scriptedModel([[script.text("a"), script.hang()]]) });
      made.push(made1);
      return made1;
    };
    const { url, server } = await startServer(answer("x"), { agent });
    const starting = post(`${url}/runs`, { prompt: "hi" });
    await new Promise((resolve) => setTimeout(resolve, 30)); // the factory works
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    const response = await starting;
    expect(response.status).toBe(200);
    expect(ndjsonEvents(await response.text()).at(-1)).toMatchObject({
      type: "agent_end",
      stopReason: "aborted",
    });
    expect(server.runCount).toBe(0);
    expect(made[0]?.busy).toBe(false);

    // A factory slower than close() waits (5 s): its run is cancelled as it starts, and refused.
    factoryMs = 5_300;
    const second = await startServer(answer("x"), { agent });
    const late = post(`${second.url}/runs`, { prompt: "hi" });
    await new Promise((resolve) => setTimeout(resolve, 30));
    await second.server.close();
    const refused = await late;
    expect([refused.status, (await refused.json()).error.code]).toEqual([503, "server-closing"]);
    // Cancelled as it started: it ends (within abortGraceMs), nobody reading it.
    await vi.waitFor(() => expect(made[1]?.busy).toBe(false), { timeout: 1_000 });
    expect(second.server.runCount).toBe(0);
  }, 15_000);
  it("stops the timers that would drop its idempotency keys, tool-result answers and ledger entries: it leaves none behind", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const server = createAgentServer({
        agent: () =>
          new Agent({
            provider: scriptedModel([[script.toolCall("read_page", { selector: "a" }, { id: "c1" })]]),
            tools: [readPage],
          }),
        authorize: () => ({ userId: "alice" }),
        hookSecret: SECRET,
        clientTools: "suspend",
        // The rate limiter's own timers are not the server's.
        rateLimits: { start: false, callback: false },
      });
      const call = (path: string, body: unknown, extra: Record<string, string> = {}) =>
        server.fetch(
          new Request(`http://server${path}`, {
            method: "POST",
            headers: headers("alice", extra),
            body: JSON.stringify(body),
          }),
        );
      const started = await call("/runs", { prompt: "go" }, { "idempotency-key": "k1" });
      const end = ndjsonEvents(await started.text()).at(-1) as unknown as {
        runId: string;
        pendingClientTools: { toolCallId: string; hookToken: string }[];
      };
      const [pending] = end.pendingClientTools;
      const posted = await call(`/runs/${end.runId}/tool-results`, {
        toolCallId: pending?.toolCallId,
        token: pending?.hookToken,
        error: "no page",
      });
      expect(posted.status).toBe(202);
      await server.close();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("close() and suspended runs", () => {
  it("refuses the result that would resume a suspended run while close() runs: 503 server-closing, nothing resumes", async () => {
    const stubborn = defineTool({
      name: "stubborn",
      description: "Ignores aborts for a while",
      inputSchema: z.object({}),
      execute: () => new Promise((resolve) => setTimeout(() => resolve("late"), 2_000)),
    });
    const resumedModel = scriptedModel([
      [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
      [script.text("resumed")],
    ]);
    const agents = [
      new Agent({ provider: resumedModel, tools: [readPage] }),
      // Holds close() while it waits for this run to end (an abandoned tool, up to abortGraceMs).
      new Agent({
        provider: scriptedModel([[script.toolCall("stubborn", {})], [script.text("x")]]),
        tools: [stubborn],
        limits: { abortGraceMs: 1_000 },
      }),
    ];
    const { url, server } = await startServer(answer("x"), {
      clientTools: "suspend",
      agent: () => agents.shift() as Agent,
    });
    const end = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as {
      runId: string;
      pendingClientTools: { hookToken: string }[];
    };
    const busy = new NdjsonReader(await post(`${url}/runs`, { prompt: "hold" }));
    await busy.until(ofType("tool_call"));
    const closed = server.close();
    const result = await post(`${url}/runs/${end.runId}/tool-results`, {
      toolCallId: "c1",
      token: end.pendingClientTools[0]?.hookToken,
      result: "Title",
    });
    expect([result.status, await result.json()]).toMatchObject([503, { error: { code: "server-closing" } }]);
    await closed;
    // The model was asked once: the suspended run never went on.
    expect(resumedModel.prompts).toHaveLength(1);
    expect(server.runCount).toBe(0);
    // Posted again once the server forgot its runs: no run took it, and the answer says so (not 204).
    const again = await post(`${url}/runs/${end.runId}/tool-results`, {
      toolCallId: "c1",
      token: end.pendingClientTools[0]?.hookToken,
      result: "Title",
    });
    expect([again.status, await again.text()]).toEqual([410, expect.stringContaining('"call-ended"')]);
  });
});

describe("steer, follow-up and cancel", () => {
  it("steers a running server run from the client: the model sees the message at the next boundary", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = {
      ...addNumbers,
      name: "slow_add",
      execute: async ({ a, b }: { a: number; b: number }) => {
        await gate;
        return a + b;
      },
    };
    const model = scriptedModel([
      [
        script.toolCall("slow_add", { a: 1, b: 1 }, { id: "s1" }),
        script.toolCall("slow_add", { a: 2, b: 2 }, { id: "s2" }),
      ],
      [script.text("Steered.")],
    ]);
    const { url } = await startServer(() => ({ provider: model, tools: [slow] }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const first = await reader.until(ofType("tool_call"));
    const steer = await post(`${url}/runs/${first.runId}/steer`, { message: "Stop adding; say Steered." });
    expect(steer.status).toBe(202);
    release();
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    expect(events.find((event) => event.type === "steering_applied")).toBeDefined();
    expect(events.filter((event) => event.type === "tool_result").map((event) => event.status)).toEqual([
      "ok",
      "skipped",
    ]);
    expect(JSON.stringify(model.prompts.at(-1))).toContain("Stop adding; say Steered.");
    const late = await post(`${url}/runs/${first.runId}/steer`, { message: "too late" });
    expect([late.status, (await late.json()).error.code]).toEqual([409, "run-ended"]);
  });

  it("refuses a message past maxQueuedMessages waiting for the run (429 queue-full) and queues nothing of it", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hold = { ...addNumbers, name: "hold", execute: () => gate.then(() => 0) };
    const model = scriptedModel([
      [script.toolCall("hold", { a: 1, b: 1 }, { id: "h1" })],
      [script.text("steered")],
      [script.text("followed up")],
    ]);
    const { url } = await startServer(() => ({ provider: model, tools: [hold] }), { maxQueuedMessages: 3 });
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const { runId } = await reader.until(ofType("tool_call"));
    for (const [route, message] of [
      ["steer", "one"],
      ["follow-up", "two"],
      ["steer", "three"],
    ])
      expect((await post(`${url}/runs/${runId}/${route}`, { message })).status).toBe(202);
    for (const route of ["steer", "follow-up"]) {
      const refused = await post(`${url}/runs/${runId}/${route}`, { message: `four by ${route}` });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect((await refused.json()).error).toEqual({
        code: "queue-full",
        message: `Run "${runId}" has 3 messages waiting to be taken (maxQueuedMessages); send this once it took some.`,
      });
    }
    release();
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    const seen = JSON.stringify(model.prompts);
    for (const message of ["one", "two", "three"]) expect(seen).toContain(message);
    expect(seen).not.toContain("four");
  });

  it("by default takes 100 messages waiting for a run, steering and follow-ups together, and refuses the 101st", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hold = { ...addNumbers, name: "hold", execute: () => gate.then(() => 0) };
    const { url } = await startServer(() => ({
      provider: scriptedModel([
        [script.toolCall("hold", { a: 1, b: 1 }, { id: "h1" })],
        [script.text("done")],
      ]),
      tools: [hold],
    }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const { runId } = await reader.until(ofType("tool_call"));
    for (let i = 0; i < 100; i++) {
      const sent = await post(`${url}/runs/${runId}/${i % 2 === 0 ? "steer" : "follow-up"}`, {
        message: `m${i}`,
      });
      expect(sent.status).toBe(202);
    }
    const refused = await post(`${url}/runs/${runId}/follow-up`, { message: "one too many" });
    expect([refused.status, refused.headers.get("retry-after"), (await refused.json()).error.code]).toEqual([
      429,
      "1",
      "queue-full",
    ]);
    release();
    await reader.cancel();
  });

  it("feeds a follow-up that the run takes when it would stop", async () => {
    const model = scriptedModel([
      [script.toolCall("read_page", { selector: "p" }, { id: "c1" })],
      [script.text("first")],
      [script.text("second")],
    ]);
    const { url } = await startServer(() => ({ provider: model, tools: [readPage] }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until(ofType("tool_call"));
    expect((await post(`${url}/runs/${call.runId}/follow-up`, { message: "And then?" })).status).toBe(202);
    expect(
      (
        await post(`${url}/runs/${call.runId}/tool-results`, {
          toolCallId: "c1",
          token: call.hookToken,
          result: "p",
        })
      ).status,
    ).toBe(204);
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    expect(events.filter((event) => event.type === "turn_start")).toHaveLength(2);
    expect(events.filter((event) => event.type === "text_delta").map((event) => event.text)).toEqual([
      "first",
      "second",
    ]);
  });

  it("refuses a message for a run still waiting behind its conversation's run (409 run-not-started): no other run gets it", async () => {
    const gates: (() => void)[] = [];
    const hold = {
      ...addNumbers,
      name: "hold",
      execute: () => new Promise<number>((resolve) => gates.push(() => resolve(0))),
    };
    const model = scriptedModel([
      [script.toolCall("hold", { a: 1, b: 1 }, { id: "a1" })],
      [script.text("A done")],
      [script.toolCall("hold", { a: 2, b: 2 }, { id: "b1" })],
      [script.text("B done")],
      [script.text("B again")],
    ]);
    const { url } = await startServer(() => ({ provider: model, tools: [hold] }));
    const a = new NdjsonReader(await post(`${url}/runs`, { prompt: "A", conversationId: "c" }));
    await a.until(ofType("tool_call"));
    const startB = await post(`${url}/runs`, { prompt: "B", conversationId: "c" });
    const runB = startB.headers.get("x-run-id");
    const b = new NdjsonReader(startB);
    for (const route of ["steer", "follow-up"]) {
      const refused = await post(`${url}/runs/${runB}/${route}`, { message: "for B" });
      expect([refused.status, (await refused.json()).error.code]).toEqual([409, "run-not-started"]);
    }
    gates[0]?.();
    const eventsA = agentEvents([...a.seen, ...(await a.rest())]);
    expect(eventsA.some((event) => event.type === "steering_applied")).toBe(false);
    expect(eventsA.filter((event) => event.type === "text_delta").map((event) => event.text)).toEqual([
      "A done",
    ]);
    // Once B has begun, it takes messages.
    await b.until(ofType("tool_call"));
    expect((await post(`${url}/runs/${runB}/follow-up`, { message: "and then?" })).status).toBe(202);
    gates[1]?.();
    const eventsB = agentEvents([...b.seen, ...(await b.rest())]);
    expect(eventsB.filter((event) => event.type === "text_delta").map((event) => event.text)).toEqual([
      "B done",
      "B again",
    ]);
  });

  it("drops a message its run ended without taking: the conversation's next run never sees it", async () => {
    const model = scriptedModel([[script.hang()], [script.text("B done")]]);
    const { url } = await startServer(() => ({ provider: model }));
    const a = new NdjsonReader(await post(`${url}/runs`, { prompt: "A", conversationId: "c" }));
    const start = await a.until(ofType("agent_start"));
    expect((await post(`${url}/runs/${start.runId}/steer`, { message: "meant for A" })).status).toBe(202);
    expect((await post(`${url}/runs/${start.runId}/cancel`, {})).status).toBe(202);
    expect((await a.until(ofType("agent_end"))).stopReason).toBe("aborted");
    const eventsB = ndjsonEvents(
      await (await post(`${url}/runs`, { prompt: "B", conversationId: "c" })).text(),
    );
    expect(eventsB.some((event) => event.type === "steering_applied")).toBe(false);
    expect(eventsB.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    expect(JSON.stringify(model.prompts.at(-1))).not.toContain("meant for A");
  });

  it("cancels a run: it ends aborted, and only its owner can cancel it", async () => {
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.hang()]]) }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const start = await reader.until(ofType("agent_start"));
    expect((await post(`${url}/runs/${start.runId}/cancel`, {}, "mallory")).status).toBe(404);
    expect((await post(`${url}/runs/${start.runId}/cancel`, {})).status).toBe(202);
    const end = await reader.until(ofType("agent_end"));
    expect(end.stopReason).toBe("aborted");
  });
});
