/**
 * `pnpm bench:peers`: agent-core side by side with its peers on one scripted model and one `add` tool.
 * Runs every workload in child processes (one at a time: 2 cores), pools them, writes
 * bench/peers/results/latest-node<major>.json and, unless --no-write, the Node version's generated block
 * of docs/benchmarks.md's "Peers" section and docs/peers-chart-node<major>.svg.
 * Options: --quick (about 2 minutes; prints, writes docs only with --write), --only=w1,gc,w2,w3,heap,
 * --write / --no-write, --render (rewrite the docs from every results/latest-node*.json, measuring nothing).
 */
import { fork } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { adapters } from "./adapters/index.js";
import { probe } from "./gc-probe.js";
import type { HeapResult, Job, Result, W1Result, W2Result, W3Result } from "./jobs.js";
import { collectMachine, nodeKey, type Report, writeDocs } from "./report.js";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const write = args.includes("--write") || (!quick && !args.includes("--no-write"));
const onlyArg = args.find((a) => a.startsWith("--only="));
const only = onlyArg ? onlyArg.slice("--only=".length).split(",") : ["w1", "gc", "w2", "w3", "heap"];

const plan = quick
  ? {
      w1Processes: 1,
      rounds: 3,
      roundMs: 50,
      warmMs: 150,
      gcProcesses: 1,
      gcRounds: 3,
      w2Reps: 1,
      w2FastReps: 1,
      w3Processes: 1,
      w3Runs: 3,
      heapSamples: 2,
      concurrent: 250,
    }
  : {
      w1Processes: 3,
      rounds: 7,
      roundMs: 150,
      warmMs: 500,
      gcProcesses: 3,
      gcRounds: 9,
      w2Reps: 3,
      w2FastReps: 5,
      w3Processes: 2,
      w3Runs: 7,
      heapSamples: 5,
      concurrent: 1000,
    };

const fast = new Set(["floor", "agent-core", "agent-core-on", "pi", "pi-v4"]);
const peers = adapters.filter((a) => a.id !== "floor" && a.id !== "agent-core").map((a) => a.id);

let jobsDone = 0;
function push<T>(into: Record<string, T[]>, key: string, value: T): void {
  const list = into[key] ?? [];
  list.push(value);
  into[key] = list;
}

function inChild<R extends Result>(job: Job, extraFlags: string[] = []): Promise<R> {
  return new Promise((resolve, reject) => {
    const child = fork(join(here, "child.ts"), {
      env: { ...process.env, PEERS_JOB: JSON.stringify(job) },
      execArgv: [...process.execArgv, "--expose-gc", ...extraFlags],
    });
    let result: R | undefined;
    child.on("message", (message) => {
      result = message as R;
    });
    child.on("error", reject);
    const startedAt = performance.now();
    child.on("exit", (code) => {
      jobsDone++;
      const seconds = ((performance.now() - startedAt) / 1000).toFixed(1);
      process.stderr.write(
        `  [${jobsDone}] ${describe(job)}: ${code === 0 ? "ok" : `exit ${code}`} (${seconds} s)\n`,
      );
      if (result !== undefined && code === 0) resolve(result);
      else reject(new Error(`child ${describe(job)} exited with ${code}`));
    });
  });
}

function describe(job: Job): string {
  return job.kind === "w1" ? `w1 ${job.entries.join(",")}` : `${job.kind} ${job.variant}`;
}

if (args.includes("--render")) {
  // Re-renders the docs from the last full run's results on each Node version, measuring nothing.
  const resultsDir = join(here, "..", "results");
  for (const file of readdirSync(resultsDir).filter((f) => /^latest-node\d+\.json$/.test(f)))
    console.log(writeDocs(JSON.parse(readFileSync(join(resultsDir, file), "utf8")) as Report, true));
  process.exit(0);
}

const started = Date.now();
const report: Report = {
  mode: quick ? "quick" : "full",
  plan,
  machine: collectMachine(),
  w1: [],
  gc: [],
  gcProbe: [],
  w2: {},
  w3: {},
  heap: {},
  minutes: 0,
};

