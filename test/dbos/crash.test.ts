import "@agent-core/plan-execute";
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { AgentEvent, AgentMessage, ToolResultMessage } from "@agent-core/core";
import { DurableRunClient, EventStore } from "@agent-core/dbos";
import { assertEventProtocol } from "@agent-core/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { whileLocked } from "./harness.js";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// A worker process is killed (SIGKILL) in the middle of a durable run; another one launches and
// the run goes on there. Real PostgreSQL (a throwaway cluster), real processes, DBOS recovery.

const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));
let postgres: ThrowawayPostgres;
let databaseUrl: string;
let pool: pg.Pool;

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = postgres.url("agent_core_test");
  await postgres.createDatabase("agent_core_test");
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  // Made by the workers too; made here first so the test can watch it from the start.
  await new EventStore(pool).createTable();
}, 60_000);

afterAll(async () => {
  await pool?.end();
  postgres?.stop();
});

function worker(...args: string[]): { process: ChildProcess; output: Promise<string> } {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", WORKER, ...args],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => (stdout += chunk));
  child.stderr?.on("data", (chunk) => (stderr += chunk));
  const output = new Promise<string>((resolve, reject) =>
    child.on("exit", (code, signal) =>
      code === 0 || signal === "SIGKILL"
        ? resolve(stdout)
        : reject(new Error(`worker exited ${code}: ${stderr}`)),
    ),
  );
  return { process: child, output };
}

