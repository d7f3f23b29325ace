import { AgentClient, type ClientEvent } from "@agent-core/client";
import type { DurableRunControl, DurableRuntime } from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import { Agent, AgentError, defineTool } from "agent-core";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { headers, NdjsonReader, post, readPage } from "../http/harness.js";
import { type DurableServer, DurableWorker, durableServer } from "./harness.js";
import type { ThrowawayPostgres } from "./throwaway-postgres.js";

// The HTTP server on the durable backend while its database is away: every route answers 503
// `database-unreachable` (not 500 `internal`), a cancel is accepted only once it is stored, a tool
// result whose delivery failed is delivered when posted again, and a run's queued messages are
// counted in the database. Two servers (as two processes would) on one runtime, in this process.

/** How long the runtime's calls wait on a database that does not answer, here. */
const DATABASE_TIMEOUT_MS = 2000;
const UNREACHABLE = {
  code: "database-unreachable",
  message: "The server cannot reach its database; try again shortly.",
};
const worker = new DurableWorker();
let postgres: ThrowawayPostgres;
let databaseUrl: string;
let runtime: DurableRuntime;
/** The test's own connections: a lock holder, and a reader of DBOS's messages. */
let pool: pg.Pool;
const servers: DurableServer[] = [];
/** Two server processes' worth, each with its own backend; at most 2 messages queued per run. */
let a: string;
let b: string;

/** How many `greet` agents the runtime made: one per run it executed. */
let greetings = 0;
/** What the `hold` agent's model was prompted with, every call, as JSON. */
const prompts: string[] = [];
/** The `hold` tool waits for this (or its signal); `arm()` makes a new one for the next run. */
let release: () => void = () => {};
let released = Promise.resolve();
const arm = () => {
  released = new Promise<void>((resolve) => {
    release = resolve;
  });
};
const hold = defineTool({
  name: "hold",
  description: "Holds until the test releases it",
  inputSchema: z.object({}),
  execute: (_, { signal }) =>
    new Promise<string>((resolve, reject) => {
      void released.then(() => resolve("held"));
      signal.addEventListener("abort", () => reject(signal.reason));
    }),
});

/** Calls `tool` first, then answers. */
function model(tool: string, args: Record<string, unknown>, answer: string) {
  return scriptedModel(
    Array.from({ length: 10 }, () => (options: { prompt: { role: string }[] }) => {
      prompts.push(JSON.stringify(options.prompt));
      return options.prompt.some((message) => message.role === "assistant")
        ? [script.text(answer)]
        : [script.toolCall(tool, args, { id: `${tool}-1` })];
    }),
  );
}

async function serve(runs: DurableRunControl = runtime): Promise<string> {
  const server = await durableServer(
    {
      databaseUrl,
      runs,
      // The document names the agent: `hold`, else `page`.
      agentName: (request) => request.documentId ?? "page",
      pollMs: 100,
    },
    {
      authorize: (request) => {
        const user = request.headers.get("x-user");
        return user === null ? undefined : { userId: user };
      },
      maxQueuedMessages: 2,
    },
  );
  servers.push(server);
  return server.url;
}

beforeAll(async () => {
  ({ postgres, databaseUrl, pool, runtime } = await worker.start("agent_core_http_outage", {
    databaseTimeoutMs: DATABASE_TIMEOUT_MS,
    agents: {
      page: () =>
        new Agent({ provider: model("read_page", { selector: "h1" }, "Read it."), tools: [readPage] }),
      hold: () => new Agent({ provider: model("hold", {}, "Held."), tools: [hold] }),
      greet: () => {
        greetings++;
        return new Agent({ provider: scriptedModel([[script.text("Hello.")]]) });
      },
    },
  }));
  a = await serve();
  b = await serve();
}, 60_000);

afterAll(async () => {
  release();
  for (const server of servers) await server.close();
  await worker.stop();
});

/** A `page` run started through server A, suspended for its client tool: its id and the result to post. */
async function suspendedRun(): Promise<{ runId: string; result: Record<string, unknown> }> {
  const reader = new NdjsonReader(await post(`${a}/runs`, { prompt: "Read the title." }));
  const end = await reader.until((event) => event.type === "agent_end");
  expect(end).toMatchObject({ stopReason: "awaiting_client_tool" });
  const [call] = end.pendingClientTools as { toolCallId: string; hookToken: string }[];
  if (call === undefined) throw new Error("no pending call");
  await reader.cancel();
  return {
    runId: end.runId as string,
    result: { toolCallId: call.toolCallId, token: call.hookToken, result: "Agent Core" },
  };
}

