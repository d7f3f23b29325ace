import { createServer, type Socket, connect as tcpConnect } from "node:net";
import type { AgentEvent } from "@agent-core/core";
import { DurableRunClient, DurableRuntime, EventFollower, EventStore } from "@agent-core/dbos";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { Agent, defineTool } from "agent-core";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// The database goes away under durable runs: it restarts (`pg_ctl stop -m immediate`, then start)
// while a run is in its model call or a tool call, or drops the connection a client checks it on.
// One runtime, in this process, on a throwaway cluster of its own.

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
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase("agent_core_outage");
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  pool.on("error", () => {});
  runtime = new DurableRuntime({
    databaseUrl,
    agents: {
      "slow-model": () => new Agent({ provider: model("slow", { gated: 1 }), tools: [slow] }),
      "slow-tool": () => new Agent({ provider: model("slow"), tools: [slow] }),
    },
  });
  await runtime.launch();
}, 60_000);

afterEach(() => {
  const seen = unhandled.splice(0);
  current = gate();
  toolRuns = 0;
  modelCalls = 0;
  expect(seen).toEqual([]);
});

afterAll(async () => {
  await runtime?.shutdown();
  await pool?.end();
  postgres?.stop();
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
