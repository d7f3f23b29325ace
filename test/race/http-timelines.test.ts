import "@agent-core/agentic";
import { Agent, type AgentEvent } from "@agent-core/core";
import { createAgentServer, serveNode } from "@agent-core/http";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers, ndjsonEvents, post, readPage } from "../http/harness.js";
import { httpFuzzOptions } from "./property.js";

// Generated timelines of a client against a real server on loopback: client calls answered once,
// twice, with a conflicting payload, with an error, or never; the stream dropped and re-attached at
// any event, NDJSON or SSE; a cancel at any event. After every run: the events the client saw
// across its connections are the run's log exactly (each seq once, in order), the log keeps the
// protocol, every client call has one result that matches what the client did, and every refused
// callback was refused the way docs/http.md says. Seeded like the race suite (FUZZ_SEED, FUZZ_RUNS:
// a quarter of its cases, each is a whole HTTP exchange).

type Behaviour = "answer" | "answer-twice" | "conflict" | "error" | "never";

interface Timeline {
  calls: Behaviour[];
  parallel: boolean;
  sse: boolean;
  /** Drop the stream after this many events and re-attach from the last seq. */
  dropAfter: number | undefined;
  /** Cancel the run after this many events. */
  cancelAfter: number | undefined;
  answerDelayMs: number;
}

const timeline: fc.Arbitrary<Timeline> = fc.record({
  calls: fc.array(fc.constantFrom<Behaviour>("answer", "answer-twice", "conflict", "error", "never"), {
    minLength: 1,
    maxLength: 3,
  }),
  parallel: fc.boolean(),
  sse: fc.boolean(),
  dropAfter: fc.option(fc.integer({ min: 1, max: 14 }), { nil: undefined }),
  cancelAfter: fc.option(fc.integer({ min: 1, max: 14 }), { freq: 3, nil: undefined }),
  answerDelayMs: fc.integer({ min: 0, max: 15 }),
});

const CLIENT_TOOL_MS = 150;
let current: Timeline;
let url: string;
let close: () => Promise<void>;

beforeAll(async () => {
  const server = createAgentServer({
    agent: () => {
      const calls = current.calls.map((_, i) =>
        script.toolCall("read_page", { selector: `#s${i}` }, { id: `c${i}` }),
      );
      const replies = current.parallel ? [calls] : calls.map((call) => [call]);
      return new Agent({
        provider: scriptedModel([...replies, [script.text("done")]]),
        tools: [readPage],
        toolExecution: current.parallel ? "parallel" : "sequential",
      });
    },
    authorize: (request) => {
      const user = request.headers.get("x-user");
      return user ? { userId: user } : undefined;
    },
    hookSecret: "timeline-secret-timeline-secret-timeline",
    clientToolTimeoutMs: CLIENT_TOOL_MS,
    detachGraceMs: 10_000,
    rateLimits: { start: false, callback: false },
  });
  const node = await serveNode(server.fetch);
  url = node.url;
  close = async () => {
    server.close();
    await node.close();
  };
});
afterAll(() => close());

/** Reads NDJSON or SSE from a response, one event at a time. */
function eventsOf(response: Response, sse: boolean) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const separator = sse ? "\n\n" : "\n";
  return {
    async next(): Promise<Record<string, unknown> | undefined> {
      for (;;) {
        const end = buffer.indexOf(separator);
        if (end >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + separator.length);
          const json = sse
            ? frame
                .split("\n")
                .find((line) => line.startsWith("data: "))
                ?.slice(6)
            : frame;
          const event = JSON.parse(json as string);
          if (event.type !== "heartbeat") return event;
          continue;
        }
        const { done, value } = await reader.read();
        if (done) return undefined;
        buffer += decoder.decode(value, { stream: true });
      }
    },
    cancel: () => reader.cancel(),
  };
}

interface Outcome {
  seen: Record<string, unknown>[];
  posts: Map<string, string[]>;
  cancelled: boolean;
}

