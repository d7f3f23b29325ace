import { AgentClient } from "@agent-core/client";
import { Agent } from "@agent-core/core";
import type { TokenLedger } from "@agent-core/http";
import { planExecute } from "@agent-core/plan-execute";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import {
  addNumbers,
  agentEvents,
  headers,
  NdjsonReader,
  ndjsonEvents,
  ofType,
  post,
  readPage,
  startServer,
} from "./harness.js";

// Client-executed tools over HTTP: hook tokens, single use, and every kind of bad callback.

const twoClientCalls = () => ({
  provider: scriptedModel([
    [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
    [script.toolCall("read_page", { selector: "h2" }, { id: "c2" })],
    [script.text("done")],
  ]),
  tools: [readPage],
});

/** One reply that calls two client tools at once, then the answer. */
const twoCallsInOneReply = () => ({
  provider: scriptedModel([
    [
      script.toolCall("read_page", { selector: "a" }, { id: "c1" }),
      script.toolCall("read_page", { selector: "b" }, { id: "c2" }),
    ],
    [script.text("Both read.")],
  ]),
  tools: [readPage],
});

type AttachedEvent = ReturnType<AgentClient["attach"]> extends AsyncIterable<infer E> ? E : never;

/**
 * A page reloaded mid-run: attaches to `runId` from its start and runs `read_page` for the calls
 * it is handed. Returns the calls it ran and every event it read.
 */
async function reloadedPage(url: string, runId: string): Promise<{ ran: string[]; events: AttachedEvent[] }> {
  const ran: string[] = [];
  const page = new AgentClient({
    baseUrl: url,
    headers: { "x-user": "alice" },
    tools: {
      read_page: (_args: unknown, { toolCallId }: { toolCallId: string }) => {
        ran.push(toolCallId);
        return `text of ${toolCallId}`;
      },
    },
  });
  const events: AttachedEvent[] = [];
  for await (const event of page.attach(runId)) events.push(event);
  return { ran, events };
}

/** Posts a tool result; returns the status and the error code, if any. */
async function postResult(
  url: string,
  runId: unknown,
  body: Record<string, unknown>,
  user = "alice",
  extra = {},
) {
  const response = await post(`${url}/runs/${runId}/tool-results`, body, user, extra);
  const text = await response.text();
  return [response.status, text === "" ? undefined : JSON.parse(text).error.code];
}

/** Every event of a run, read from its start. */
async function eventsOfRun(url: string, runId: string) {
  return ndjsonEvents(
    await (await fetch(`${url}/runs/${runId}/events`, { headers: { "x-user": "alice" } })).text(),
  );
}

/**
 * Starts a run that suspends at its client call `c1`, posts `outcome` as its result, and returns
 * the events of the run that resumed.
 */
async function resumedAfter(url: string, outcome: { result: string } | { error: string }) {
  const end = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as Record<
    string,
    unknown
  > & { pendingClientTools: { hookToken: string }[] };
  const token = end.pendingClientTools[0]?.hookToken;
  const posted = await post(`${url}/runs/${end.runId}/tool-results`, { toolCallId: "c1", token, ...outcome });
  return eventsOfRun(url, (await posted.json()).runId);
}

describe("a client tool over HTTP", () => {
  it("suspends at each client call with a signed token and resumes on its first valid result", async () => {
    const { url } = await startServer(twoClientCalls);
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    for (const id of ["c1", "c2"]) {
      const call = await reader.until(ofType("tool_call"));
      expect(call).toMatchObject({ toolCallId: id, execution: "client", hookToken: expect.any(String) });
      const [payload] = String(call.hookToken).split(".");
      const claims = JSON.parse(Buffer.from(payload as string, "base64url").toString());
      expect(claims).toMatchObject({
        runId: call.runId,
        toolCallId: id,
        toolName: "read_page",
        userId: "alice",
        args: expect.any(String),
        exp: expect.any(Number),
        nonce: expect.any(String),
      });
      const body = { toolCallId: id, token: call.hookToken, result: `text of ${id}` };
      expect(await postResult(url, call.runId, body)).toEqual([204, undefined]);
      // The same result again changes nothing; a different one for a used token is a conflict.
      expect(await postResult(url, call.runId, body)).toEqual([204, undefined]);
      expect(await postResult(url, call.runId, { ...body, result: "other" })).toEqual([409, "token-used"]);
    }
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    assertEventProtocol(events);
    expect(events.filter((event) => event.type === "tool_result").map((event) => event.result)).toEqual([
      "text of c1",
      "text of c2",
    ]);
    expect(events.at(-1)).toMatchObject({ stopReason: "completed" });
  });

  it("refuses forged, cross-run, cross-call, cross-user, cross-document and expired tokens, and the run goes on", async () => {
    let now = Date.now();
    const { url } = await startServer(
      () => ({
        provider: scriptedModel([
          [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
          [script.text("done")],
        ]),
        tools: [readPage],
      }),
      { now: () => now, clientToolTimeoutMs: 60_000 },
    );
    const docs = { "x-documents": "doc-1" };
    const first = new NdjsonReader(
      await post(`${url}/runs`, { prompt: "go", documentId: "doc-1" }, "alice", docs),
    );
    const call = await first.until(ofType("tool_call"));
    const other = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const otherCall = await other.until(ofType("tool_call"));
    const token = String(call.hookToken);
    const [payload, signature] = token.split(".") as [string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    const reSigned = (changes: object) =>
      `${Buffer.from(JSON.stringify({ ...claims, ...changes })).toString("base64url")}.${signature}`;
    const flipped = `${payload}.${signature.slice(0, -2)}${signature.endsWith("AA") ? "BB" : "AA"}`;
    const good = { toolCallId: "c1", token, result: "ok" };
    const cases: [string, unknown, Record<string, unknown>, string, Record<string, string>, unknown[]][] = [
      ["garbage", call.runId, { ...good, token: "not-a-token" }, "alice", docs, [403, "invalid-token"]],
      ["signature flipped", call.runId, { ...good, token: flipped }, "alice", docs, [403, "invalid-token"]],
      [
        "claims edited",
        call.runId,
        { ...good, token: reSigned({ userId: "mallory" }) },
        "mallory",
        docs,
        [403, "invalid-token"],
      ],
      ["another run's token", otherCall.runId, good, "alice", docs, [403, "invalid-token"]],
      ["another call", call.runId, { ...good, toolCallId: "c9" }, "alice", docs, [403, "invalid-token"]],
      ["another user", call.runId, good, "mallory", docs, [403, "invalid-token"]],
      ["another document", call.runId, good, "alice", { "x-documents": "doc-2" }, [403, "invalid-token"]],
      ["no such run", "nope", good, "alice", docs, [403, "invalid-token"]],
    ];
    for (const [name, runId, body, user, extra, expected] of cases)
      expect([name, ...(await postResult(url, runId, body, user, extra))]).toEqual([name, ...expected]);
    now += 61_000;
    expect(await postResult(url, call.runId, good, "alice", docs)).toEqual([410, "token-expired"]);
    now -= 61_000;
    // None of that disturbed the run: it still waits, and takes the real result.
    expect(await postResult(url, call.runId, good, "alice", docs)).toEqual([204, undefined]);
    const events = agentEvents([...first.seen, ...(await first.rest())]);
    assertEventProtocol(events);
    expect(events.filter((event) => event.type === "tool_result")).toEqual([
      expect.objectContaining({ toolCallId: "c1", status: "ok", result: "ok" }),
    ]);
    await post(`${url}/runs/${otherCall.runId}/cancel`, {});
    await other.rest();
  });

  it("ends a call nobody answers as timeout with a tool-timeout error event; a late result gets 410", async () => {
    const { url } = await startServer(
      () => ({
        provider: scriptedModel([
          [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
          [script.text("gave up")],
        ]),
        tools: [readPage],
      }),
      { clientToolTimeoutMs: 40 },
    );
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until(ofType("tool_call"));
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ status: "timeout" });
    expect(events.find((event) => event.type === "error")).toMatchObject({
      code: "tool-timeout",
      toolCallId: "c1",
    });
    expect(events.at(-1)).toMatchObject({ stopReason: "completed" });
    const late = await postResult(url, call.runId, {
      toolCallId: "c1",
      token: call.hookToken,
      result: "late",
    });
    expect(late).toEqual([410, "token-expired"]);
  });

  it("replays a client call that has its result without the hookToken: only a call that still waits is given one", async () => {
    const { url } = await startServer(twoClientCalls);
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go", outliveStream: true }));
    const first = await reader.until(ofType("tool_call"));
    const replay = async () =>
      agentEvents(
        await new NdjsonReader(await fetch(`${url}/runs/${first.runId}/events`, { headers: headers() }))
          .until(ofType("tool_call"))
          .then((call) => [call]),
      );
    // While c1 waits, a re-attach gets its token, as the live stream did.
    expect(await replay()).toEqual([
      expect.objectContaining({ toolCallId: "c1", hookToken: first.hookToken }),
    ]);
    const body = { toolCallId: "c1", token: first.hookToken, result: "text of c1" };
    expect(await postResult(url, first.runId, body)).toEqual([204, undefined]);
    const second = await reader.until(ofType("tool_call"));
    expect(second).toMatchObject({ toolCallId: "c2", hookToken: expect.any(String) });
    // Answered: replayed without it, so a client that re-attaches does not run the tool again.
    const [replayed] = await replay();
    expect(replayed).toMatchObject({ toolCallId: "c1", execution: "client" });
    expect(replayed).not.toHaveProperty("hookToken");
    await postResult(url, first.runId, { toolCallId: "c2", token: second.hookToken, result: "text of c2" });
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    assertEventProtocol(events);
  });

  it("a client that attaches after a client call was answered does not run its tool again, and reports nothing", async () => {
    const { url } = await startServer(twoClientCalls);
    const client = (read_page: (args: unknown, context: { toolCallId: string }) => unknown) =>
      new AgentClient({ baseUrl: url, headers: { "x-user": "alice" }, tools: { read_page } });
    // The first page answers c1, then goes away while its c2 works.
    const run = client((_, { toolCallId }) =>
      toolCallId === "c1" ? "text of c1" : new Promise(() => {}),
    ).start("go", { outliveStream: true });
    const runId = await run.runId;
    for await (const event of run) if (event.type === "tool_call" && event.toolCallId === "c2") break;
    // The reloaded page attaches from the start: it runs c2, which waits, and not c1 again.
    const { ran, events } = await reloadedPage(url, runId);
    expect(events.filter((event) => event.type === "client_error")).toEqual([]);
    expect(ran).toEqual(["c2"]);
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
  });

  it("refuses a result nested more than 100 levels deep with 400 invalid-body, before taking it: the call still takes a good one", async () => {
    const { url } = await startServer(() => ({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
        [script.text("done")],
      ]),
      tools: [readPage],
    }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until(ofType("tool_call"));
    // Written by hand: the body's own object is the first level, the result's arrays the others.
    const nested = (depth: number) =>
      `{"toolCallId":"c1","token":${JSON.stringify(call.hookToken)},"result":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    for (const depth of [20_000, 100]) {
      const response = await fetch(`${url}/runs/${call.runId}/tool-results`, {
        method: "POST",
        headers: headers(),
        body: nested(depth),
      });
      const answer = { depth, status: response.status, body: await response.text() };
      expect(answer).toEqual({ depth, status: 400, body: expect.stringContaining('"invalid-body"') });
    }
    const taken = await fetch(`${url}/runs/${call.runId}/tool-results`, {
      method: "POST",
      headers: headers(),
      body: nested(99),
    });
    expect(taken.status).toBe(204);
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ status: "ok" });
  });

  it("refuses a post with neither result nor error, both, or an error that is no string, saying which: the call still takes a good one", async () => {
    const { url } = await startServer(() => ({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
        [script.text("done")],
      ]),
      tools: [readPage],
    }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until(ofType("tool_call"));
    const posted = { toolCallId: "c1", token: call.hookToken };
    const either = { path: "", message: 'Give either "result" or "error" (a string), not both.' };
    for (const [body, issue] of [
      [posted, either],
      [{ ...posted, result: "T", error: "failed" }, either],
      [
        { ...posted, error: 5 },
        { path: "error", message: expect.stringContaining("expected string") },
      ],
    ] as const) {
      const response = await post(`${url}/runs/${call.runId}/tool-results`, body);
      expect([response.status, await response.json()]).toEqual([
        400,
        { error: { code: "invalid-body", message: expect.any(String), issues: [issue] } },
      ]);
    }
    expect(await postResult(url, call.runId, { ...posted, error: "failed" })).toEqual([204, undefined]);
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ status: "error" });
  });

  it("gives a result posted after the run was cancelled 410, and the history keeps the aborted result", async () => {
    const { url } = await startServer(twoClientCalls);
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until(ofType("tool_call"));
    await post(`${url}/runs/${call.runId}/cancel`, {});
    await reader.rest();
    const late = { toolCallId: "c1", token: call.hookToken, result: "late" };
    expect(await postResult(url, call.runId, late)).toEqual([410, "call-ended"]);
    // The same post again (a retry) is answered as the first time: it was refused, it still is.
    expect(await postResult(url, call.runId, late)).toEqual([410, "call-ended"]);
  });

  it("answers two identical posts in flight at once alike, with a ledger slower for the first", async () => {
    // A shared ledger answers the first post's insert after the resend's read: the resend learns
    // it is a repeat before the first post took the result.
    const used = new Map<string, string>();
    const ledger: TokenLedger = {
      async use(nonce, payload) {
        const first = used.get(nonce);
        if (first === undefined) used.set(nonce, payload);
        await new Promise((resolve) => setTimeout(resolve, first === undefined ? 40 : 1));
        return first === undefined ? "first" : first === payload ? "repeat" : "conflict";
      },
    };
    const { url } = await startServer(twoClientCalls, { ledger });
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until(ofType("tool_call"));
    const body = { toolCallId: "c1", token: call.hookToken, result: "text" };
    const first = postResult(url, call.runId, body);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await Promise.all([first, postResult(url, call.runId, body)])).toEqual([
      [204, undefined],
      [204, undefined],
    ]);
    await post(`${url}/runs/${call.runId}/cancel`, {});
    await reader.rest();
  });

  it("keeps several client calls outstanding in parallel execution, each with its own token, answered out of order", async () => {
    const { url } = await startServer(() => ({
      provider: scriptedModel([
        [
          script.toolCall("read_page", { selector: "a" }, { id: "c1" }),
          script.toolCall("add", { a: 1, b: 2 }, { id: "s1" }),
          script.toolCall("read_page", { selector: "b" }, { id: "c2" }),
        ],
        [script.text("done")],
      ]),
      tools: [readPage, addNumbers],
      toolExecution: "parallel",
    }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const calls = [await reader.until(ofType("tool_call")), await reader.until(ofType("tool_call"))];
    const clientCalls = [...calls, await reader.until(ofType("tool_call"))].filter((call) => call.hookToken);
    expect(clientCalls.map((call) => call.toolCallId)).toEqual(["c1", "c2"]);
    expect(new Set(clientCalls.map((call) => call.hookToken)).size).toBe(2);
    const [c1, c2] = clientCalls as [Record<string, unknown>, Record<string, unknown>];
    // Each token only answers its own call.
    expect(await postResult(url, c1.runId, { toolCallId: "c2", token: c1.hookToken, result: "x" })).toEqual([
      403,
      "invalid-token",
    ]);
    expect(await postResult(url, c2.runId, { toolCallId: "c2", token: c2.hookToken, result: "B" })).toEqual([
      204,
      undefined,
    ]);
    expect(
      await postResult(url, c1.runId, { toolCallId: "c1", token: c1.hookToken, error: "no such element" }),
    ).toEqual([204, undefined]);
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    assertEventProtocol(events);
    expect(
      events.filter((event) => event.type === "tool_result").map((event) => [event.toolCallId, event.status]),
    ).toEqual(
      expect.arrayContaining([
        ["c1", "error"],
        ["s1", "ok"],
        ["c2", "ok"],
      ]),
    );
  });

  it("works with plan-execute: a client step of a plan gets its token and its result", async () => {
    const { url } = await startServer(() => ({
      provider: scriptedModel([
        [
          script.text(
            JSON.stringify({
              steps: [
                { tool: "read_page", args: { selector: "h1" } },
                { tool: "add", args: { a: 1, b: 1 } },
              ],
            }),
          ),
        ],
        [script.text("Planned and done.")],
      ]),
      tools: [readPage, addNumbers],
      orchestrator: planExecute(),
    }));
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until((event) => event.type === "tool_call" && event.execution === "client");
    expect(
      await postResult(url, call.runId, {
        toolCallId: call.toolCallId,
        token: call.hookToken,
        result: "Title",
      }),
    ).toEqual([204, undefined]);
    const events = agentEvents([...reader.seen, ...(await reader.rest())]);
    assertEventProtocol(events);
    expect(events.filter((event) => event.type === "plan_step_end").map((event) => event.result)).toContain(
      "Title",
    );
    expect(events.at(-1)).toMatchObject({ stopReason: "completed" });
  });

  it('suspends with clientTools: "suspend": agent_end lists the calls with tokens, the last result resumes the run as a new one', async () => {
    const { url } = await startServer(twoCallsInOneReply, { clientTools: "suspend" });
    const first = await (await post(`${url}/runs`, { prompt: "go" })).text();
    const events = ndjsonEvents(first);
    const end = events.at(-1) as Record<string, unknown> & { pendingClientTools: Record<string, unknown>[] };
    expect(end).toMatchObject({ type: "agent_end", stopReason: "awaiting_client_tool" });
    expect(end.pendingClientTools.map((call) => [call.toolCallId, typeof call.hookToken])).toEqual([
      ["c1", "string"],
      ["c2", "string"],
    ]);
    const [c1, c2] = end.pendingClientTools as [Record<string, unknown>, Record<string, unknown>];
    const body1 = { toolCallId: "c1", token: c1.hookToken, result: "A" };
    expect(await postResult(url, end.runId, body1)).toEqual([204, undefined]);
    const last = await post(`${url}/runs/${end.runId}/tool-results`, {
      toolCallId: "c2",
      token: c2.hookToken,
      result: "B",
    });
    expect(last.status).toBe(202);
    const { runId } = await last.json();
    expect(runId).not.toBe(end.runId);
    // Posting the last result again (a client that lost the answer) names the same run.
    const again = await post(`${url}/runs/${end.runId}/tool-results`, {
      toolCallId: "c2",
      token: c2.hookToken,
      result: "B",
    });
    expect([again.status, (await again.json()).runId]).toEqual([202, runId]);
    // The first result again is answered as it was the first time: it did not resume the run.
    expect(await postResult(url, end.runId, body1)).toEqual([204, undefined]);
    const resumed = await eventsOfRun(url, runId);
    assertEventProtocol(resumed);
    expect(resumed.filter((event) => event.type === "tool_result").map((event) => event.result)).toEqual([
      "A",
      "B",
    ]);
    expect(resumed.at(-1)).toMatchObject({ stopReason: "completed" });
  });

  it("gives the model a clear text for a posted error that is empty", async () => {
    const { url } = await startServer(
      () => ({
        provider: scriptedModel([
          [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
          [script.text("ok")],
        ]),
        tools: [readPage],
      }),
      { clientTools: "suspend" },
    );
    const resumed = await resumedAfter(url, { error: "" });
    expect(resumed.find(ofType("tool_result"))).toMatchObject({
      status: "error",
      error: "The client tool failed without a message.",
    });
  });

  it("gives a run resumed from a suspended run its own runTimeoutMs, named as the option the user set", async () => {
    const { url } = await startServer(
      () => ({
        provider: scriptedModel([
          [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
          [script.hang()],
        ]),
        tools: [readPage],
      }),
      { clientTools: "suspend", runTimeoutMs: 50 },
    );
    const resumed = await resumedAfter(url, { result: "A" });
    expect(resumed.find(ofType("error"))).toMatchObject({
      message: "The run took longer than 50 ms (runTimeoutMs).",
    });
    expect(resumed.at(-1)).toMatchObject({ type: "agent_end", stopReason: "timeout" });
  });

  it("counts a run resumed from a suspended run in that run's place toward maxRuns: the resume does not use a second place", async () => {
    const { url } = await startServer(twoCallsInOneReply, {
      clientTools: "suspend",
      maxRuns: 2,
      rateLimits: { start: false },
    });
    const end = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as Record<
      string,
      unknown
    > & { pendingClientTools: { toolCallId: string; hookToken: string }[] };
    for (const [index, call] of end.pendingClientTools.entries()) {
      const answer = await post(`${url}/runs/${end.runId}/tool-results`, {
        toolCallId: call.toolCallId,
        token: call.hookToken,
        result: "text",
      });
      expect(answer.status).toBe(index === 0 ? 204 : 202);
    }
    // The resumed run holds the suspended run's place: one place is left for a start.
    const second = await post(`${url}/runs`, { prompt: "go" });
    expect(second.status).toBe(200);
    await second.text();
    const third = await post(`${url}/runs`, { prompt: "go" });
    expect([third.status, (await third.json()).error.code]).toEqual([503, "server-busy"]);
  });

  it("keeps a conversation whose run is suspended as long as the run can be resumed, past conversationTtlMs", async () => {
    let agents = 0;
    // The server's clock moves only when the test says: real time between the requests is no idleness.
    let clock = 1_000_000;
    const { url } = await startServer(twoCallsInOneReply, {
      clientTools: "suspend",
      conversationTtlMs: 20,
      now: () => clock,
      agent: () => {
        agents++;
        return new Agent({
          provider: scriptedModel([
            [script.toolCall("read_page", { selector: "a" }, { id: "c1" })],
            [script.text("Read.")],
            [script.text("Still here.")],
          ]),
          tools: [readPage],
        });
      },
    });
    const end = ndjsonEvents(
      await (await post(`${url}/runs`, { prompt: "go", conversationId: "c" })).text(),
    ).at(-1) as Record<string, unknown> & { pendingClientTools: { toolCallId: string; hookToken: string }[] };
    expect(end.stopReason).toBe("awaiting_client_tool");
    // Long past conversationTtlMs, well within suspendedTtlMs (1 h), and its timer has looked: the
    // answer resumes the run.
    clock += 60_000;
    await new Promise((resolve) => setTimeout(resolve, 100));
    const [call] = end.pendingClientTools;
    const resumed = await post(`${url}/runs/${end.runId}/tool-results`, {
      toolCallId: call?.toolCallId,
      token: call?.hookToken,
      result: "the page",
    });
    expect(resumed.status).toBe(202);
    const { runId } = (await resumed.json()) as { runId: string };
    const events = ndjsonEvents(
      await (await fetch(`${url}/runs/${runId}/events`, { headers: headers() })).text(),
    );
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    // The conversation goes on with the same agent, its history whole.
    const next = ndjsonEvents(
      await (await post(`${url}/runs`, { prompt: "more", conversationId: "c" })).text(),
    );
    expect(next.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    expect(agents).toBe(1);
  });

  it("keeps a suspended run as long as any ended run once it waits no more: resumed, or given up by a cancel", async () => {
    const { url } = await startServer(twoClientCalls, { clientTools: "suspend", retainEndedMs: 50 });
    const suspended = async () =>
      ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as Record<
        string,
        unknown
      > & {
        runId: string;
        pendingClientTools: { toolCallId: string; hookToken: string }[];
      };
    /** Re-attaches until the server has forgotten the run (404), or gives up after 5 s. */
    const forgotten = async (runId: string) => {
      for (const deadline = Date.now() + 5_000; Date.now() < deadline; ) {
        const response = await fetch(`${url}/runs/${runId}/events`, { headers: headers() });
        await response.body?.cancel();
        if (response.status === 404) return true;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return false;
    };
    const resumedOne = await suspended();
    const [call] = resumedOne.pendingClientTools;
    const answer = await post(`${url}/runs/${resumedOne.runId}/tool-results`, {
      toolCallId: call?.toolCallId,
      token: call?.hookToken,
      result: "h1",
    });
    expect(answer.status).toBe(202);
    expect(await forgotten(resumedOne.runId)).toBe(true);

    const cancelledOne = await suspended();
    expect((await post(`${url}/runs/${cancelledOne.runId}/cancel`, {})).status).toBe(202);
    expect(await forgotten(cancelledOne.runId)).toBe(true);
  });

  it("replays a suspended run's agent_end with the calls that no longer take a result without their hookToken", async () => {
    const { url } = await startServer(twoCallsInOneReply, { clientTools: "suspend" });
    const end = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as Record<
      string,
      unknown
    > & { pendingClientTools: Record<string, unknown>[] };
    const [c1] = end.pendingClientTools as [Record<string, unknown>, Record<string, unknown>];
    const tokens = async () => {
      const replayed = ndjsonEvents(
        await (await fetch(`${url}/runs/${end.runId}/events`, { headers: headers() })).text(),
      ).at(-1) as Record<string, unknown> & { pendingClientTools: Record<string, unknown>[] };
      return replayed.pendingClientTools.map((call) => [call.toolCallId, typeof call.hookToken]);
    };
    expect(await postResult(url, end.runId, { toolCallId: "c1", token: c1.hookToken, result: "A" })).toEqual([
      204,
      undefined,
    ]);
    // Answered: a page reloaded now runs c2 only, as the live stream's c1 was run already.
    expect(await tokens()).toEqual([
      ["c1", "undefined"],
      ["c2", "string"],
    ]);
    // Given up by a cancel: nothing is left to run.
    expect((await post(`${url}/runs/${end.runId}/cancel`, {})).status).toBe(202);
    expect(await tokens()).toEqual([
      ["c1", "undefined"],
      ["c2", "undefined"],
    ]);
  });

  it("a page reloaded between a suspended run's results runs only the call still waiting, reports nothing, and follows the resumed run", async () => {
    const { url } = await startServer(twoCallsInOneReply, { clientTools: "suspend" });
    const end = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as Record<
      string,
      unknown
    > & { runId: string; pendingClientTools: Record<string, unknown>[] };
    const [c1] = end.pendingClientTools as [Record<string, unknown>, Record<string, unknown>];
    // The first page answered c1, then went away.
    expect(await postResult(url, end.runId, { toolCallId: "c1", token: c1.hookToken, result: "A" })).toEqual([
      204,
      undefined,
    ]);
    const { ran, events } = await reloadedPage(url, end.runId);
    expect(events.filter((event) => event.type === "client_error")).toEqual([]);
    expect(ran).toEqual(["c2"]);
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
  });

  it("gives up a suspended batch when its run is cancelled: its results get 410 and nothing resumes", async () => {
    const { url, server } = await startServer(twoCallsInOneReply, { clientTools: "suspend" });
    const end = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as Record<
      string,
      unknown
    > & { pendingClientTools: Record<string, unknown>[] };
    const [c1, c2] = end.pendingClientTools as [Record<string, unknown>, Record<string, unknown>];
    const body1 = { toolCallId: "c1", token: c1.hookToken, result: "A" };
    expect(await postResult(url, end.runId, body1)).toEqual([204, undefined]);
    expect((await post(`${url}/runs/${end.runId}/cancel`, {})).status).toBe(202);
    const body2 = { toolCallId: "c2", token: c2.hookToken, result: "B" };
    expect(await postResult(url, end.runId, body2)).toEqual([410, "call-ended"]);
    // The result taken before the cancel is still answered as it was.
    expect(await postResult(url, end.runId, body1)).toEqual([204, undefined]);
    expect(server.runCount).toBe(1);
  });

  it("refuses the calls of a suspended batch a new prompt failed, on every post of their results", async () => {
    const { url } = await startServer(
      () => ({
        provider: scriptedModel([
          [script.toolCall("read_page", { selector: "a" }, { id: "c1" })],
          [script.text("Something else.")],
        ]),
        tools: [readPage],
      }),
      { clientTools: "suspend" },
    );
    const end = ndjsonEvents(
      await (await post(`${url}/runs`, { prompt: "go", conversationId: "c" })).text(),
    ).at(-1) as Record<string, unknown> & { pendingClientTools: Record<string, unknown>[] };
    await (await post(`${url}/runs`, { prompt: "never mind", conversationId: "c" })).text();
    const body = { toolCallId: "c1", token: end.pendingClientTools[0]?.hookToken, result: "A" };
    expect(await postResult(url, end.runId, body)).toEqual([410, "call-ended"]);
    expect(await postResult(url, end.runId, body)).toEqual([410, "call-ended"]);
  });
});
