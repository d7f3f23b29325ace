import "@agent-core/agentic";
import { AgentClient, type ClientEvent } from "@agent-core/client";
import { Agent, type AgentEvent } from "@agent-core/core";
import { createAgentServer, serveNode } from "@agent-core/http";
import { assertEventProtocol, type ScriptPart, script, scriptedModel } from "@agent-core/testing";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addNumbers, headers, ndjsonEvents } from "../http/harness.js";
import { httpFuzzOptions } from "./property.js";

// Generated timelines of `@agent-core/client` against a real server on loopback, over a network
// that fails: a request refused before it is sent, one whose answer is lost after the server took
// it, a stream cut after any byte; NDJSON or SSE; a run that outlives its stream or not; a cancel
// at any event, before the start is posted too. After every run: what the client yielded is the
// server's log exactly (or a prefix of it, when cancelled), its result is the log's agent_end (or
// a "cancelled" rejection), each start made one run on the server, and every run the server made
// has ended: a cancel reaches the run even when the start's answer was lost. The faults stay
// within the client's retries, so none of them may surface. Seeded like the race suite
// (FUZZ_SEED, FUZZ_RUNS: a quarter of its cases, each a whole HTTP exchange).

type Fault = { kind: "refuse" } | { kind: "lose-answer" } | { kind: "cut-body"; afterBytes: number };

interface Timeline {
  /** Server tool calls before the answer, one per model step. */
  toolCalls: number;
  sse: boolean;
  outliveStream: boolean;
  /** Applied to the client's requests in order (starts, re-attaches, cancels); then none. */
  faults: (Fault | undefined)[];
  /**
   * Cancel after this many events (0: right after `start()`), or when the run's last model step
   * begins if fewer came: that step then hangs until the cancel reaches it, so only a cancel the
   * server took ends the run.
   */
  cancelAfter: number | undefined;
}

const fault: fc.Arbitrary<Fault | undefined> = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 3 },
  fc.constant<Fault>({ kind: "refuse" }),
  fc.constant<Fault>({ kind: "lose-answer" }),
  fc.record({ kind: fc.constant("cut-body" as const), afterBytes: fc.integer({ min: 0, max: 900 }) }),
);

const timeline: fc.Arbitrary<Timeline> = fc.record({
  toolCalls: fc.integer({ min: 0, max: 3 }),
  sse: fc.boolean(),
  outliveStream: fc.boolean(),
  faults: fc.array(fault, { maxLength: 6 }),
  cancelAfter: fc.option(fc.integer({ min: 0, max: 12 }), { freq: 2, nil: undefined }),
});

/** More attempts than a timeline has faults: a fault never uses the last of them. */
const RETRIES = { attempts: 8, delayMs: 1 };
const ENDED_WITHIN_MS = 3_000;
const CASE_MS = 10_000;

let current: Timeline;
/** The agents the server made for the current timeline, each with whether its run has ended. */
let made: { ended: Promise<AgentEvent> }[] = [];
/** Called when the current run's hanging model step begins. */
let onHang: () => void = () => {};
let url: string;
let close: () => Promise<void>;

function steps(t: Timeline): (ScriptPart[] | (() => ScriptPart[]))[] {
  const calls = Array.from({ length: t.toolCalls }, (_, i) => [
    script.toolCall("add", { a: i, b: 1 }, { id: `c${i}` }),
  ]);
  const hang = () => {
    onHang();
    return [script.hang()];
  };
  return [...calls, t.cancelAfter === undefined ? [script.text("done")] : hang];
}

beforeAll(async () => {
  const server = createAgentServer({
    agent: () => {
      const agent = new Agent({ provider: scriptedModel(steps(current)), tools: [addNumbers] });
      made.push({ ended: new Promise((resolve) => agent.on("agent_end", resolve)) });
      return agent;
    },
    authorize: (request) => {
      const user = request.headers.get("x-user");
      return user ? { userId: user } : undefined;
    },
    hookSecret: "network-secret-network-secret-network-secret",
    // A run ends by its cancel or its end, never because its client's stream dropped for a while.
    detachGraceMs: 60_000,
    rateLimits: { start: false, callback: false },
  });
  const node = await serveNode(server.fetch);
  url = node.url;
  close = async () => {
    await server.close();
    await node.close();
  };
});
afterAll(() => close());

/** `fetch` over a network that fails as `faults` say, request by request. */
function faultyFetch(faults: readonly (Fault | undefined)[]): typeof fetch {
  let request = 0;
  return async (input, init) => {
    const planned = faults[request++];
    if (planned?.kind === "refuse") throw new TypeError("fetch failed: connection refused");
    const response = await fetch(input, init);
    if (planned?.kind === "lose-answer") {
      await response.body?.cancel();
      throw new TypeError("fetch failed: the connection was reset");
    }
    if (planned?.kind === "cut-body" && response.body !== null)
      return new Response(cutAfter(response.body, planned.afterBytes), response);
    return response;
  };
}

