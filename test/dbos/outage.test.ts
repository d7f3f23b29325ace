import { createServer, type Socket, connect as tcpConnect } from "node:net";
import type { AgentEvent } from "@agent-core/core";
import {
  DurableRunClient,
  type DurableRuntime,
  durableBackend,
  EventFollower,
  EventStore,
} from "@agent-core/dbos";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { Agent, defineTool } from "agent-core";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { DurableWorker } from "./harness.js";
import type { ThrowawayPostgres } from "./throwaway-postgres.js";
import { untilEvent } from "./until-event.js";

// The database goes away under durable runs: it restarts (`pg_ctl stop -m immediate`, then start)
// while a run is in its model call or a tool call, drops the connection an answer is sent on, or
// stays down while runs and callers wait. And many runs and answers at once share the runtime's
// few connections. One runtime, in this process, on a throwaway cluster of its own.

/** How long callers wait on a database that does not answer, here. */
const DATABASE_TIMEOUT_MS = 2000;
const worker = new DurableWorker();
let postgres: ThrowawayPostgres;
let databaseUrl: string;
let runtime: DurableRuntime;
/** A pool of the test's own: it hears a dropped connection, as the runtime's must. */
let pool: pg.Pool;
/** Errors nothing handled, in this process: each would have ended a real one. */
const unhandled: unknown[] = [];
const collect = (error: unknown) => unhandled.push(error);

/** A point a call waits at until the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let reached!: () => void;
  const waiting = new Promise<void>((resolve) => {
    reached = resolve;
  });
  return {
    /** Resolves once the call waits at the gate. */
    waiting,
    open,
    pass: async () => {
      reached();
      await opened;
    },
  };
}

/** The gate of the test in progress, and what ran in it. */
let current = gate();
let toolRuns = 0;
let modelCalls = 0;

const slow = defineTool({
  name: "slow",
  description: "Does something slow",
  inputSchema: z.object({}),
  execute: async () => {
    toolRuns++;
    await current.pass();
    return "done";
  },
});
const note = defineTool({
  name: "note",
  description: "Takes a note",
  inputSchema: z.object({ id: z.string() }),
  execute: ({ id }) => {
    toolRuns++;
    return `noted ${id}`;
  },
});

/**
 * Calls `tool` (twice at once with `calls: 2`), then answers: by turn, so a resumed or steered run
 * goes on. The call `gated` (0-based) waits at the gate before it streams.
 */
function model(tool: string, options: { gated?: number; calls?: number } = {}) {
  const calls = Array.from({ length: options.calls ?? 1 }, (_, i) =>
    script.toolCall(tool, { id: `n${i + 1}` }, { id: `n${i + 1}` }),
  );
  const byTurn = (prompt: { role: string }[]) =>
    prompt.some((message) => message.role === "assistant") ? [script.text("All ", "done.")] : calls;
  const scripted = scriptedModel(Array.from({ length: 10 }, () => (call) => byTurn(call.prompt)));
  const stream = scripted.doStream.bind(scripted);
  let index = 0;
  scripted.doStream = async (call) => {
    modelCalls++;
    if (index++ === options.gated) await current.pass();
    return stream(call);
  };
  return scripted;
}

beforeAll(async () => {
  process.on("uncaughtException", collect);
  process.on("unhandledRejection", collect);
  ({ postgres, databaseUrl, pool, runtime } = await worker.start("agent_core_outage", {
    databaseTimeoutMs: DATABASE_TIMEOUT_MS,
    agents: {
      "slow-model": () => new Agent({ provider: model("slow", { gated: 1 }), tools: [slow] }),
      "slow-tool": () => new Agent({ provider: model("slow"), tools: [slow] }),
      // Waits for the approval of two calls.
      approving: () =>
        new Agent({
          provider: model("note", { calls: 2 }),
          tools: [note],
          toolExecution: "parallel",
          beforeToolCall: () => ({ requireApproval: true }),
        }),
    },
  }));
}, 60_000);

afterEach(() => {
  const seen = unhandled.splice(0);
  current = gate();
  toolRuns = 0;
  modelCalls = 0;
  expect(seen).toEqual([]);
});

afterAll(async () => {
  await worker.stop();
  process.off("uncaughtException", collect);
  process.off("unhandledRejection", collect);
});

/** How `promise` settled (its error's code), or that it had not after `ms`. */
async function settled(promise: Promise<unknown>, ms: number): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`still waiting after ${ms} ms`), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => "resolved",
        (error: { code?: string; message?: string }) => error.code ?? `${error.message}`,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const approve = (toolCallId: string) => ({ kind: "approval", toolCallId, approved: true }) as const;