async function events(runId: string): Promise<AgentEvent[]> {
  const { rows } = await pool.query("SELECT event FROM agent_core_events WHERE run_id = $1 ORDER BY seq", [
    runId,
  ]);
  return rows.map((row) => row.event);
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function toolRuns(runId: string): Promise<Record<string, number>> {
  const { rows } = await pool.query(
    "SELECT tool_call_id, count(*)::int AS n FROM tool_runs WHERE run_id = $1 GROUP BY tool_call_id",
    [runId],
  );
  return Object.fromEntries(rows.map((row) => [row.tool_call_id, row.n]));
}

/** The worker's result: its last line (DBOS logs its own lines before it). */
function lastLine(stdout: string) {
  return JSON.parse(stdout.trim().split("\n").at(-1) as string);
}

/** The history without what differs between two runs of the same script: times and the run id. */
function comparable(messages: AgentMessage[]): unknown {
  return JSON.parse(JSON.stringify(messages, (key, value) => (key === "timestamp" ? undefined : value)));
}

describe.each(["sequential", "parallel"])("a durable run killed mid-run (%s tools)", (execution) => {
  it("resumes in another process: recorded tools never run again, the events go on, the history is whole", async () => {
    const runId = `crash-${execution}`;
    const first = worker("start", databaseUrl, runId, execution);
    // Killed once the first tool call's result is stored: the others are queued or running.
    await until(
      async () =>
        (await events(runId)).some((event) => event.type === "tool_result" && event.toolCallId === "c1"),
      "the first tool result",
    );
    first.process.kill("SIGKILL");
    await first.output;
    const before = await events(runId);
    const finishedBefore = before.flatMap((event) =>
      event.type === "tool_result" ? [event.toolCallId] : [],
    );
    expect(before.at(-1)?.type).not.toBe("agent_end");

    const resumed = lastLine(await worker("resume", databaseUrl, runId, execution).output);
    expect(resumed.stopReason).toBe("completed");
    expect(resumed.text).toBe("3, 7 and 11.");

    // A call whose result was recorded ran once; one running at the kill ran again (at least once).
    const runs = await toolRuns(runId);
    for (const id of finishedBefore) expect(runs[id], id).toBe(1);
    expect(Object.keys(runs).sort()).toEqual(["c1", "c2", "c3"]);
    for (const n of Object.values(runs)) expect(n).toBeLessThanOrEqual(2);

    // The log goes on from the kill: seq 0, 1, 2, … once each, the protocol kept, agent_end last.
    const log = await events(runId);
    assertEventProtocol(log);
    expect(log.slice(0, before.length)).toEqual(before);
    expect(log.filter((event) => event.type === "agent_end")).toHaveLength(1);

    // The same history as a run nobody interrupted.
    const whole = lastLine(await worker("whole", databaseUrl, `${runId}-whole`, execution).output);
    expect(comparable(resumed.messages)).toEqual(comparable(whole.messages));
    expect(await toolRuns(`${runId}-whole`)).toEqual({ c1: 1, c2: 1, c3: 1 });
  }, 90_000);
});

describe("a durable run killed while its model streams", () => {
  it("calls the model again on resume: the log goes on without a gap or a repeat, the history is whole", async () => {
    const runId = "crash-stream";
    const first = worker("start", databaseUrl, runId, "stream");
    // The answer's first half is stored; its second half comes a second later.
    await until(
      async () => (await events(runId)).some((event) => event.type === "text_delta"),
      "the answer's first text",
    );
    first.process.kill("SIGKILL");
    await first.output;
    const before = await events(runId);
    expect(before.at(-1)?.type).toBe("text_delta");

    const resumed = lastLine(await worker("resume", databaseUrl, runId, "stream").output);
    expect(resumed.stopReason).toBe("completed");
    expect(resumed.text).toBe("3, 7 and 11.");
    // Every tool call was recorded before the stream began: none ran again.
    expect(await toolRuns(runId)).toEqual({ c1: 1, c2: 1, c3: 1 });
    const log = await events(runId);
    assertEventProtocol(log);
    expect(log.slice(0, before.length)).toEqual(before);
    const text = log.flatMap((event) => (event.type === "text_delta" ? [event.text] : [])).join("");
    expect(text).toBe("3, 7 and 11.");
    const whole = lastLine(await worker("whole", databaseUrl, `${runId}-whole`, "stream").output);
    expect(comparable(resumed.messages)).toEqual(comparable(whole.messages));
  }, 90_000);
});

describe("a durable plan-execute run that waits for an approval", () => {
  it("goes on with its plan in another worker: the wave, then the step that reads its result, no new plan", async () => {
    const runId = "planning";
    const first = worker("start", databaseUrl, runId, "plans");
    await until(
      async () => (await events(runId)).some((event) => event.type === "agent_end"),
      "the run to wait for the approval",
    );
    const waiting = (await events(runId)).at(-1);
    expect(waiting).toMatchObject({ stopReason: "awaiting_approval" });
    const { toolCallId } =
      (waiting as { pendingApprovals: { toolCallId: string }[] }).pendingApprovals[0] ?? {};
    first.process.kill("SIGKILL");
    await first.output;

    const second = worker("resume", databaseUrl, runId, "plans");
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      await client.answer(runId, { kind: "approval", toolCallId: toolCallId as string, approved: true });
      const result = lastLine(await second.output);
      expect(result).toMatchObject({
        stopReason: "completed",
        text: "Planned and added.",
        runIds: [runId, `${runId}.2`],
      });
      const resumed = await events(`${runId}.2`);
      assertEventProtocol(resumed);
      expect(resumed.filter((event) => event.type === "plan_created")).toEqual([]);
      const ends = resumed.filter((event) => event.type === "plan_step_end");
      expect(ends.map((event) => (event as { result?: unknown }).result)).toEqual([3, 13]);
      // Each sum ran once, in the run the approval resumed.
      expect(Object.values(await toolRuns(`${runId}.2`))).toEqual([1, 1]);
      expect(await toolRuns(runId)).toEqual({});
    } finally {
      await client.close();
    }
  }, 90_000);
});

describe("a durable run that waits for a client tool, then an approval", () => {
  it("waits as a durable message across a crash: another worker takes the answers and finishes it", async () => {
    const runId = "waiting";
    const ended = async (id: string, stopReason: string) =>
      (await events(id)).some((event) => event.type === "agent_end" && event.stopReason === stopReason);
    const first = worker("start", databaseUrl, runId, "waits");
    await until(() => ended(runId, "awaiting_client_tool"), "the run to wait for the client tool");
    const waiting = (await events(runId)).at(-1);
    expect(waiting).toMatchObject({
      pendingClientTools: [{ toolCallId: "r1", toolName: "read_page", args: { selector: "h1" } }],
    });
    first.process.kill("SIGKILL");
    await first.output;

    const second = worker("resume", databaseUrl, runId, "waits");
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      await client.answer(runId, { kind: "tool-result", toolCallId: "r1", outcome: { result: "Welcome" } });
      await until(() => ended(`${runId}.2`, "awaiting_approval"), "the run to wait for the approval");
      await client.answer(runId, { kind: "approval", toolCallId: "c1", approved: true });
      const result = lastLine(await second.output);
      expect(result).toMatchObject({
        stopReason: "completed",
        text: "Read it and added.",
        runIds: [runId, `${runId}.2`, `${runId}.3`],
      });
      for (const id of result.runIds) assertEventProtocol(await events(id));
      // The sum ran once, in the run the approval resumed (its idempotency key names that run).
      expect([await toolRuns(runId), await toolRuns(`${runId}.2`), await toolRuns(`${runId}.3`)]).toEqual([
        {},
        {},
        { c1: 1 },
      ]);
      const toolResults = (result.messages as AgentMessage[]).filter(
        (m): m is ToolResultMessage => m.role === "toolResult",
      );
      expect(toolResults.map((m) => [m.toolCallId, m.status, m.content])).toEqual([
        ["r1", "ok", "Welcome"],
        ["c1", "ok", "3"],
      ]);
    } finally {
      await client.close();
    }
  }, 90_000);
});

