/**
 * The cost of durability: the same runs (five tool cycles and an answer, scripted model, a
 * trivial tool) in memory and on the DBOS runtime against a throwaway PostgreSQL 15 cluster, in
 * one process, alternating rounds; and the time from a worker's SIGKILL to its run's next event
 * stored by the worker that resumed it (process start and DBOS launch included).
 * Run: `pnpm bench:durable`. Options: BENCH_DURABLE_RUNS (runs per round, default 20),
 * BENCH_DURABLE_ROUNDS (default 5), BENCH_DURABLE_CRASHES (default 3).
 */
import "@agent-core/agentic";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent, defineTool } from "@agent-core/core";
import { DurableRuntime, EventStore } from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import pg from "pg";
import { z } from "zod";
import { startPostgres } from "../test/dbos/throwaway-postgres.js";
import { benchOption } from "./options.js";

const runsPerRound = benchOption("BENCH_DURABLE_RUNS", 20);
const rounds = benchOption("BENCH_DURABLE_ROUNDS", 5);
const crashes = benchOption("BENCH_DURABLE_CRASHES", 3);
const CYCLES = 5;

const add = defineTool({
  name: "add",
  description: "Adds two numbers.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

const agent = () =>
  new Agent({
    provider: scriptedModel([
      ...Array.from({ length: CYCLES }, (_, i) => [script.toolCall("add", { a: i, b: 1 }, { id: `c${i}` })]),
      [script.text("done")],
    ]),
    tools: [add],
  });

async function timed(batch: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await batch();
  return (performance.now() - started) / runsPerRound;
}

const postgres = await startPostgres();
const databaseUrl = postgres.url("agent_core_bench");
const runtime = new DurableRuntime({ databaseUrl, agents: { adder: agent } });
await runtime.launch();
try {
  const memory: number[] = [];
  const durable: number[] = [];
  for (let round = -1; round < rounds; round++) {
    const m = await timed(async () => {
      for (let i = 0; i < runsPerRound; i++) await agent().prompt("go").result();
    });
    const d = await timed(async () => {
      for (let i = 0; i < runsPerRound; i++) await (await runtime.start("adder", "go")).result();
    });
    // Round -1 warms both up.
    if (round >= 0) {
      memory.push(m);
      durable.push(d);
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const perRun = (values: number[]) => median(values);
  console.log(
    `runs of ${CYCLES} tool cycles and an answer, ${runsPerRound} per round, ${rounds} rounds (median)`,
  );
  console.log(`in memory: ${perRun(memory).toFixed(2)} ms per run`);
  console.log(
    `durable:   ${perRun(durable).toFixed(2)} ms per run (${(perRun(durable) / perRun(memory)).toFixed(0)}× in memory)`,
  );
  console.log(
    `durability cost: ${((perRun(durable) - perRun(memory)) / (CYCLES + 1)).toFixed(2)} ms per model or tool step`,
  );
  console.log(
    `crash to resume (SIGKILL → next event stored by the next worker): ${(await crashLatencies()).join(", ")} ms`,
  );
} finally {
  await runtime.shutdown();
  postgres.stop();
}

/** Kills a worker once its run's first tool result is stored; times the resumed run's next event. */
async function crashLatencies(): Promise<string[]> {
  const worker = fileURLToPath(new URL("../test/dbos/worker.ts", import.meta.url));
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const store = new EventStore(pool);
  const spawnWorker = (...args: string[]) =>
    spawn(process.execPath, ["--import", "tsx", "--conditions=@agent-core/source", worker, ...args], {
      stdio: "ignore",
    });
  const latencies: string[] = [];
  for (let i = 0; i < crashes; i++) {
    const runId = `bench-crash-${i}`;
    const first = spawnWorker("start", databaseUrl, runId, "sequential");
    let stored = 0;
    while (!(await store.read(runId)).some((event) => event.type === "tool_result"))
      await new Promise((resolve) => setTimeout(resolve, 5));
    stored = (await store.read(runId)).length;
    first.kill("SIGKILL");
    const killed = performance.now();
    const second = spawnWorker("resume", databaseUrl, runId, "sequential");
    while ((await store.read(runId, stored - 1)).length === 0)
      await new Promise((resolve) => setTimeout(resolve, 5));
    latencies.push((performance.now() - killed).toFixed(0));
    await new Promise((resolve) => second.on("exit", resolve));
  }
  await pool.end();
  return latencies;
}