describe("a database that restarts while a durable run is in", () => {
  it.each([
    ["its model call", "slow-model"],
    ["a tool call", "slow-tool"],
  ])(
    "%s: the run goes on once it is back, nothing done again, its log whole and followed to its end",
    async (_, agent) => {
      const runId = `restarted-${agent}`;
      const follower = new EventFollower(new EventStore(pool), databaseUrl, { pollMs: 100 });
      const followed: AgentEvent[] = [];
      let ended!: () => void;
      const end = new Promise<void>((resolve) => {
        ended = resolve;
      });
      try {
        const run = await runtime.start(agent, "Do it.", { runId });
        follower.follow(runId, -1, (event) => {
          followed.push(event);
          if (event.type === "agent_end") ended();
        });
        await current.waiting;
        // Every connection drops; the call ends (the model streams its answer) while the database
        // is down, for 1.5 s: the outage itself, not a wait for something to happen.
        postgres.halt();
        current.open();
        await new Promise((resolve) => setTimeout(resolve, 1500));
        postgres.restart();

        const result = await run.result();
        expect(result).toMatchObject({ stopReason: "completed", text: "All done." });
        expect({ toolRuns, modelCalls }).toEqual({ toolRuns: 1, modelCalls: 2 });
        const log = await runtime.events(runId);
        assertEventProtocol(log);
        expect(log.map((event) => event.seq)).toEqual(log.map((_, seq) => seq));
        expect(log.map((event) => event.type)).toContain("text_delta");
        expect(await settled(end, 5000)).toBe("resolved");
        expect(followed).toEqual(log);
      } finally {
        await follower.close();
      }
    },
    20_000,
  );
});

describe("an EventFollower that begins while the database is down", () => {
  it("rejects its caughtUp, and follows the run once the database is back", async () => {
    const runId = "followed-from-down";
    const run = await runtime.start("approving", "Note it.", { runId });
    await untilEvent(runtime, runId, "agent_end", 10_000);
    // A pool with no connection yet: its first read is refused, none is dropped.
    const followerPool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    followerPool.on("error", () => {});
    const follower = new EventFollower(new EventStore(followerPool), databaseUrl, { pollMs: 100 });
    const followed: AgentEvent[] = [];
    let ended!: () => void;
    const end = new Promise<void>((resolve) => {
      ended = resolve;
    });
    try {
      postgres.halt();
      try {
        const { caughtUp } = follower.follow(runId, -1, (event) => {
          followed.push(event);
          if (event.type === "agent_end") ended();
        });
        await expect(caughtUp).rejects.toMatchObject({ code: "ECONNREFUSED" });
      } finally {
        postgres.restart();
      }
      expect(await settled(end, 5000)).toBe("resolved");
      expect(followed).toEqual(await runtime.events(runId));
    } finally {
      await follower.close();
      await followerPool.end();
    }
    await runtime.answer(runId, approve("n1"));
    await runtime.answer(runId, approve("n2"));
    expect((await run.result()).stopReason).toBe("completed");
  }, 20_000);
});

