/**
 * The agentic loop against a bare loop that reads the same model's doStream() directly, interleaved
 * in one process so the ratios are robust to machine noise, in three workloads:
 * - tool cycles: the per-tool-cycle cost of a 50-cycle run, on two models: the testing kit's
 *   scripted model (the benchmark as specified) and a leaner hand-written one (a stricter floor);
 * - one-call run: a run's fixed cost, a prompt answered by one model call with text, on a fresh
 *   agent per run (the README's way) and on one agent reused, `reset()` before each run;
 * - concurrent runs: 1,000 runs of 5 tool cycles at once, each model call waiting 2 ms first: wall
 *   time, and the peak RSS growth of one such batch in a fresh process per loop (in a process
 *   that already ran a batch, the heap it grew to hides the next batch's growth);
 * - tracing: the agentic loop (lean model) with tracing turned off against the default with no
 *   tracer provider registered, and with tracing on into the SDK's in-memory exporter: per tool
 *   cycle of a 50-cycle run, and per one-call run (where the run span, asked for once per run, weighs most).
 * Each comparison runs in a process of its own: sharing one would make both loops' property reads
 * see every comparison's stream parts, so each comparison would partly measure the others. Each
 * comparison runs in several such processes in turn and pools their rounds: a process's JIT and
 * heap state moves its figure by a few percent, so one process alone gives a less steady figure.
 * Run: `pnpm bench`.
 * Options: BENCH_CYCLES (default 50), BENCH_ROUNDS (default 21 per process), BENCH_ROUND_MS
 * (default 200; each loop warms up for four rounds' time), BENCH_PROCESSES (default 3 per
 * comparison), BENCH_CONCURRENT_RUNS (default 1000), BENCH_CONCURRENT_ROUNDS (default 7 per
 * process), BENCH_ONLY (workloads to run, comma-separated: cycles, one-call, concurrent, tracing,
 * tracing-one-call; default all).
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { cycleModel, scriptedCycleModel, slowCycleModel } from "./cycle-model.js";
import { agenticLoop, bareLoop, readmeAgent, runAgent } from "./loops.js";
import { benchOption } from "./options.js";
import type { TracingMode } from "./tracing-loops.js";

const cycles = benchOption("BENCH_CYCLES", 50);
const rounds = benchOption("BENCH_ROUNDS", 21);
const roundMs = benchOption("BENCH_ROUND_MS", 200);
const processes = benchOption("BENCH_PROCESSES", 3);
const concurrentRuns = benchOption("BENCH_CONCURRENT_RUNS", 1000);
const concurrentRounds = benchOption("BENCH_CONCURRENT_ROUNDS", 7);
const target = 1.5;
const concurrentCycles = 5;
const latencyMs = 2;

/** One loop of a comparison: a row of the report and how to take one sample of it. */
interface Loop {
  label: string;
  /** One sample, in the workload's unit; throws if the loop answered wrong. */
  sample: () => Promise<number>;
  /** Set on every loop but the comparison's first, the baseline its ratio is taken to. */
  ratio?: { label: string; target?: boolean };
  /** The MB a fresh process's RSS peaks above where it started, for a workload that reports memory. */
  memory?: () => Promise<number>;
}

/** How long a loop is sampled for: at least `ms`, and at least `samples` times. */
interface Pace {
  ms: number;
  samples: number;
}

interface Workload {
  title: string;
  unit: string;
  ratioHeader: string;
  rounds: number;
  warmUp: Pace;
  round: Pace;
  /** The loops of each comparison, made in the comparison's own process. */
  comparisons: Record<string, () => Loop[]>;
}

const timedPace = { warmUp: { ms: 4 * roundMs, samples: 5 }, round: { ms: roundMs, samples: 5 } };

