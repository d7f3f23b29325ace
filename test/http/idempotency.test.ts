import { AgentClient } from "@agent-core/client";
import { Agent } from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { headers, NdjsonReader, ndjsonEvents, post, startServer } from "./harness.js";

// POST /runs with an Idempotency-Key (docs/http.md, "Retrying a start"): a repeat of a start gets
// the first one's run, never a second one, on the in-process backend.

/** A server whose agents answer "Hi." after `delayMs`; `made()` counts the agents it made. */
async function counting(options: Parameters<typeof startServer>[1] = {}) {
  let made = 0;
  const harness = await startServer(() => ({ provider: scriptedModel([[script.text("Hi.")]]) }), {
    agent: async () => {
      made++;
      // Still being started while a repeat comes in.
      await new Promise((resolve) => setTimeout(resolve, 20));
      return new Agent({ provider: scriptedModel([[script.text("Hi.")]]) });
    },
    ...options,
  });
  return { ...harness, made: () => made };
}

const keyed = (key: string) => ({ "idempotency-key": key });

/** Status, run id and whole body (events, or the error) of an answer. */
async function answer(response: Response) {
  const text = await response.text();
  return {
    status: response.status,
    runId: response.headers.get("x-run-id"),
    events: response.status === 200 ? ndjsonEvents(text) : undefined,
    error: response.status === 200 ? undefined : JSON.parse(text).error,
  };
}

describe("POST /runs with an Idempotency-Key", () => {
  it("answers a repeat with the first start's run from its first event, also while that start is under way: the agent runs once", async () => {
    const { url, made } = await counting();
    const [first, during] = await Promise.all([
      post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-1")).then(answer),
      post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-1")).then(answer),
    ]);
    const after = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-1")));
    expect(first.status).toBe(200);
    expect(first.events?.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    for (const repeat of [during, after]) {
      expect(repeat.status).toBe(200);
      expect(repeat.runId).toBe(first.runId);
      expect(repeat.events).toEqual(first.events);
    }
    expect(made()).toBe(1);
    // Without a key, each start is a run of its own.
    const unkeyed = await answer(await post(`${url}/runs`, { prompt: "hi" }));
    expect(unkeyed.runId).not.toBe(first.runId);
    expect(made()).toBe(2);
  });

  it("refuses the key with another body (409 idempotency-key-reused) and starts nothing", async () => {
    const { url, made } = await counting();
    const first = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-2")));
    for (const body of [{ prompt: "hello" }, { prompt: "hi", outliveStream: true }]) {
      const reused = await answer(await post(`${url}/runs`, body, "alice", keyed("k-2")));
      expect([reused.status, reused.error?.code]).toEqual([409, "idempotency-key-reused"]);
    }
    expect(made()).toBe(1);
    const again = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-2")));
    expect(again.runId).toBe(first.runId);
  });

  it("keeps each user's keys to that user: another user's same key starts a run of its own", async () => {
    const { url, made } = await counting();
    const alice = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("shared")));
    const bob = await answer(await post(`${url}/runs`, { prompt: "hello" }, "bob", keyed("shared")));
    expect([alice.status, bob.status]).toEqual([200, 200]);
    expect(bob.runId).not.toBe(alice.runId);
    const aliceAgain = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("shared")));
    expect(aliceAgain.runId).toBe(alice.runId);
    expect(made()).toBe(2);
  });

  it("takes 1 to 255 visible ASCII characters, and answers any other key 400 invalid-idempotency-key before reading the body", async () => {
    const { url, made } = await counting();
    for (const key of ["", "a b", "x".repeat(256), "caf\u00e9"]) {
      const refused = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed(key)));
      expect([refused.status, refused.error?.code], JSON.stringify(key)).toEqual([
        400,
        "invalid-idempotency-key",
      ]);
    }
    const bodyless = await fetch(`${url}/runs`, {
      method: "POST",
      headers: { "x-user": "alice", "content-type": "text/plain", "idempotency-key": "a b" },
      body: "not json",
    });
    expect(bodyless.status).toBe(400);
    expect(made()).toBe(0);
    for (const key of ["!", "~".repeat(255), '"8e03978e-40d5-43e8-bc93-6894a57f9324"']) {
      const taken = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed(key)));
      expect(taken.status, key).toBe(200);
    }
  });

  it("remembers a key for idempotencyKeyTtlMs from its first start, then starts a new run with it", async () => {
    let now = 1_000_000;
    const { url, made } = await counting({ idempotencyKeyTtlMs: 60_000, now: () => now });
    const first = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-3")));
    now += 59_999;
    const repeat = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-3")));
    expect(repeat.runId).toBe(first.runId);
    now += 1;
    const later = await answer(await post(`${url}/runs`, { prompt: "hello" }, "alice", keyed("k-3")));
    expect(later.status).toBe(200);
    expect(later.runId).not.toBe(first.runId);
    expect(made()).toBe(2);
  });

  it("answers a repeat as a re-attach would once the run is forgotten (404 run-not-found), and frees the key of a start that failed", async () => {
    let failing = true;
    let made = 0;
    const { url, server } = await startServer(() => ({ provider: scriptedModel([]) }), {
      retainEndedMs: 0,
      agent: () => {
        made++;
        if (failing) throw new Error("no agent today");
        return new Agent({ provider: scriptedModel([[script.text("Hi.")]]) });
      },
    });
    const failed = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-4")));
    expect(failed.status).toBe(500);
    failing = false;
    const started = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-4")));
    expect(started.status).toBe(200);
    while (server.runCount > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const forgotten = await answer(await post(`${url}/runs`, { prompt: "hi" }, "alice", keyed("k-4")));
    expect([forgotten.status, forgotten.error?.code]).toEqual([404, "run-not-found"]);
    expect(made).toBe(2);
  });
});

