import { AgenticOrchestrator } from "@agent-core/agentic";
import { Agent, defineTool } from "@agent-core/core";
import { DurableRuntime } from "@agent-core/dbos";
import { planExecute } from "@agent-core/plan-execute";
import { script, scriptedModel } from "@agent-core/testing";
import pg from "pg";
import { z } from "zod";

// A worker process of the durable-run tests: `start` begins a run and waits to be killed, `resume`
// launches (DBOS recovers the run) and prints its result, `whole` runs one to the end and prints
// it, `work` serves the run queue until killed. An optional fifth argument is the worker's
// `executorId` (several workers at once need one each, as docs/durable-runs.md says).
// Every tool call is logged in the `tool_runs` table, so the test can count how often each ran.

const [mode, databaseUrl, runId, execution, executorId] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string | undefined,
];
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
await pool.query(
  "CREATE TABLE IF NOT EXISTS tool_runs (run_id text, tool_call_id text, pid integer, at timestamptz DEFAULT now())",
);
// The queued runs' tool calls wait until the test opens the gate (a row in `gate`).
await pool.query("CREATE TABLE IF NOT EXISTS gate (open boolean)");
async function gate(): Promise<void> {
  while ((await pool.query("SELECT 1 FROM gate")).rowCount === 0)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

const readPage = defineTool({
  name: "read_page",
  description: "Reads the user's page",
  inputSchema: z.object({ selector: z.string() }),
  execution: "client",
});

const delays: Record<string, number> = { c1: 150, c2: 400, c3: 250 };
const add = defineTool({
  name: "add",
  description: "Adds two numbers, slowly.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }, { toolCallId, idempotencyKey }) => {
    const runId = idempotencyKey.slice(0, idempotencyKey.lastIndexOf(":"));
    await pool.query("INSERT INTO tool_runs (run_id, tool_call_id, pid) VALUES ($1, $2, $3)", [
      runId,
      toolCallId,
      process.pid,
    ]);
    if (runId.startsWith("queued-")) await gate();
    await new Promise((resolve) => setTimeout(resolve, delays[toolCallId] ?? 100));
    return a + b;
  },
});

/** Replies by the number of assistant messages so far, so a resumed process continues the script. */
function model(parallel: boolean, slowAnswer: boolean) {
  const calls = [
    script.toolCall("add", { a: 1, b: 2 }, { id: "c1" }),
    script.toolCall("add", { a: 3, b: 4 }, { id: "c2" }),
    script.toolCall("add", { a: 5, b: 6 }, { id: "c3" }),
  ];
  // `slowAnswer`: the answer streams its second half a second after its first.
  const answer = slowAnswer
    ? [script.text("3, 7 "), script.delay(1000), script.text("and 11.")]
    : [script.text("3, 7 ", "and 11.")];
  const replies = parallel ? [calls, answer] : [...calls.map((c) => [c]), answer];
  const byTurn = (options: { prompt: { role: string }[] }) =>
    replies[options.prompt.filter((message) => message.role === "assistant").length] ?? [script.text("?")];
  return scriptedModel(Array.from({ length: 10 }, () => byTurn));
}

/**
 * `self-cancel`: its tool cancels its own run once the test opens `cancel_gate` (as a process that
 * is a worker and a server does when its client cancels), then waits for the abort; started, the
 * worker dies (SIGKILL) the moment the run ends, before its workflow does.
 */
