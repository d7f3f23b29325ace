import { connect, createServer, type Socket } from "node:net";
import type { AgentEvent } from "@agent-core/core";
import { EventFollower, EventStore } from "@agent-core/dbos";
import { assertEventProtocol } from "@agent-core/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// The durable event log against a throwaway PostgreSQL: what it stores of hostile events, how
// large a batch it writes, that the runs sharing one store (one per worker process) do not share
// a failure, and how its followers get their LISTEN connection.

let postgres: ThrowawayPostgres;
let pool: pg.Pool;

beforeAll(async () => {
  postgres = await startPostgres();
  pool = new pg.Pool({ connectionString: await postgres.createDatabase("agent_core_store"), max: 2 });
  await new EventStore(pool).createTable();
}, 60_000);

afterAll(async () => {
  await pool?.end();
  postgres?.stop();
});

/** A run's events: agent_start, the given text deltas, agent_end. */
function run(runId: string, texts: string[]): AgentEvent[] {
  const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  const metrics = { cycles: 0, toolCalls: {}, modelMs: 0, toolMs: 0, frameworkMs: 0, usage };
  return [
    { type: "agent_start" },
    ...texts.map((text) => ({ type: "text_delta", text, index: 0 })),
    { type: "agent_end", stopReason: "completed", usage, durationMs: 0, metrics },
  ].map((event, seq) => ({ ...event, runId, seq, ts: 0 }) as AgentEvent);
}

describe("the durable event log", () => {
  it("stores text that jsonb cannot hold (U+0000, a lone surrogate) as U+FFFD, and the rest as it is", async () => {
    const store = new EventStore(pool);
    const sink = store.sink();
    const texts = ["a\u0000b", "half \ud83d", "\ude00 half", "😀", "literally \\u0000", "\u0001"];
    for (const event of run("hostile", texts)) sink.publish(event);
    await store.flush(["hostile"]);
    const stored = await store.read("hostile");
    assertEventProtocol(stored);
    expect(stored.flatMap((event) => (event.type === "text_delta" ? [event.text] : []))).toEqual([
      "a\ufffdb",
      "half \ufffd",
      "\ufffd half",
      "😀",
      "literally \\u0000",
      "\u0001",
    ]);
  });

  it("a write that fails for one run fails no other run of the store, then or later", async () => {
    const store = new EventStore(pool);
    const sink = store.sink();
    // In one batch with the good run's events: a seq the table refuses.
    for (const event of run("good", ["fine"])) sink.publish(event);
    sink.publish({ ...run("bad", [])[0], seq: 0.5 } as AgentEvent);
    await expect(store.flush(["bad"])).rejects.toThrow(/integer/);
    await store.flush(["good"]);
    expect(await store.read("good")).toHaveLength(3);
    for (const event of run("later", ["also fine"])) sink.publish(event);
    await store.flush(["later"]);
    expect(await store.read("later")).toHaveLength(3);
  });

  it("writes a batch larger than one statement's parameters allow (21,845 events)", async () => {
    const store = new EventStore(pool);
    const sink = store.sink();
    const events = run(
      "long",
      Array.from({ length: 22_000 }, (_, i) => `w${i} `),
    );
    // Published at once, as a fast stream is while the previous batch is written.
    for (const event of events) sink.publish(event);
    await store.flush(["long"]);
    const stored = await store.read("long");
    expect(stored.map((event) => event.seq)).toEqual(events.map((_, seq) => seq));
  });
});

describe("following a run's events", () => {
  it("a LISTEN connection that could not be made stops no follower, and is made for the next one", async () => {
    // A door to the database that refuses its first connection (the database was away then).
    const target = new URL(postgres.url("agent_core_store"));
    let refused = 0;
    const sockets = new Set<Socket>();
    const door = createServer((client) => {
      sockets.add(client);
      if (refused++ === 0) return client.destroy();
      const server = connect(Number(target.port), target.hostname);
      sockets.add(server);
      client.pipe(server).pipe(client);
      client.on("error", () => server.destroy());
      server.on("error", () => client.destroy());
    });
    await new Promise<void>((resolve) => door.listen(0, "127.0.0.1", resolve));
    const { port } = door.address() as { port: number };
    const store = new EventStore(pool);
    const follower = new EventFollower(store, `postgres://postgres@127.0.0.1:${port}/agent_core_store`);
    try {
      const sink = store.sink();
      for (const event of run("followed", ["here"])) sink.publish(event);
      await store.flush(["followed"]);
      // Its LISTEN refused, the first follower reads the run all the same.
      const first: AgentEvent[] = [];
      await follower.follow("followed", -1, (event) => first.push(event)).caughtUp;
      expect(first.map((event) => event.type)).toEqual(["agent_start", "text_delta", "agent_end"]);
      const seen: AgentEvent[] = [];
      await follower.follow("followed", -1, (event) => seen.push(event)).caughtUp;
      expect(seen).toEqual(first);
      expect(refused).toBe(2);
      const { rows } = await pool.query(
        "SELECT 1 FROM pg_stat_activity WHERE query = 'LISTEN agent_core_events'",
      );
      expect(rows).toHaveLength(1);
    } finally {
      await follower.close();
      for (const socket of sockets) socket.destroy();
      door.close();
    }
  });
});