if (only.includes("w1")) {
  process.stderr.write("W1: per-tool-cycle cost at 1, 10 and 50 calls\n");
  for (let p = 0; p < plan.w1Processes; p++)
    for (const peer of p % 2 === 0 ? peers : [...peers].reverse()) {
      const entries = p % 2 === 0 ? ["floor", "agent-core", peer] : [peer, "agent-core", "floor"];
      report.w1.push(
        await inChild<W1Result>({
          kind: "w1",
          entries,
          cycles: [1, 10, 50],
          rounds: plan.rounds,
          roundMs: plan.roundMs,
          warmMs: plan.warmMs,
        }),
      );
    }
}
if (only.includes("gc")) {
  process.stderr.write("GC probe: K=50 with and without a forced full GC before each block\n");
  // Forced collections deoptimize every variant's code in the process, so the entries with and
  // without them run in processes of their own, alternating.
  for (let p = 0; p < plan.gcProcesses; p++)
    for (const suffix of p % 2 === 0 ? ["", "+gc"] : ["+gc", ""])
      report.gc.push(
        await inChild<W1Result>({
          kind: "w1",
          entries: ["floor", "agent-core", "pi"].map((id) => id + suffix),
          cycles: [50],
          rounds: plan.gcRounds,
          roundMs: plan.roundMs,
          warmMs: plan.warmMs,
        }),
      );
  process.stderr.write("GC probe: recovery after a forced gc(), deoptimizations, natural collections\n");
  for (const id of ["floor", "agent-core", "pi"]) {
    report.gcProbe.push(await probe(id, quick));
    process.stderr.write(`  probe ${id}: ok\n`);
  }
}
if (only.includes("w2")) {
  process.stderr.write(
    `W2: ${plan.concurrent} concurrent runs of 5 cycles, 2 ms model latency, a fresh process each\n`,
  );
  const ids = adapters.map((a) => a.id);
  const reps = Math.max(plan.w2Reps, plan.w2FastReps);
  for (let rep = 0; rep < reps; rep++)
    for (const id of rep % 2 === 0 ? ids : [...ids].reverse()) {
      if (rep >= plan.w2Reps && !fast.has(id)) continue;
      const result = await inChild<W2Result>({
        kind: "w2",
        variant: id,
        runs: plan.concurrent,
        cycles: 5,
        latencyMs: 2,
      });
      push(report.w2, id, result);
    }
}
if (only.includes("w3")) {
  process.stderr.write("W3: 200 cycles with 1 KB results\n");
  for (let p = 0; p < plan.w3Processes; p++)
    for (const a of adapters) {
      const result = await inChild<W3Result>({
        kind: "w3",
        variant: a.id,
        cycles: 200,
        warmRuns: quick ? 1 : 2,
        runs: plan.w3Runs,
      });
      push(report.w3, a.id, result);
    }
}
if (only.includes("heap")) {
  process.stderr.write("Heap: allocated, live and retained per cycle (young generation pinned at 512 MB)\n");
  for (const a of adapters) {
    const result = await inChild<HeapResult>(
      {
        kind: "heap",
        variant: a.id,
        cycles: 50,
        samples: plan.heapSamples,
        leakRuns: fast.has(a.id) ? (quick ? 50 : 300) : quick ? 3 : 15,
        warmRuns: quick ? 10 : 30,
      },
      ["--min-semi-space-size=512", "--max-semi-space-size=512"],
    );
    push(report.heap, a.id, result);
  }
}
report.minutes = (Date.now() - started) / 60_000;
report.machine.loadAfter = (await import("node:os")).loadavg().map((l) => Number(l.toFixed(2)));

const resultsDir = join(here, "..", "results");
mkdirSync(resultsDir, { recursive: true });
const saved = quick ? "quick.json" : `latest-${nodeKey(report.machine.node)}.json`;
writeFileSync(join(resultsDir, saved), `${JSON.stringify(report, null, 1)}\n`);
const text = writeDocs(report, write);
console.log(text);