/** A `hold` run started through server A, in its tool call now. */
async function heldRun(): Promise<string> {
  arm();
  const reader = new NdjsonReader(await post(`${a}/runs`, { prompt: "Hold.", documentId: "hold" }));
  const call = await reader.until((event) => event.type === "tool_call");
  await reader.cancel();
  return call.runId as string;
}

/** Status, `Retry-After` and body (none: undefined) of an answer. */
async function answer(response: Response): Promise<[number, string | null, unknown]> {
  const body = await response.text();
  return [response.status, response.headers.get("retry-after"), body === "" ? undefined : JSON.parse(body)];
}

/** The run's events through server A, to its `agent_end`. */
async function eventsOf(runId: string): Promise<Record<string, unknown>[]> {
  const reader = new NdjsonReader(await fetch(`${a}/runs/${runId}/events`, { headers: headers() }));
  await reader.until((event) => event.type === "agent_end");
  return reader.seen;
}

describe("the durable backend over HTTP while the database is down", () => {
  it("answers every route 503 database-unreachable with Retry-After, and takes the same requests once it is back", async () => {
    const suspended = await suspendedRun();
    const held = await heldRun();
    postgres.halt();
    let answers: [string, [number, string | null, unknown]][];
    try {
      const requests: [string, () => Promise<Response>][] = [
        ["POST /runs", () => post(`${a}/runs`, { prompt: "Read the title." })],
        // Server B did not start it: it looks the run up in the database.
        [
          "GET /runs/:runId/events on another server",
          () => fetch(`${b}/runs/${suspended.runId}/events`, { headers: headers() }),
        ],
        [
          "POST /runs/:runId/tool-results",
          () => post(`${a}/runs/${suspended.runId}/tool-results`, suspended.result),
        ],
        ["POST /runs/:runId/steer", () => post(`${a}/runs/${held}/steer`, { message: "Hurry." })],
        ["POST /runs/:runId/follow-up", () => post(`${a}/runs/${held}/follow-up`, { message: "Then stop." })],
      ];
      answers = await Promise.all(
        requests.map(async ([name, request]) => [name, await answer(await request())] as const),
      );
    } finally {
      postgres.restart();
    }
    expect(Object.fromEntries(answers)).toEqual(
      Object.fromEntries(answers.map(([name]) => [name, [503, "5", { error: UNREACHABLE }]])),
    );

    // Back: the result posted again is taken (the 503 was no answer to keep), and resumes the run.
    const taken = await post(`${a}/runs/${suspended.runId}/tool-results`, suspended.result);
    expect([taken.status, await taken.json()]).toEqual([202, { runId: `${suspended.runId}.2` }]);
    expect((await eventsOf(`${suspended.runId}.2`)).at(-1)).toMatchObject({
      type: "agent_end",
      stopReason: "completed",
    });
    expect((await post(`${a}/runs/${held}/steer`, { message: "Hurry." })).status).toBe(202);
    release();
    expect(await runtime.retrieve(held).result()).toMatchObject({ stopReason: "completed" });
  }, 30_000);

  it("answers a cancel 202 once it is stored, and 503 after databaseTimeoutMs while the database is down", async () => {
    const held = await heldRun();
    postgres.halt();
    const halted = Date.now();
    let refused: Response;
    try {
      refused = await post(`${a}/runs/${held}/cancel`, {});
    } finally {
      postgres.restart();
    }
    const waited = Date.now() - halted;
    expect(await answer(refused)).toEqual([503, "5", { error: UNREACHABLE }]);
    // It waited for the database, one ask a second, as the runtime's calls do.
    expect(waited).toBeGreaterThanOrEqual(DATABASE_TIMEOUT_MS);
    expect(waited).toBeLessThan(DATABASE_TIMEOUT_MS + 3000);

    const cancelled = await heldRun();
    expect((await post(`${a}/runs/${cancelled}/cancel`, {})).status).toBe(202);
    // Stored by the time of the 202: a worker that dies now leaves a run the next one ends.
    const { rows } = await pool.query(
      `SELECT 1 FROM dbos.notifications WHERE destination_uuid = $1 AND message LIKE '%"queue":"cancel"%'`,
      [cancelled],
    );
    expect(rows).toHaveLength(1);
    expect(await runtime.retrieve(cancelled).result()).toMatchObject({ stopReason: "aborted" });
    // The one refused while the database was down, posted again: taken (whether or not the first
    // went on once the database was back).
    expect((await post(`${a}/runs/${held}/cancel`, {})).status).toBe(202);
    expect(await runtime.retrieve(held).result()).toMatchObject({ stopReason: "aborted" });
  }, 30_000);
});