/** The body's first `bytes` bytes, then a network error, as a connection that dies mid-stream. */
function cutAfter(body: ReadableStream<Uint8Array>, bytes: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let left = bytes;
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      if (value.byteLength <= left) {
        left -= value.byteLength;
        return controller.enqueue(value);
      }
      if (left > 0) controller.enqueue(value.subarray(0, left));
      await reader.cancel();
      controller.error(new TypeError("terminated: the connection was reset"));
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

interface Outcome {
  yielded: ClientEvent[];
  result: { ok: true; end: unknown } | { ok: false; code: unknown };
  runId: string | undefined;
}

async function play(t: Timeline): Promise<Outcome> {
  const client = new AgentClient({
    baseUrl: url,
    headers: { "x-user": "alice" },
    format: t.sse ? "sse" : "ndjson",
    fetch: faultyFetch(t.faults),
    reconnect: RETRIES,
    postRetry: RETRIES,
  });
  const run = client.start("go", { outliveStream: t.outliveStream });
  const runId = run.runId.then(
    (id) => id,
    () => undefined,
  );
  const yielded: ClientEvent[] = [];
  const cancels: Promise<void>[] = [];
  onHang = () => cancels.push(run.cancel());
  if (t.cancelAfter === 0) cancels.push(run.cancel());
  for await (const event of run) {
    yielded.push(event);
    if (yielded.length === t.cancelAfter) cancels.push(run.cancel());
  }
  await Promise.all(cancels);
  const result = await run.result().then(
    (end) => ({ ok: true as const, end }),
    (error: { code?: unknown }) => ({ ok: false as const, code: error.code }),
  );
  return { yielded, result, runId: await runId };
}

/** The run's whole log, read over the plain network once it has ended. */
async function logOf(runId: string): Promise<AgentEvent[]> {
  const response = await fetch(`${url}/runs/${runId}/events`, { headers: headers() });
  return ndjsonEvents(await response.text());
}

async function check(t: Timeline, outcome: Outcome): Promise<void> {
  // Each start made one run at most (none when it was cancelled before it was posted).
  expect(made.length).toBeLessThanOrEqual(1);
  if (t.cancelAfter === undefined || t.cancelAfter > 0) expect(made.length).toBe(1);
  // Every run the server made ends: one the client cancelled hangs until the cancel reaches it.
  const ended = await Promise.all(
    made.map(({ ended }) =>
      Promise.race([ended, new Promise((resolve) => setTimeout(resolve, ENDED_WITHIN_MS, "still running"))]),
    ),
  );
  for (const end of ended) expect(end).toMatchObject({ type: "agent_end" });
  if (t.cancelAfter === undefined) {
    expect(outcome.result).toEqual({ ok: true, end: expect.objectContaining({ stopReason: "completed" }) });
  } else {
    expect(outcome.result).toEqual({ ok: false, code: "cancelled" });
    for (const end of ended) expect(end).toMatchObject({ stopReason: "aborted" });
  }
  if (made.length === 0) return expect(outcome.yielded).toEqual([]);
  const runId = (ended[0] as AgentEvent).runId;
  const log = await logOf(runId);
  assertEventProtocol(log);
  // What the client yielded is the log, exactly: each event once, in order, from the first.
  const events = outcome.yielded.filter((event) => event.type !== "client_error");
  expect(events.length).toBe(outcome.yielded.length);
  if (t.cancelAfter === undefined) {
    expect(events).toEqual(log);
    if (outcome.result.ok) expect(outcome.result.end).toEqual(log.at(-1));
  } else expect(events).toEqual(log.slice(0, events.length));
  if (outcome.runId !== undefined) expect(outcome.runId).toBe(runId);
}

/** A case's play, or a failure saying it hung: a hang is a finding, not a test timeout. */
function withinCase<T>(play: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the case hung for ${CASE_MS} ms`)), CASE_MS);
  });
  return Promise.race([play, hung]).finally(() => clearTimeout(timer));
}

describe("the client over a failing network (fast-check)", () => {
  it("yields each run's log exactly, and a cancel ends the server's run, whatever the network drops", async () => {
    await fc.assert(
      fc.asyncProperty(timeline, async (t) => {
        current = t;
        made = [];
        await check(t, await withinCase(play(t)));
      }),
      httpFuzzOptions(),
    );
  }, 240_000);
});