const workloads: Record<string, Workload> = {
  cycles: {
    title: `agent-core bench: ${cycles} tool cycles per run, ${processes} processes × ${rounds} interleaved rounds, Node ${process.version}`,
    unit: "µs per tool cycle",
    ratioHeader: "ratio agentic / bare",
    rounds,
    ...timedPace,
    comparisons: {
      // The mock records every call, so the scripted model is made fresh per run; the lean one is stateless.
      scripted: () => cycleLoops("scripted model", () => scriptedCycleModel(cycles), true),
      lean: () => {
        const lean = cycleModel(cycles);
        return cycleLoops("lean model", () => lean, false);
      },
    },
  },
  "one-call": {
    title: `one-call run (one model call answering with text, lean model), ${processes} processes × ${rounds} interleaved rounds`,
    unit: "µs per run",
    ratioHeader: "ratio agentic / bare",
    rounds,
    ...timedPace,
    comparisons: {
      oneCall: () => {
        const model = cycleModel(0);
        const reused = readmeAgent(model);
        return [
          { label: "bare loop, one call", sample: () => timed("bare", () => bareLoop(model)) },
          {
            label: "agentic, fresh agent per run",
            sample: () => timed("agentic", () => runAgent(readmeAgent(model))),
            ratio: { label: "one-call run, fresh agent" },
          },
          {
            label: "agentic, reused agent, reset()",
            sample: () =>
              timed("agentic", () => {
                reused.reset();
                return runAgent(reused);
              }),
            ratio: { label: "one-call run, reused agent" },
          },
        ];
      },
    },
  },
  concurrent: {
    title: `${concurrentRuns} concurrent runs of ${concurrentCycles} tool cycles, ${latencyMs} ms model latency (lean model), ${processes} processes × ${concurrentRounds} interleaved rounds`,
    unit: `ms per ${concurrentRuns} runs at once`,
    ratioHeader: "ratio agentic / bare, wall time",
    rounds: concurrentRounds,
    warmUp: { ms: 0, samples: 3 },
    // No forced collection between batches: it shrinks the heap, and the next batch, which keeps
    // thousands of runs alive at once, then pays to grow it again (agentic batches took twice as long).
    round: { ms: 0, samples: 1 },
    comparisons: {
      concurrent: () => {
        const model = slowCycleModel(concurrentCycles, latencyMs);
        return [
          concurrentLoop("bare loops, concurrent", () => bareLoop(model)),
          {
            ...concurrentLoop("agentic, concurrent", () => runAgent(readmeAgent(model))),
            ratio: { label: "concurrent runs" },
          },
        ];
      },
    },
  },
  tracing: {
    title: `tracing: ${cycles} tool cycles per run (lean model), ${processes} processes × ${rounds} interleaved rounds`,
    unit: "µs per tool cycle",
    ratioHeader: "ratio to tracing off",
    rounds,
    ...timedPace,
    comparisons: { tracing: () => tracingLoops(cycles) },
  },
  "tracing-one-call": {
    title: `tracing: one-call run (lean model), ${processes} processes × ${rounds} interleaved rounds`,
    unit: "µs per run",
    ratioHeader: "ratio to tracing off",
    rounds,
    ...timedPace,
    comparisons: { tracingOneCall: () => tracingLoops(0) },
  },
};

const only = selectedWorkloads();

/** What a comparison's process reports, per round: each loop's figure and each ratio. */
interface ComparisonResult {
  /** figures[loop][round] */
  figures: number[][];
  /** ratios[loop - 1][round]: loop `loop` against the baseline (loop 0). */
  ratios: number[][];
}

function cycleLoops(model: string, make: () => ReturnType<typeof cycleModel>, isTarget: boolean): Loop[] {
  const perCycle = async (name: string, run: () => Promise<string>) => (await timed(name, run)) / cycles;
  return [
    { label: `bare loop, ${model}`, sample: () => perCycle("bare", () => bareLoop(make())) },
    {
      label: `agentic, ${model}`,
      sample: () => perCycle("agentic", () => agenticLoop(make(), cycles)),
      ratio: { label: model, target: isTarget },
    },
  ];
}