describe("a tool result whose delivery to the run fails after the ledger took it", () => {
  /**
   * Posts `body` while the answer's connection is cut: the post waits for a lock on
   * `agent_core_answers` after the ledger recorded the token, and its connection is terminated.
   */
  async function postCut(runId: string, body: unknown): Promise<Response> {
    const blocker = await pool.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE agent_core_answers IN ACCESS EXCLUSIVE MODE");
      const posted = post(`${a}/runs/${runId}/tool-results`, body);
      const waiting =
        "SELECT pid FROM pg_locks WHERE NOT granted AND relation = 'agent_core_answers'::regclass";
      while ((await blocker.query(waiting)).rowCount === 0);
      await blocker.query(`SELECT pg_terminate_backend(pid) FROM (${waiting}) AS waiting`);
      await blocker.query("COMMIT");
      return await posted;
    } finally {
      blocker.release();
    }
  }

  it("answers its retry 503 while the delivery fails, never 204, and delivers it once it can", async () => {
    const suspended = await suspendedRun();
    expect(await answer(await postCut(suspended.runId, suspended.result))).toEqual([
      503,
      "5",
      { error: UNREACHABLE },
    ]);
    // The ledger has the token now: the retry is a repeat, whose delivery fails as well.
    expect(await answer(await postCut(suspended.runId, suspended.result))).toEqual([
      503,
      "5",
      { error: UNREACHABLE },
    ]);
    const { rows } = await pool.query("SELECT 1 FROM agent_core_answers WHERE workflow_id = $1", [
      suspended.runId,
    ]);
    expect(rows).toEqual([]);

    const taken = await post(`${a}/runs/${suspended.runId}/tool-results`, suspended.result);
    expect([taken.status, await taken.json()]).toEqual([202, { runId: `${suspended.runId}.2` }]);
    expect((await eventsOf(`${suspended.runId}.2`)).at(-1)).toMatchObject({
      type: "agent_end",
      stopReason: "completed",
    });
  }, 20_000);
});

describe("steering and follow-ups queued for a durable run", () => {
  it("are refused past maxQueuedMessages not yet taken (429 queue-full), counted across server processes", async () => {
    const held = await heldRun();
    prompts.length = 0;
    expect((await post(`${a}/runs/${held}/steer`, { message: "one" })).status).toBe(202);
    expect((await post(`${b}/runs/${held}/follow-up`, { message: "two" })).status).toBe(202);
    for (const [server, route] of [
      [a, "steer"],
      [b, "follow-up"],
    ])
      expect(await answer(await post(`${server}/runs/${held}/${route}`, { message: "three" }))).toEqual([
        429,
        "1",
        {
          error: {
            code: "queue-full",
            message: `Run "${held}" has 2 messages waiting to be taken (maxQueuedMessages); send this once it took some.`,
          },
        },
      ]);
    release();
    expect(await runtime.retrieve(held).result()).toMatchObject({ stopReason: "completed" });
    const seen = prompts.join("\n");
    for (const message of ["one", "two"]) expect(seen).toContain(message);
    expect(seen).not.toContain("three");
  }, 20_000);
});