describe("a durable run cancelled by the process that runs it, which dies right after", () => {
  it("ends aborted when recovered: the cancel was stored before the run took it, and recorded where it took it", async () => {
    const runId = "self-cancelled";
    const first = worker("start", databaseUrl, runId, "self-cancel");
    let exited = false;
    void first.output.then(() => {
      exited = true;
    });
    // (The worker makes the table it counts tool calls in.)
    await until(
      async () => (await toolRuns(runId).catch(() => ({}) as Record<string, number>)).k1 === 1,
      "the tool to start",
    );
    // While this lock is held no message can be stored: the cancel's message waits, as if the
    // process that sent it died before it was stored (here it is the worker, killed when its run
    // ends).
    const waitingForLock = async () =>
      (
        await pool.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
      ).rows[0].n > 0;
    await whileLocked(databaseUrl, "dbos.notifications", async () => {
      await pool.query("CREATE TABLE IF NOT EXISTS cancel_gate (open boolean)");
      await pool.query("INSERT INTO cancel_gate VALUES (true)");
      await until(waitingForLock, "the cancel's message to wait for the lock");
      // A cancel whose NOTIFY went out before its message was stored is taken now, and the
      // worker dies at its run's end: its message is then never stored.
      await until(async () => exited, "the worker to die", 2000).catch(() => {});
      if (exited)
        await pool.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        );
    });
    await first.output;
    const before = await events(runId);
    expect(before.some((event) => event.type === "agent_end")).toBe(false);

    const resumed = lastLine(await worker("resume", databaseUrl, runId, "self-cancel").output);
    expect(resumed).toMatchObject({ stopReason: "aborted", text: "" });
    expect(await toolRuns(runId)).toEqual({ k1: 1 });
    const log = await events(runId);
    assertEventProtocol(log);
    expect(log.slice(0, before.length)).toEqual(before);
    expect(log.filter((event) => event.type === "agent_end")).toEqual([
      expect.objectContaining({ stopReason: "aborted" }),
    ]);
    expect(log.find((event) => event.type === "tool_result")).toMatchObject({
      toolCallId: "k1",
      status: "aborted",
    });
    expect(log.some((event) => event.type === "text_delta")).toBe(false);
  }, 90_000);
});

describe("a run resumed by a process with another orchestrator version", () => {
  it("fails clearly instead of taking another path through the recorded steps", async () => {
    const runId = "versioned";
    const first = worker("start", databaseUrl, runId, "sequential");
    await until(
      async () => (await events(runId)).some((event) => event.type === "tool_result"),
      "a tool result",
    );
    first.process.kill("SIGKILL");
    await first.output;
    const resumed = lastLine(await worker("resume", databaseUrl, runId, "v2").output);
    expect(resumed.failed).toBe(
      'Durable run "versioned" failed: This run started with orchestrator agentic@1; this process has agentic@2, which could take another path through its recorded steps, so the run ends here. Keep workers with agentic@1 until their runs end (see docs/durable-runs.md, "Upgrading").',
    );
    // Its log is ended as a failed run's (the call it left open gets its result), so nobody
    // following it waits forever.
    const log = await events(runId);
    assertEventProtocol(log);
    expect(log.slice(-2)).toEqual([
      expect.objectContaining({ type: "error", code: "orchestrator_version" }),
      expect.objectContaining({ type: "agent_end", stopReason: "error" }),
    ]);
  }, 60_000);
});