/**
 * One run of `runCycles` tool cycles (0: one call) per mode, per tool cycle or per run. The tracing
 * SDK is loaded only by the processes of these workloads: loaded in every process, it would be in
 * the heap of the other comparisons too.
 */
function tracingLoops(runCycles: number): Loop[] {
  const model = cycleModel(runCycles);
  const loops = import("./tracing-loops.js");
  const loop = (mode: TracingMode, label: string): Loop => ({
    label: `agentic, ${label}`,
    sample: async () => {
      const { tracedRun } = await loops;
      return (await timed(mode, () => tracedRun(model, runCycles, mode))) / Math.max(runCycles, 1);
    },
    ...(mode === "off" ? {} : { ratio: { label: `${mode}${runCycles === 0 ? ", one call" : ""}` } }),
  });
  return [
    loop("off", "tracing off (noTracing)"),
    loop("no provider", "default, no provider registered"),
    loop("in-memory exporter", "tracing on, in-memory exporter"),
  ];
}

/** The microseconds one run takes. */
async function timed(name: string, run: () => Promise<string>): Promise<number> {
  const start = performance.now();
  const text = await run();
  const us = (performance.now() - start) * 1000;
  if (text !== "done") throw new Error(`${name} answered ${JSON.stringify(text)}`);
  return us;
}

/** `count` runs started at once; the milliseconds until all have answered. */
async function batch(name: string, run: () => Promise<string>, count: number): Promise<number> {
  const start = performance.now();
  const texts = await Promise.all(Array.from({ length: count }, () => run()));
  const ms = performance.now() - start;
  const wrong = texts.find((text) => text !== "done");
  if (wrong !== undefined) throw new Error(`${name} answered ${JSON.stringify(wrong)}`);
  return ms;
}

function concurrentLoop(label: string, run: () => Promise<string>): Loop {
  return {
    label,
    sample: () => batch(label, run, concurrentRuns),
    memory: async () => {
      // Warmed up as the peer study did, on batches too small to set the process's peak.
      for (let i = 0; i < 3; i++) await batch(label, run, 20);
      const before = process.memoryUsage.rss();
      await batch(label, run, concurrentRuns);
      return (process.resourceUsage().maxRSS * 1024 - before) / 2 ** 20;
    },
  };
}

/** Samples a loop at `pace` and returns the median sample. */
async function measure(loop: Loop, pace: Pace): Promise<number> {
  const samples: number[] = [];
  const until = performance.now() + pace.ms;
  while (performance.now() < until || samples.length < pace.samples) samples.push(await loop.sample());
  return median(samples);
}

/** A comparison's loops in interleaved rounds (alternating their order), after a warm-up. */
async function compare(workload: Workload, name: string): Promise<ComparisonResult> {
  const loops = workload.comparisons[name]?.() ?? [];
  for (const loop of loops) await measure(loop, workload.warmUp);
  const figures = loops.map((): number[] => []);
  const ratios = loops.slice(1).map((): number[] => []);
  for (let round = 0; round < workload.rounds; round++) {
    const order = loops.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) figures[i]?.push(await measure(loops[i] as Loop, workload.round));
    const baseline = figures[0]?.[round] as number;
    for (const [i, loopRatios] of ratios.entries())
      loopRatios.push((figures[i + 1]?.[round] as number) / baseline);
  }
  return { figures, ratios };
}

/**
 * Runs one comparison in a child process of this script and returns what it reports: its rounds,
 * or with `memoryOf`, that loop's memory figure.
 */
function inChild<T>(name: string, memoryOf?: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, BENCH_COMPARISON: name, BENCH_MEMORY_OF: String(memoryOf ?? "") };
    const child = fork(fileURLToPath(import.meta.url), { env });
    let result: T | undefined;
    child.on("message", (message) => {
      result = message as T;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      result !== undefined && code === 0
        ? resolve(result)
        : reject(new Error(`the ${name} comparison exited with ${code}`)),
    );
  });
}

/** A whole number >= 1 from the environment, or its default; anything else stops the bench. */