describe("a start with an Idempotency-Key on the durable backend", () => {
  const start = (server: string, key: string, user = "alice", prompt = "Greet me.") =>
    post(`${server}/runs`, { prompt, documentId: "greet" }, user, { "idempotency-key": key });
  /** The run's id and its events, to the end of the stream. */
  const streamed = async (response: Response) => {
    expect(response.status).toBe(200);
    return { runId: response.headers.get("x-run-id"), events: await new NdjsonReader(response).rest() };
  };

  it("is answered with the first start's run by any server process on the database; another body 409; another user's key another run", async () => {
    const before = greetings;
    const first = await streamed(await start(a, "k-shared"));
    expect(first.events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    // Server B never saw the first start: it finds the key's run in the database.
    expect(await streamed(await start(b, "k-shared"))).toEqual(first);
    expect(await answer(await start(b, "k-shared", "alice", "Greet me twice."))).toEqual([
      409,
      null,
      { error: { code: "idempotency-key-reused", message: expect.any(String) } },
    ]);
    const bobs = await streamed(await start(b, "k-shared", "bob"));
    expect(bobs.runId).not.toBe(first.runId);
    expect(greetings - before).toBe(2);
  }, 20_000);

  it("is safe to retry after a 503 that came once the run's owner was recorded: the retry starts the run, once", async () => {
    /** Where the next start fails as a database that went away would: before its workflow was written, or after. */
    let failNext: "before" | "after" | undefined;
    const unreachable = () => new AgentError("database_unreachable", "Cannot reach the database: gone");
    const flaky: DurableRunControl = {
      answer: (...args) => runtime.answer(...args),
      steer: (...args) => runtime.steer(...args),
      followUp: (...args) => runtime.followUp(...args),
      cancel: (...args) => runtime.cancel(...args),
      async start(agentName, prompt, options) {
        const failing = failNext;
        failNext = undefined;
        if (failing === "before") throw unreachable();
        await runtime.start(agentName, prompt, options);
        if (failing === "after") throw unreachable();
      },
    };
    const c = await serve(flaky);
    for (const when of ["before", "after"] as const) {
      const before = greetings;
      failNext = when;
      expect(await answer(await start(c, `k-${when}`)), when).toEqual([503, "5", { error: UNREACHABLE }]);
      // Retried through another server process: it finds the recorded run, and starts it.
      const retried = await streamed(await start(a, `k-${when}`));
      expect(retried.events.at(-1), when).toMatchObject({ type: "agent_end", stopReason: "completed" });
      expect(await streamed(await start(c, `k-${when}`)), when).toEqual(retried);
      expect(greetings - before, when).toBe(1);
    }
  }, 20_000);
});

describe("@agent-core/client on the durable backend while the database is down", () => {
  it("posts a start and a tool result again after their 503's Retry-After (the run starts once), and rejects a steer with ClientError 503 database-unreachable", async () => {
    const tracked: ClientEvent[] = [];
    const posted: number[] = [];
    const started: number[] = [];
    const client = (tools = {}) =>
      new AgentClient({
        baseUrl: a,
        headers: { "x-user": "alice" },
        tools,
        // Each start's and tool result's answer, as the client gets it; the database is back
        // after the first 503.
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          const answers = String(input).endsWith("/tool-results")
            ? posted
            : String(input).endsWith("/runs")
              ? started
              : undefined;
          answers?.push(response.status);
          if (answers !== undefined && response.status === 503) postgres.restart();
          return response;
        },
      });
    const unreachable = { code: "http", status: 503, serverCode: "database-unreachable" };

    arm();
    const held = client().start("Hold.", { documentId: "hold" });
    for await (const event of held) if (event.type === "tool_call") break;
    postgres.halt();
    try {
      await expect(held.steer("Hurry.")).rejects.toMatchObject(unreachable);
    } finally {
      postgres.restart();
    }

    // Started while the database is down: answered 503, posted again after the Retry-After (with
    // the same Idempotency-Key), by when the database is back.
    started.length = 0;
    const before = greetings;
    postgres.halt();
    const greeted = client().start("Greet me.", { documentId: "greet" });
    expect(await greeted.result()).toMatchObject({ stopReason: "completed" });
    expect(started).toEqual([503, 200]);
    expect(greetings - before).toBe(1);

    // The tool runs while the database is down: its result's post is answered 503, then posted
    // again after the Retry-After, by when the database is back.
    const paged = client({
      read_page: () => {
        postgres.halt();
        return "Agent Core";
      },
    }).start("Read the title.");
    for await (const event of paged) tracked.push(event);
    expect(posted).toEqual([503, 202]);
    expect(tracked.filter((event) => event.type === "client_error")).toEqual([]);
    expect(await paged.result()).toMatchObject({ stopReason: "completed" });
    release();
    expect(await held.result()).toMatchObject({ stopReason: "completed" });
  }, 30_000);
});