describe("several workers on one database", () => {
  it("spread the runs of the queue between them, and a client that runs none follows every run", async () => {
    const workers = [worker("work", databaseUrl, "-", "sequential", "worker-a")];
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      const runIds = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          client.start("adder", "Add 1+2, 3+4 and 5+6.", { runId: `queued-${i}` }),
        ),
      );
      // The second worker launches while the first runs queued runs. Under its own executor id it
      // leaves them alone; under the same id it would recover them as a dead worker's and run their
      // tool calls again (this test counted 20 calls then).
      await until(async () => {
        const { rows } = await pool.query(
          "SELECT count(*)::int AS calls FROM tool_runs WHERE run_id LIKE 'queued-%'",
        );
        return rows[0].calls > 0;
      }, "the first worker running a queued run");
      workers.push(worker("work", databaseUrl, "-", "sequential", "worker-b"));
      // The queued runs' tool calls wait at a gate, so the first worker cannot run them all
      // before the second one is up, however slow its start: opened once both run some.
      await until(async () => {
        const { rows } = await pool.query(
          "SELECT count(DISTINCT pid)::int AS workers FROM tool_runs WHERE run_id LIKE 'queued-%'",
        );
        return rows[0].workers === 2;
      }, "the second worker running a queued run");
      await pool.query("INSERT INTO gate VALUES (true)");
      const results = await Promise.all(runIds.map((runId) => client.result(runId)));
      expect(results.map((result) => result.stopReason)).toEqual(Array(6).fill("completed"));
      const { rows } = await pool.query(
        "SELECT count(DISTINCT pid)::int AS workers, count(*)::int AS calls FROM tool_runs WHERE run_id LIKE 'queued-%'",
      );
      expect(rows[0]).toEqual({ workers: 2, calls: 18 });
      for (const runId of runIds) assertEventProtocol(await events(runId));
    } finally {
      await client.close();
      for (const { process } of workers) process.kill("SIGKILL");
      await Promise.all(workers.map(({ output }) => output));
    }
  }, 90_000);
});

describe("a durable run whose worker dies after its workflow's last receive", () => {
  it("goes on with a follow-up sent before the next worker ends the workflow: no message is left unread", async () => {
    const runId = "after-last-receive";
    // While this lock is held the workflow cannot close its mailbox, the last thing it does: it
    // has received its messages for the last time, and waits there.
    const lock = new pg.Client({ connectionString: databaseUrl });
    await lock.connect();
    await lock.query("SELECT pg_advisory_lock(hashtext($1))", [`agent-core.mailbox:${runId}`]);
    const first = worker("start", databaseUrl, runId, "sequential");
    try {
      await until(
        async () =>
          (
            await pool.query(
              "SELECT 1 FROM dbos.operation_outputs WHERE workflow_uuid = $1 AND function_name = 'DBOS.recv'",
              [runId],
            )
          ).rowCount === 1 &&
          (await pool.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"))
            .rowCount === 1,
        "the workflow's last receive, and its close waiting for the lock",
      );
      first.process.kill("SIGKILL");
      await first.output;
    } finally {
      await lock.end();
    }
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      // The mailbox is still open: the follow-up is taken.
      await client.followUp(runId, "One more thing.");
      const resumed = lastLine(await worker("resume", databaseUrl, runId, "sequential").output);
      // The next worker replays the receive as recorded (nothing), finds the follow-up waiting
      // as it closes the mailbox, and runs it.
      expect(resumed).toMatchObject({ stopReason: "completed", runIds: [runId, `${runId}.2`] });
      const users = resumed.messages.filter((message: AgentMessage) => message.role === "user");
      expect(users.map((message: AgentMessage) => (message as { content: unknown }).content)).toEqual([
        "Add 1+2, 3+4 and 5+6.",
        "One more thing.",
      ]);
      const { rows } = await pool.query(
        "SELECT message FROM dbos.notifications WHERE destination_uuid = $1 AND NOT consumed",
        [runId],
      );
      expect(rows).toEqual([]);
      await expect(client.followUp(runId, "Too late.")).rejects.toMatchObject({ code: "run_ended" });
      expect(await toolRuns(runId)).toEqual({ c1: 1, c2: 1, c3: 1 });
      assertEventProtocol(await events(runId));
      assertEventProtocol(await events(`${runId}.2`));
    } finally {
      await client.close();
    }
  }, 60_000);
});