/** BENCH_ONLY's workloads, or all of them; an unknown name stops the bench. */
function selectedWorkloads(): string[] {
  const text = process.env.BENCH_ONLY;
  if (text === undefined || text === "") return Object.keys(workloads);
  const names = text.split(",").map((name) => name.trim());
  for (const name of names)
    if (!(name in workloads))
      throw new RangeError(
        `BENCH_ONLY must list workloads among ${Object.keys(workloads).join(", ")}, got ${JSON.stringify(text)}.`,
      );
  return names;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const fmt = (n: number) => n.toFixed(2).padStart(8);
const header = (name: string) => console.log(`${name.padEnd(32)}      min   median      max`);
const row = (name: string, values: number[]) =>
  console.log(
    `${name.padEnd(32)} ${fmt(Math.min(...values))} ${fmt(median(values))} ${fmt(Math.max(...values))}`,
  );

/** Runs a workload's comparisons, each in `processes` processes one after the other, and reports them. */
async function report(workload: Workload): Promise<void> {
  const runs: { loops: Loop[]; pooled: ComparisonResult; processMedians: number[][]; memory: number[][] }[] =
    [];
  for (const name of Object.keys(workload.comparisons)) {
    // Made here for their labels only; each child process makes its own.
    const loops = (workload.comparisons[name] as () => Loop[])();
    const pooled: ComparisonResult = { figures: loops.map(() => []), ratios: loops.slice(1).map(() => []) };
    const processMedians = loops.slice(1).map((): number[] => []);
    const memory = loops.map((): number[] => []);
    // One process after the other: processes running side by side would measure each other.
    for (let i = 0; i < processes; i++) {
      const result = await inChild<ComparisonResult>(name);
      for (const [loop, values] of result.figures.entries()) pooled.figures[loop]?.push(...values);
      for (const [loop, values] of result.ratios.entries()) {
        pooled.ratios[loop]?.push(...values);
        processMedians[loop]?.push(median(values));
      }
      for (const [loop, { memory: measured }] of loops.entries())
        if (measured) memory[loop]?.push(await inChild<number>(name, loop));
    }
    runs.push({ loops, pooled, processMedians, memory });
  }
  console.log(workload.title);
  header(workload.unit);
  for (const { loops, pooled } of runs)
    for (const [i, loop] of loops.entries()) row(loop.label, pooled.figures[i] ?? []);
  if (runs.some(({ loops }) => loops.some((loop) => loop.memory))) {
    header("MB peak RSS growth");
    for (const { loops, memory } of runs)
      for (const [i, loop] of loops.entries()) if (loop.memory) row(loop.label, memory[i] ?? []);
  }
  header(workload.ratioHeader);
  for (const { loops, pooled } of runs)
    for (const [i, loop] of loops.slice(1).entries())
      row(`ratio, ${loop.ratio?.label}${loop.ratio?.target ? " (target)" : ""}`, pooled.ratios[i] ?? []);
  for (const { loops, processMedians } of runs)
    for (const [i, loop] of loops.slice(1).entries())
      console.log(
        `${`median ratio of each process, ${loop.ratio?.label}`.padEnd(56)} ${processMedians[i]?.map((m) => m.toFixed(2)).join("  ")}`,
      );
  for (const { loops, pooled } of runs)
    for (const [i, loop] of loops.slice(1).entries())
      if (loop.ratio?.target) {
        const specified = median(pooled.ratios[i] ?? []);
        console.log(specified <= target ? `within the ${target}x target` : `ABOVE the ${target}x target`);
      }
}

const child = process.env.BENCH_COMPARISON;
if (child !== undefined) {
  const workload = Object.values(workloads).find((w) => child in w.comparisons) as Workload;
  const memoryOf = process.env.BENCH_MEMORY_OF;
  process.send?.(
    memoryOf
      ? await workload.comparisons[child]?.()[Number(memoryOf)]?.memory?.()
      : await compare(workload, child),
  );
} else {
  for (const name of only) await report(workloads[name] as Workload);
}