async function play(t: Timeline): Promise<Outcome> {
  const accept: Record<string, string> = t.sse ? { accept: "text/event-stream" } : {};
  let stream = eventsOf(await post(`${url}/runs`, { prompt: "go" }, "alice", accept), t.sse);
  const seen: Record<string, unknown>[] = [];
  const posts = new Map<string, string[]>();
  const pending: Promise<void>[] = [];
  let cancelled = false;
  let clientCalls = 0;
  /** The status, with the error code when there is one ("410 token-expired"). */
  const sendResult = async (runId: unknown, body: Record<string, unknown>) => {
    const response = await post(`${url}/runs/${runId}/tool-results`, body);
    const text = await response.text();
    return text.startsWith("{")
      ? `${response.status} ${JSON.parse(text).error.code}`
      : String(response.status);
  };
  for (let event = await stream.next(); event !== undefined; event = await stream.next()) {
    seen.push(event);
    if (event.type === "tool_call" && event.execution === "client") {
      const behaviour = t.calls[clientCalls++] as Behaviour;
      const id = event.toolCallId as string;
      const body = { toolCallId: id, token: event.hookToken, result: `answer ${id}` };
      pending.push(
        (async () => {
          await new Promise((resolve) => setTimeout(resolve, t.answerDelayMs));
          const statuses: string[] = [];
          // Without a token (a replay of a call that has ended) the call takes no result.
          if (behaviour === "never" || event.hookToken === undefined) return;
          if (behaviour === "error")
            statuses.push(await sendResult(event.runId, { ...body, result: undefined, error: "broke" }));
          else statuses.push(await sendResult(event.runId, body));
          if (behaviour === "answer-twice") statuses.push(await sendResult(event.runId, body));
          if (behaviour === "conflict")
            statuses.push(await sendResult(event.runId, { ...body, result: "other" }));
          posts.set(id, statuses);
        })(),
      );
    }
    if (event.type === "agent_end") break;
    if (seen.length === t.cancelAfter) {
      cancelled = true;
      await post(`${url}/runs/${event.runId}/cancel`, {});
    }
    if (seen.length === t.dropAfter) {
      await stream.cancel();
      stream = eventsOf(
        await fetch(`${url}/runs/${event.runId}/events?after=${event.seq}`, {
          headers: { ...headers(), ...accept },
        }),
        t.sse,
      );
    }
  }
  await Promise.all(pending);
  return { seen, posts, cancelled };
}

function check(t: Timeline, outcome: Outcome, log: AgentEvent[]): void {
  // What the client saw across its connections is the log, exactly, but for the hook token of a
  // client call that has its result: a later read of the log gets its tool_call without it.
  const answered = new Set(log.flatMap((event) => (event.type === "tool_result" ? [event.toolCallId] : [])));
  const asLoggedNow = outcome.seen.map((event) => {
    if (event.type !== "tool_call" || !answered.has(event.toolCallId as string)) return event;
    const { hookToken: _, ...tokenless } = event;
    return tokenless;
  });
  expect(outcome.seen.map((event) => event.seq)).toEqual(log.map((_, seq) => seq));
  expect(asLoggedNow).toEqual(log);
  assertEventProtocol(log);
  const end = log.at(-1);
  if (!outcome.cancelled) expect(end).toMatchObject({ type: "agent_end", stopReason: "completed" });
  const results = new Map(
    log.flatMap((event) => (event.type === "tool_result" ? [[event.toolCallId, event] as const] : [])),
  );
  const announced = log.filter((event) => event.type === "tool_call" && event.execution === "client");
  announced.forEach((call, index) => {
    if (call.type !== "tool_call") return;
    const behaviour = t.calls[index] as Behaviour;
    const result = results.get(call.toolCallId);
    const statuses = outcome.posts.get(call.toolCallId) ?? [];
    // A result the run took is the first one posted; a refused post never changed it. A token
    // lives as long as its call may wait (CLIENT_TOOL_MS), so a late second post finds it expired.
    if (statuses[0] === "204") {
      if (behaviour === "error") expect(result).toMatchObject({ status: "error", error: "broke" });
      else expect(result).toMatchObject({ status: "ok", result: `answer ${call.toolCallId}` });
      if (behaviour === "answer-twice") expect(["204", "410 token-expired"]).toContain(statuses[1]);
      if (behaviour === "conflict") expect(["409 token-used", "410 token-expired"]).toContain(statuses[1]);
    } else if (statuses[0] !== undefined) {
      // Too late: the call had ended (timeout, or the run was cancelled) before the post.
      expect(["410 token-expired", "410 call-ended"]).toContain(statuses[0]);
      expect(["timeout", "aborted"]).toContain(result?.status);
    }
    if (behaviour === "never" && !outcome.cancelled) {
      expect(result?.status).toBe("timeout");
      expect(log.some((event) => event.type === "error" && event.toolCallId === call.toolCallId)).toBe(true);
    }
  });
}

describe("HTTP timelines (fast-check)", () => {
  it("keeps every stream exact and every client call answered once, whatever the client does", async () => {
    await fc.assert(
      fc.asyncProperty(timeline, async (t) => {
        current = t;
        const outcome = await play(t);
        const runId = outcome.seen[0]?.runId;
        const full = await (await fetch(`${url}/runs/${runId}/events`, { headers: headers() })).text();
        const log = ndjsonEvents(full);
        check(t, outcome, log);
      }),
      httpFuzzOptions(),
    );
  }, 120_000);
});
