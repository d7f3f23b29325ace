import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  type DurableAnswer,
  DurableRunClient,
  type DurableRuntime,
  RunEndedError,
  RunFailedError,
  UnknownRunError,
} from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import { Agent, ClientToolError, defineTool, InvalidConfigError } from "agent-core";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { approvingNotes, DurableWorker, durableServer, gateTool } from "./harness.js";
import type { ThrowawayPostgres } from "./throwaway-postgres.js";
import { untilEvent } from "./until-event.js";

// What the runtime and a client refuse, as docs/durable-runs.md says: answers no run could take
// (refused before anything is sent or recorded), and agents the runtime does not have (the names
// of an object's inherited properties too), at start and in the worker that takes a queued run.
// And a client on a database where no worker has launched yet: what it refuses is what it refuses
// anywhere, and the runs it starts wait for the first worker.

const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));

const worker = new DurableWorker();
const notes = approvingNotes();
/** An agent that calls a note that needs approval (n1), then a gate (g1) that waits until the test opens it. */
const gated = (() => {
  const { gate, reached, open } = gateTool();
  const tools = [
    defineTool({
      name: "note",
      description: "Takes a note",
      inputSchema: z.object({}),
      needsApproval: true,
      execute: () => "noted",
    }),
    gate,
  ];
  const agent = () =>
    new Agent({
      provider: scriptedModel([
        [script.toolCall("note", {}, { id: "n1" })],
        [script.toolCall("gate", {}, { id: "g1" })],
        [script.text("Done.")],
      ]),
      tools,
    });
  return { agent, reached, open };
})();
let postgres: ThrowawayPostgres;
let databaseUrl: string;
let pool: pg.Pool;
let runtime: DurableRuntime;
let client: DurableRunClient;

beforeAll(async () => {
  // A worker of the queue a client enqueues on.
  ({ postgres, databaseUrl, pool, runtime } = await worker.start("agent_core_refusals", {
    queue: {},
    agents: { approving: notes.agent, gated: gated.agent },
  }));
  client = await DurableRunClient.connect({ databaseUrl });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await worker.stop();
});

/** Rejects with an error of that class and message. */
async function refused(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => Error,
  message: string,
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(type);
  expect((error as Error).message).toBe(message);
}

describe("an answer no run could take", () => {
  it("is refused by the runtime and a client alike, and nothing is sent or recorded: a later denial is taken", async () => {
    const runId = "badly-shaped";
    const run = await runtime.start("approving", "Note it.", { runId });
    await untilEvent(runtime, runId, "agent_end", 20_000);
    const kind = `An answer's kind must be "approval" or "tool-result"`;
    const toolCallId = "An answer's toolCallId must be a non-empty string";
    const cases: [unknown, typeof InvalidConfigError | typeof ClientToolError, string][] = [
      [{ kind: "approve", toolCallId: "n1", approved: false }, InvalidConfigError, `${kind}, got "approve".`],
      [{ kind: "cancel" }, InvalidConfigError, `${kind}, got "cancel".`],
      [{ toolCallId: "n1", approved: true }, InvalidConfigError, `${kind}, got undefined.`],
      [
        { kind: "approval", toolCallId: "n1", approved: "false" },
        InvalidConfigError,
        `An approval's approved must be true or false, got "false".`,
      ],
      [
        { kind: "approval", toolCallId: "n1" },
        InvalidConfigError,
        "An approval's approved must be true or false, got undefined.",
      ],
      [
        { kind: "approval", toolCallId: "n1", approved: 0 },
        InvalidConfigError,
        "An approval's approved must be true or false, got 0.",
      ],
      [{ kind: "approval", toolCallId: "", approved: true }, InvalidConfigError, `${toolCallId}, got "".`],
      [{ kind: "approval", toolCallId: 1, approved: true }, InvalidConfigError, `${toolCallId}, got 1.`],
      [
        { kind: "tool-result", toolCallId: ["n1"], outcome: { result: 1 } },
        ClientToolError,
        `${toolCallId}, got an array.`,
      ],
      [
        { kind: "approval", toolCallId: "n1", approved: true, sentAt: "now" },
        InvalidConfigError,
        `An answer's sentAt must be a finite number (ms since the epoch), got "now".`,
      ],
      [null, InvalidConfigError, "An answer must be an object, got null."],
      ["approve", InvalidConfigError, `An answer must be an object, got "approve".`],
    ];
    for (const [answer, type, message] of cases) {
      await refused(runtime.answer(runId, answer as DurableAnswer), type, message);
      await refused(client.answer(runId, answer as DurableAnswer), type, message);
    }
    const recorded = await pool.query("SELECT 1 FROM agent_core_answers WHERE workflow_id = $1", [runId]);
    expect(recorded.rowCount).toBe(0);
    const sent = await pool.query("SELECT 1 FROM dbos.notifications WHERE destination_uuid = $1", [runId]);
    expect(sent.rowCount).toBe(0);
    // The call is still undecided: a denial is taken, and the run goes on without running the tool.
    await client.answer(runId, { kind: "approval", toolCallId: "n1", approved: false, reason: "No." });
    expect((await run.result()).stopReason).toBe("completed");
    expect(notes.runs()).toBe(0);
  }, 60_000);
});