describe("a connection the database drops while the client checks it", () => {
  it("fails connect() with database_unreachable, and the process lives on", async () => {
    // Between the client and the database: it cuts the connection that asks `SELECT 1`.
    const { port } = new URL(databaseUrl);
    const sockets: Socket[] = [];
    const proxy = createServer((client) => {
      const server = tcpConnect(Number(port), "127.0.0.1");
      sockets.push(client, server);
      client.on("data", (chunk) => {
        if (chunk.includes("SELECT 1")) for (const socket of [client, server]) socket.destroy();
        else server.write(chunk);
      });
      server.pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const url = new URL(databaseUrl);
      url.port = String((proxy.address() as { port: number }).port);
      await expect(DurableRunClient.connect({ databaseUrl: url.href })).rejects.toMatchObject({
        code: "database_unreachable",
        message: "Cannot reach the database: Connection terminated unexpectedly",
      });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

describe("an answer whose connection the database drops while it is sent", () => {
  it("rejects with database_unreachable, and the process lives on", async () => {
    const runId = "dropped-answer";
    const run = await runtime.start("approving", "Note it.", { runId });
    await untilEvent(runtime, runId, "agent_end", 10_000);
    // DBOS's send waits behind a lock, while the answer holds its connection (and the answers' lock).
    const blocker = await pool.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE dbos.notifications IN EXCLUSIVE MODE");
      const answered = runtime.answer(runId, approve("n1"));
      // Once the send waits for the table, the connection holding the lock on the workflow's
      // answers (its key's low 32 bits) drops.
      const sending = async () =>
        (
          await blocker.query(
            "SELECT 1 FROM pg_locks WHERE NOT granted AND relation = 'dbos.notifications'::regclass",
          )
        ).rowCount === 1;
      while (!(await sending()));
      const { rowCount } = await blocker.query(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid::bigint = hashtext($1)::bigint & 4294967295",
        [`agent-core.answers:${runId}`],
      );
      expect(rowCount).toBe(1);
      // Observed before the lock goes: the answer may reject before the COMMIT's reply comes back.
      const outcome = settled(answered, 5000);
      await blocker.query("COMMIT");
      expect(await outcome).toBe("database_unreachable");
    } finally {
      blocker.release();
    }
    // The approval went out before its connection dropped (DBOS sent it): the other one ends the wait.
    await runtime.answer(runId, approve("n2"));
    expect((await run.result()).stopReason).toBe("completed");
    expect(toolRuns).toBe(2);
  }, 20_000);
});

describe("a database that stays down", () => {
  it("fails each waiting call with database_unreachable after databaseTimeoutMs, and the runs go on once it is back", async () => {
    const client = await DurableRunClient.connect({ databaseUrl, databaseTimeoutMs: DATABASE_TIMEOUT_MS });
    const backend = await durableBackend({ databaseUrl, runs: runtime, agentName: "approving" });
    try {
      const waiting = "down-waiting";
      const running = await runtime.start("slow-tool", "Do it.", { runId: "down-running" });
      await runtime.start("approving", "Note it.", { runId: waiting });
      await untilEvent(runtime, waiting, "agent_end", 10_000);
      // A refused answer: the client's connection for answers is open, and idle, when it drops.
      await expect(client.answer(waiting, approve("n9"))).rejects.toThrow('No tool call "n9"');
      const started = await backend.start(
        { userId: "u1", conversationId: undefined, documentId: undefined },
        "Note it.",
      );
      await current.waiting;

      postgres.halt();
      const halted = Date.now();
      const calls: Record<string, Promise<unknown>> = {
        "run.result()": running.result(),
        "retrieve().result()": runtime.retrieve(waiting).result(),
        "answer()": runtime.answer("down-nobody", approve("n1")),
        "steer()": runtime.steer("down-nobody", "Hurry."),
        "cancel()": runtime.cancel("down-nobody"),
        "start()": runtime.start("approving", "Note it.", { runId: "down-started" }),
        "events()": runtime.events("down-running"),
        "client.result()": client.result(waiting),
        "client.answer()": client.answer("down-nobody", approve("n1")),
        "client.cancel()": client.cancel("down-nobody"),
        "client.start()": client.start("approving", "Note it."),
        // Answered 503 over HTTP (test/dbos/http-outage.test.ts).
        "the HTTP backend's steer()": started.steer("Hurry.", 100),
      };
      const outcomes = await Promise.all(
        Object.entries(calls).map(async ([name, call]) => [name, await settled(call, 10_000)]),
      );
      const slowest = Date.now() - halted;
      expect(Object.fromEntries(outcomes)).toEqual(
        Object.fromEntries(
          Object.keys(calls).map((name) => [
            name,
            name.startsWith("the HTTP backend") ? "database-unreachable" : "database_unreachable",
          ]),
        ),
      );
      // One ask of the database a second, the first one a second after the calls began.
      expect(slowest).toBeGreaterThanOrEqual(DATABASE_TIMEOUT_MS);
      expect(slowest).toBeLessThan(DATABASE_TIMEOUT_MS + 3000);
      await expect(calls["cancel()"]).rejects.toThrow(
        `Cannot reach the database for ${DATABASE_TIMEOUT_MS} ms (databaseTimeoutMs): connect ECONNREFUSED`,
      );
      // A message is sent under a lock taken on the runtime's own connection, which fails at once.
      await expect(calls["steer()"]).rejects.toThrow(/^Cannot reach the database: /);

      // Back: the runs go on where they were, and take answers again.
      postgres.restart();
      current.open();
      expect(await runtime.retrieve("down-running").result()).toMatchObject({ stopReason: "completed" });
      await runtime.answer(waiting, approve("n1"));
      await client.answer(waiting, approve("n2"));
      expect(await client.result(waiting)).toMatchObject({ stopReason: "completed", text: "All done." });
      assertEventProtocol(await runtime.events("down-running"));
    } finally {
      postgres.restart();
      await backend.close();
      await client.close();
    }
  }, 30_000);
});

describe("many durable runs at once on the runtime's four connections and a client's one", () => {
  it("take every answer, sent twice from both at once: no run waits forever", async () => {
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      const runs = await Promise.all(
        Array.from({ length: 100 }, (_, i) => runtime.start("approving", "Note it.", { runId: `many-${i}` })),
      );
      // Sent as the runs start, and so before most of them wait: kept for their wait.
      await Promise.all(
        runs.flatMap(({ runId }) => [
          runtime.answer(runId, approve("n1")),
          client.answer(runId, approve("n2")),
          client.answer(runId, approve("n1")),
          runtime.answer(runId, approve("n2")),
        ]),
      );
      const results = await Promise.all(runs.map((run) => settled(run.result(), 15_000)));
      expect(results).toEqual(runs.map(() => "resolved"));
      expect(toolRuns).toBe(200);
    } finally {
      await client.close();
    }
  }, 30_000);
});