const cancelling = defineTool({
  name: "cancel_me",
  description: "Cancels its own run, then waits for the abort",
  inputSchema: z.object({}),
  execute: async (_, { toolCallId, idempotencyKey, signal }) => {
    const runId = idempotencyKey.slice(0, idempotencyKey.lastIndexOf(":"));
    await pool.query("INSERT INTO tool_runs (run_id, tool_call_id, pid) VALUES ($1, $2, $3)", [
      runId,
      toolCallId,
      process.pid,
    ]);
    await pool.query("CREATE TABLE IF NOT EXISTS cancel_gate (open boolean)");
    while ((await pool.query("SELECT 1 FROM cancel_gate")).rowCount === 0)
      await new Promise((resolve) => setTimeout(resolve, 20));
    void runtime.cancel(runId);
    return new Promise<string>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
  },
});
function selfCancelling(): Agent {
  const agent = new Agent({
    provider: scriptedModel(
      Array.from({ length: 10 }, () => (options: { prompt: { role: string }[] }) => {
        const turn = options.prompt.filter((message) => message.role === "assistant").length;
        return turn === 0 ? [script.toolCall("cancel_me", {}, { id: "k1" })] : [script.text("Went on.")];
      }),
    ),
    tools: [cancelling],
  });
  if (mode === "start") agent.on("agent_end", () => process.kill(process.pid, "SIGKILL"));
  return agent;
}

const parallel = execution === "parallel";
// "v2": the same loop under a version the run did not start with.
const orchestrator =
  execution === "v2" ? Object.assign(new AgenticOrchestrator(), { version: "2" }) : undefined;
const runtime = new DurableRuntime({
  databaseUrl,
  ...(executorId === undefined ? {} : { executorId }),
  // `work`: a worker of the queue, taking at most two runs at once.
  ...(mode === "work" ? { queue: { workerConcurrency: 2 } } : {}),
  agents: {
    "self-cancelling": selfCancelling,
    adder: () =>
      new Agent({
        provider: model(parallel, execution === "stream"),
        tools: [add],
        toolExecution: parallel ? "parallel" : "sequential",
        ...(orchestrator ? { orchestrator } : {}),
      }),
    // Waits twice: for the page's text (a client tool), then for approval of the sum.
    reader: () =>
      new Agent({
        provider: scriptedModel(
          Array.from({ length: 10 }, () => (options: { prompt: { role: string }[] }) => {
            const turn = options.prompt.filter((message) => message.role === "assistant").length;
            if (turn === 0) return [script.toolCall("read_page", { selector: "h1" }, { id: "r1" })];
            if (turn === 1) return [script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })];
            return [script.text("Read it and added.")];
          }),
        ),
        tools: [readPage, add],
        beforeToolCall: ({ call }) => (call.name === "add" ? { requireApproval: true } : undefined),
      }),
    // Plan-execute: a plan of two sums, the second reading the first; the first waits for approval.
    planner: () =>
      new Agent({
        provider: scriptedModel(
          Array.from({ length: 10 }, () => (options: { prompt: { role: string }[] }) => {
            if (options.prompt.some((message) => message.role === "tool"))
              return [script.text("Planned and added.")];
            const steps = [
              { id: "a", tool: "add", args: { a: 1, b: 2 } },
              { id: "b", tool: "add", args: { a: { $ref: "steps.a.result" }, b: 10 } },
            ];
            return [script.text(JSON.stringify({ steps }))];
          }),
        ),
        tools: [add],
        orchestrator: planExecute(),
        beforeToolCall: ({ call }) =>
          (call.args as { b?: number }).b === 2 ? { requireApproval: true } : undefined,
      }),
  },
});
await runtime.launch();
if (mode === "work") {
  console.log("working");
  await new Promise(() => {}); // takes runs from the queue until killed
}
const agentName =
  execution === "waits"
    ? "reader"
    : execution === "plans"
      ? "planner"
      : execution === "self-cancel"
        ? "self-cancelling"
        : "adder";
if (mode === "start") {
  await runtime.start(agentName, "Add 1+2, 3+4 and 5+6.", { runId });
  console.log("started");
  await new Promise(() => {}); // until killed
}
let result: unknown;
try {
  result =
    mode === "whole"
      ? await (await runtime.start(agentName, "Add 1+2, 3+4 and 5+6.", { runId })).result()
      : await runtime.retrieve(runId).result();
} catch (error) {
  result = { failed: (error as Error).message };
}
console.log(JSON.stringify(result));
await runtime.shutdown();
await pool.end();
