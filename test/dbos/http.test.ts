import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { AgentEvent } from "@agent-core/core";
import { EventStore } from "@agent-core/dbos";
import { assertEventProtocol } from "@agent-core/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// The HTTP server on the durable runtime, across processes: two processes, each a worker of the
// run queue and an HTTP server on one PostgreSQL. A client reads any run's events and posts its
// client tool results through either; a worker is killed mid-run, restarted, and the client,
// re-attached through the other server, sees the run go on with no gap and no duplicate.

const WORKER = fileURLToPath(new URL("./http-worker.ts", import.meta.url));
let postgres: ThrowawayPostgres;
let databaseUrl: string;
let pool: pg.Pool;
const processes: ChildProcess[] = [];

interface Server {
  url: string;
  process: ChildProcess;
  exited: Promise<void>;
}

function startServer(executorId: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", WORKER, databaseUrl, executorId],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  processes.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    let stdout = "";
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
      const url = /http:\/\/[\w.:[\]]+/.exec(stdout)?.[0];
      if (url) resolve({ url, process: child, exited });
    });
    child.on("exit", (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
}

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = postgres.url("agent_core_http");
  await postgres.createDatabase("agent_core_http");
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  await new EventStore(pool).createTable();
}, 60_000);

afterAll(async () => {
  for (const child of processes) child.kill("SIGKILL");
  await pool?.end();
  postgres?.stop();
});

const headers = { "x-user": "ada", "content-type": "application/json" };

/**
 * Reads an NDJSON event stream: every event until `agent_end`, or until the connection breaks
 * (the server died); heartbeats skipped.
 */
async function read(response: Response, seen: AgentEvent[] = []): Promise<AgentEvent[]> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return seen;
      buffered += decoder.decode(value, { stream: true });
      const lines = buffered.split("\n");
      buffered = lines.pop() as string;
      for (const line of lines) {
        if (line === "") continue;
        const event = JSON.parse(line);
        if (event.type === "heartbeat") continue;
        seen.push(event);
        if (event.type === "agent_end") return seen;
      }
    }
  } catch {
    return seen; // the server went away mid-stream
  }
}

async function toolRuns(runId: string): Promise<{ pid: number }[]> {
  const { rows } = await pool.query("SELECT pid FROM tool_runs WHERE run_id = $1 ORDER BY at", [runId]);
  return rows;
}

describe("agent-core's HTTP server on the durable runtime, two processes", () => {
  it("any server process serves any run; a worker killed mid-run is restarted and the stream goes on", async () => {
    // One after the other: DBOS migrates its tables when a process first launches.
    const a = await startServer("worker-a");
    const b = await startServer("worker-b");

    // Started through A; the run suspends for the page's text (a client tool).
    const started = await fetch(`${a.url}/runs`, {
      method: "POST",
      headers,
      body: JSON.stringify({ prompt: "Read the page and add 1 and 2." }),
    });
    expect(started.status).toBe(200);
    const runId = started.headers.get("x-run-id") as string;
    const first = await read(started);
    const end = first.at(-1);
    expect(end).toMatchObject({ type: "agent_end", stopReason: "awaiting_client_tool" });
    const pending = (end as { pendingClientTools: { toolCallId: string; hookToken: string }[] })
      .pendingClientTools;
    expect(pending.map((call) => call.toolCallId)).toEqual(["r1"]);

    // B, which did not start it, serves the same events.
    const fromB = await read(await fetch(`${b.url}/runs/${runId}/events`, { headers }));
    expect(fromB).toEqual(first);
    // Another user does not see it.
    const stranger = await fetch(`${b.url}/runs/${runId}/events`, { headers: { "x-user": "eve" } });
    expect(stranger.status).toBe(404);

    // The result posted to B resumes the run as `<id>.2`; the same post to A is a repeat (the
    // ledger is shared), another result a conflict.
    const post = (server: Server, result: unknown) =>
      fetch(`${server.url}/runs/${runId}/tool-results`, {
        method: "POST",
        headers,
        body: JSON.stringify({ toolCallId: "r1", token: pending[0]?.hookToken, result }),
      });
    const answered = await post(b, "Welcome");
    expect(answered.status).toBe(202);
    const resumedId = (await answered.json()).runId;
    expect(resumedId).toBe(`${runId}.2`);
    expect((await post(a, "Welcome")).status).toBe(202);
    expect((await post(a, "Something else")).status).toBe(409);

    // The resumed run, followed through A, until its slow tool runs in one of the workers.
    const seen: AgentEvent[] = [];
    const followed = read(await fetch(`${a.url}/runs/${resumedId}/events`, { headers }), seen);
    const deadline = Date.now() + 30_000;
    while ((await toolRuns(resumedId)).length === 0) {
      if (Date.now() > deadline) throw new Error("the tool never ran");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The worker running it dies; the other server keeps serving; the dead one restarts (a
    // deploy) with its id and resumes the run.
    const runner = (await toolRuns(resumedId))[0]?.pid;
    const [dead, alive] = runner === a.process.pid ? [a, b] : [b, a];
    expect(runner).toBe(dead.process.pid);
    dead.process.kill("SIGKILL");
    await dead.exited;
    const restarted = await startServer(dead === a ? "worker-a" : "worker-b");

    // When A died, the client re-attaches through B from the last event it had: the rest of the
    // run. Else A's stream simply goes on. Either way: no gap, no duplicate.
    let whole: AgentEvent[];
    if (dead === a) {
      await followed; // its stream broke
      const after = seen.at(-1)?.seq ?? -1;
      const rest = await read(
        await fetch(`${alive.url}/runs/${resumedId}/events?after=${after}`, { headers }),
      );
      whole = [...seen, ...rest];
    } else whole = await followed;
    expect(whole.map((event) => event.seq)).toEqual(whole.map((_, i) => i));
    assertEventProtocol(whole);
    expect(whole.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    expect(
      whole
        .filter((event) => event.type === "text_delta")
        .map((event) => event.text)
        .join(""),
    ).toBe("Read it and added.");
    // The tool that was running at the kill ran again (at least once), in a live worker: the
    // restarted one puts its dead self's queued runs back on the queue, and either takes it.
    const runs = await toolRuns(resumedId);
    expect(runs.length).toBe(2);
    expect([alive.process.pid, restarted.process.pid]).toContain(runs[1]?.pid);
    // And the stream through the restarted process is the same run.
    expect(await read(await fetch(`${restarted.url}/runs/${resumedId}/events`, { headers }))).toEqual(whole);
  }, 120_000);
});