describe("a run id no run can have", () => {
  it("is answered by every entry point of the runtime and a client as an id no workflow has (PostgreSQL cannot store it), and refused when it is no non-empty string: InvalidConfigError, never the database's error", async () => {
    // A run that waits, whose id is what PostgreSQL makes of a lone surrogate: "…\ud800" must not reach it.
    const waiting = "surrogate-\ufffd";
    await runtime.start("approving", "Note it.", { runId: waiting });
    await untilEvent(runtime, waiting, "agent_end", 20_000);
    const approval: DurableAnswer = { kind: "approval", toolCallId: "n1", approved: true };
    // Each entry point that takes a run id, and how it answers an id no workflow has.
    const entryPoints: [(runId: string) => Promise<unknown>, "unknown" | "ended" | "no events"][] = [
      [(runId) => runtime.retrieve(runId).result(), "unknown"],
      [(runId) => runtime.events(runId), "no events"],
      [(runId) => runtime.answer(runId, approval), "ended"],
      [(runId) => runtime.steer(runId, "Stop."), "ended"],
      [(runId) => runtime.followUp(runId, "Then stop."), "ended"],
      [(runId) => runtime.cancel(runId), "unknown"],
      [(runId) => client.result(runId), "unknown"],
      [(runId) => client.answer(runId, approval), "ended"],
      [(runId) => client.steer(runId, "Stop."), "ended"],
      [(runId) => client.followUp(runId, "Then stop."), "ended"],
      [(runId) => client.cancel(runId), "unknown"],
    ];
    for (const runId of ["a\u0000b", "surrogate-\ud800"])
      for (const [call, answer] of entryPoints) {
        if (answer === "no events") expect(await call(runId)).toEqual([]);
        else if (answer === "unknown")
          await refused(call(runId), UnknownRunError, `No durable run "${runId}".`);
        else
          await refused(
            call(runId),
            RunEndedError,
            `Durable run "${runId}" has ended (or does not exist): it takes no more messages.`,
          );
      }
    const notRunIds: [unknown, string][] = [
      [42, "42"],
      [undefined, "undefined"],
      [null, "null"],
      ["", '""'],
      [{ runId: "order-42" }, "an object"],
    ];
    for (const [runId, shown] of notRunIds)
      for (const [call] of entryPoints)
        await refused(
          call(runId as string),
          InvalidConfigError,
          `runId must be a non-empty string, got ${shown}.`,
        );
    // Nothing reached the run that waits: it takes its approval, and ends as cancelled.
    const sent = await pool.query("SELECT 1 FROM dbos.notifications WHERE destination_uuid = $1", [waiting]);
    expect(sent.rowCount).toBe(0);
    await runtime.cancel(waiting);
    expect((await runtime.retrieve(waiting).result()).stopReason).toBe("aborted");
  }, 60_000);
});