describe("a client's cancel of a start whose answer was lost", () => {
  it.each([
    ["", 2],
    [", again when that post is refused once", 3],
  ])(
    "posts the start again with its key, learns the run from the repeat, and the server's run is cancelled%s",
    async (_, expectedPosts) => {
      let made = 0;
      const { url } = await startServer(() => ({ provider: scriptedModel([[script.hang()]]) }), {
        agent: () => {
          made++;
          return new Agent({ provider: scriptedModel([[script.hang()]]) });
        },
      });
      // The first POST /runs reaches the server, which starts the run; its answer is lost on the way back.
      let startedRun: string | null = null;
      let posts = 0;
      const losingFirstAnswer: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const start = init?.method === "POST" && String(input).endsWith("/runs");
        // The cancel's post of the start again meets a network that refuses it once.
        if (start && expectedPosts === 3 && posts === 1 && ++posts === 2)
          throw new TypeError("fetch failed: connection refused");
        if (start && ++posts === 1) {
          startedRun = response.headers.get("x-run-id");
          await response.body?.cancel();
          throw new TypeError("fetch failed: the connection was reset");
        }
        return response;
      };
      const client = new AgentClient({
        baseUrl: url,
        headers: { "x-user": "alice" },
        fetch: losingFirstAnswer,
        reconnect: { attempts: 3, delayMs: 60_000 },
      });
      const run = client.start("hi", { outliveStream: true });
      await expect.poll(() => startedRun).not.toBeNull();
      await run.cancel();
      await expect(run.result()).rejects.toMatchObject({ code: "cancelled" });
      expect(posts).toBe(expectedPosts);
      expect(made).toBe(1);
      const events = await fetch(`${url}/runs/${startedRun}/events`, { headers: headers() });
      const end = await new NdjsonReader(events).until((event) => event.type === "agent_end");
      expect(end).toMatchObject({ type: "agent_end", runId: startedRun, stopReason: "aborted" });
    },
  );
});