describe("a run id PostgreSQL cannot store, over HTTP", () => {
  it("is a run that does not exist (404 run-not-found), as an id no workflow has, not the server's failure", async () => {
    const server = await durableServer({ databaseUrl, runs: runtime, agentName: "approving" });
    try {
      for (const [method, path] of [
        ["GET", "events"],
        ["POST", "cancel"],
      ]) {
        const response = await fetch(`${server.url}/runs/a%00b/${path}`, { method });
        expect(response.status).toBe(404);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe("run-not-found");
      }
    } finally {
      await server.close();
    }
  }, 30_000);
});

describe("an answer to a call that has its result", () => {
  it("is refused while a later run of the workflow goes on, not kept for a wait that would drop it", async () => {
    const runId = "answered-then-running";
    const run = await runtime.start("gated", "Note it.", { runId });
    await untilEvent(runtime, runId, "agent_end", 20_000);
    await runtime.answer(runId, { kind: "approval", toolCallId: "n1", approved: true });
    // The run the approval resumes (.2) notes n1, then holds at its gate.
    await gated.reached;
    await untilEvent(runtime, `${runId}.2`, "tool_result", 20_000);
    const noResultWaits = 'No client tool call "n1" is waiting for a result.';
    const answer: DurableAnswer = { kind: "tool-result", toolCallId: "n1", outcome: { result: "noted" } };
    await refused(runtime.answer(runId, answer), ClientToolError, noResultWaits);
    await refused(client.answer(runId, answer), ClientToolError, noResultWaits);
    gated.open();
    expect(await run.result()).toMatchObject({ runIds: [runId, `${runId}.2`], stopReason: "completed" });
  }, 60_000);
});

describe("an agent name that is an inherited property of an object", () => {
  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])(
    "%s is refused by start() as a name the runtime does not have, and a worker fails a queued run of it with invalid_config",
    async (name) => {
      await refused(
        runtime.start(name, "Hi."),
        InvalidConfigError,
        `No agent "${name}"; registered: approving, gated.`,
      );
      // Enqueued by a client, which knows no agents: the worker that takes it has none of that name.
      const runId = await client.start(name, "Hi.", { runId: `inherited-${name}` });
      const error = await client.result(runId).then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(RunFailedError);
      expect((error as RunFailedError).failure).toEqual({
        code: "invalid_config",
        message: `No agent "${name}" in this process.`,
      });
    },
    30_000,
  );
});

describe("an agent name that is not a string", () => {
  it("is refused by a runtime's and a client's start() before anything is enqueued: no agent has it", async () => {
    const before = (await pool.query("SELECT count(*)::int AS n FROM dbos.workflow_status")).rows[0].n;
    for (const start of [
      (name: unknown) => runtime.start(name as string, "Hi."),
      (name: unknown) => client.start(name as string, "Hi."),
    ])
      for (const [name, shown] of [
        [42, "42"],
        [null, "null"],
      ] as const)
        await refused(start(name), InvalidConfigError, `An agent's name must be a string, got ${shown}.`);
    expect((await pool.query("SELECT count(*)::int AS n FROM dbos.workflow_status")).rows[0].n).toBe(before);
  });
});

describe("a database where no worker has launched yet", () => {
  it("a client refuses ids no workflow has as anywhere, and the runs it starts (over HTTP too) wait for the first worker, which runs them", async () => {
    const freshUrl = await postgres.createDatabase("agent_core_fresh");
    const fresh = await DurableRunClient.connect({ databaseUrl: freshUrl });
    const server = await durableServer({ databaseUrl: freshUrl, runs: fresh, agentName: "adder" });
    let worker: ChildProcess | undefined;
    try {
      await refused(fresh.result("nobody"), UnknownRunError, 'No durable run "nobody".');
      await refused(fresh.cancel("nobody"), UnknownRunError, 'No durable run "nobody".');
      const ended = 'Durable run "nobody" has ended (or does not exist): it takes no more messages.';
      await refused(
        fresh.answer("nobody", { kind: "approval", toolCallId: "n1", approved: true }),
        RunEndedError,
        ended,
      );
      await refused(fresh.steer("nobody", "Hi."), RunEndedError, ended);
      await refused(fresh.followUp("nobody", "Hi."), RunEndedError, ended);
      const response = await fetch(`${server.url}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "Add them." }),
      });
      expect(response.status).toBe(200);
      const streamed = response.text();
      const runId = await fresh.start("adder", "Add them.", { runId: "before-any-worker" });
      expect(runId).toBe("before-any-worker");
      // The first worker launches, and takes both from the queue.
      worker = spawn(
        process.execPath,
        ["--import", "tsx", "--conditions=@agent-core/source", WORKER, "work", freshUrl, "-", "sequential"],
        { stdio: "ignore" },
      );
      expect(await fresh.result(runId)).toMatchObject({ stopReason: "completed", text: "3, 7 and 11." });
      const lines = (await streamed).trim().split("\n");
      expect(JSON.parse(lines.at(-1) as string)).toMatchObject({
        type: "agent_end",
        stopReason: "completed",
      });
    } finally {
      worker?.kill("SIGKILL");
      await server.close();
      await fresh.close();
    }
  }, 90_000);

  it("a client's answer to a run in the queue is checked as anywhere: not yet waiting, it is kept for the wait", async () => {
    const fresh = await DurableRunClient.connect({
      databaseUrl: await postgres.createDatabase("agent_core_fresh_answer"),
    });
    try {
      await fresh.start("approving", "Note it.", { runId: "answered-in-the-queue" });
      await fresh.answer("answered-in-the-queue", { kind: "approval", toolCallId: "n1", approved: true });
      await refused(
        fresh.answer("answered-in-the-queue", { kind: "approval", toolCallId: "n1", approved: false }),
        InvalidConfigError,
        'Tool call "n1" was already approved.',
      );
    } finally {
      await fresh.close();
    }
  }, 30_000);

  it("a run, once cancel() resolved, takes no answer, steering or follow-up (nothing would read them), also while it waits in the queue: RunEndedError", async () => {
    const fresh = await DurableRunClient.connect({
      databaseUrl: await postgres.createDatabase("agent_core_fresh_cancel"),
    });
    try {
      await fresh.start("approving", "Note it.", { runId: "cancelled-in-the-queue" });
      await fresh.cancel("cancelled-in-the-queue");
      const ended =
        'Durable run "cancelled-in-the-queue" has ended (or does not exist): it takes no more messages.';
      await refused(
        fresh.answer("cancelled-in-the-queue", { kind: "approval", toolCallId: "n1", approved: true }),
        RunEndedError,
        ended,
      );
      await refused(fresh.steer("cancelled-in-the-queue", "Hi."), RunEndedError, ended);
      await refused(fresh.followUp("cancelled-in-the-queue", "Hi."), RunEndedError, ended);
      // Cancelled again: nothing changes.
      await fresh.cancel("cancelled-in-the-queue");
    } finally {
      await fresh.close();
    }
  }, 30_000);

  it("a client whose role may not create DBOS's tables there is refused at connect(): no_worker_launched", async () => {
    const url = new URL(await postgres.createDatabase("agent_core_fresh_reader"));
    await pool.query("CREATE ROLE reader LOGIN");
    url.username = "reader";
    await expect(DurableRunClient.connect({ databaseUrl: url.href })).rejects.toMatchObject({
      code: "no_worker_launched",
      message:
        "No worker has launched on this database yet, and DBOS's system tables could not be created: permission denied for database agent_core_fresh_reader",
    });
  }, 30_000);
});
