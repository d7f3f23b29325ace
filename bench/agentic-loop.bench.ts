/**
 * Per-tool-cycle cost of the agentic loop against a bare loop that reads the same model's
 * doStream() directly, interleaved in one process so the ratios are robust to machine noise.
 * Two models: the testing kit's scripted model (the benchmark as specified) and a leaner
 * hand-written one (a stricter floor). Each model's comparison runs in a process of its own:
 * sharing one would make both loops' property reads see both models' stream parts, so each
 * comparison would partly measure the other model. Each comparison runs in several such processes
 * in turn and pools their rounds: a process's JIT and heap state moves its figure by a few percent,
 * so one process alone gives a less steady figure. Run: `pnpm bench`.
 * Options: BENCH_CYCLES (default 50), BENCH_ROUNDS (default 21 per process), BENCH_ROUND_MS
 * (default 200; each loop warms up for four rounds' time), BENCH_PROCESSES (default 3 per
 * comparison).
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { cycleModel, scriptedCycleModel } from "./cycle-model.js";
import { agenticLoop, bareLoop } from "./loops.js";

const cycles = option("BENCH_CYCLES", 50);
const rounds = option("BENCH_ROUNDS", 21);
const roundMs = option("BENCH_ROUND_MS", 200);
const processes = option("BENCH_PROCESSES", 3);
const target = 1.5;

const comparisons = {
  // The mock records every call, so the scripted model is made fresh per run; the lean one is stateless.
  scripted: {
    label: "scripted model",
    ratioLabel: "scripted model (target)",
    model: () => scriptedCycleModel(cycles),
  },
  lean: {
    label: "lean model",
    ratioLabel: "lean model",
    model: (() => {
      const lean = cycleModel(cycles);
      return () => lean;
    })(),
  },
} satisfies Record<string, { label: string; ratioLabel: string; model: () => LanguageModelV4 }>;
type ComparisonName = keyof typeof comparisons;

/** What a comparison's process reports: µs per tool cycle per round, for each loop, and the ratios. */
interface ComparisonResult {
  bare: number[];
  agentic: number[];
  ratios: number[];
}

/** Runs a loop for about `ms` and returns its median microseconds per tool cycle. */
async function measure(run: () => Promise<string>, name: string, ms: number): Promise<number> {
  const samples: number[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until || samples.length < 5) {
    const start = performance.now();
    const text = await run();
    samples.push(((performance.now() - start) * 1000) / cycles);
    if (text !== "done") throw new Error(`${name} answered ${JSON.stringify(text)}`);
  }
  return median(samples);
}

/** The two loops over one model, in interleaved rounds (alternating which goes first). */
async function compare(name: ComparisonName): Promise<ComparisonResult> {
  const { model } = comparisons[name];
  const loops = [
    { name: "bare", run: () => bareLoop(model()) },
    { name: "agentic", run: () => agenticLoop(model(), cycles) },
  ] as const;
  for (const loop of loops) await measure(loop.run, loop.name, 4 * roundMs); // warm-up
  const result: ComparisonResult = { bare: [], agentic: [], ratios: [] };
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? loops : [...loops].reverse();
    for (const loop of order) result[loop.name].push(await measure(loop.run, loop.name, roundMs));
    result.ratios.push((result.agentic[round] as number) / (result.bare[round] as number));
  }
  return result;
}

/** Runs one comparison in a child process of this script and returns what it reports. */
function compareInChild(name: ComparisonName): Promise<ComparisonResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), { env: { ...process.env, BENCH_COMPARISON: name } });
    let result: ComparisonResult | undefined;
    child.on("message", (message) => {
      result = message as ComparisonResult;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      result && code === 0
        ? resolve(result)
        : reject(new Error(`the ${name} comparison exited with ${code}`)),
    );
  });
}

/** A whole number >= 1 from the environment, or its default; anything else stops the bench. */
function option(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be a whole number >= 1, got ${JSON.stringify(text)}.`);
  return value;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const fmt = (n: number) => n.toFixed(2).padStart(8);
const row = (name: string, values: number[]) =>
  console.log(
    `${name.padEnd(32)} ${fmt(Math.min(...values))} ${fmt(median(values))} ${fmt(Math.max(...values))}`,
  );

const child = process.env.BENCH_COMPARISON as ComparisonName | undefined;
if (child !== undefined) {
  process.send?.(await compare(child));
} else {
  const results = new Map<ComparisonName, ComparisonResult>();
  const processMedians = new Map<ComparisonName, number[]>();
  for (const name of Object.keys(comparisons) as ComparisonName[]) {
    const pooled: ComparisonResult = { bare: [], agentic: [], ratios: [] };
    const medians: number[] = [];
    // One process after the other: processes running side by side would measure each other.
    for (let i = 0; i < processes; i++) {
      const result = await compareInChild(name);
      pooled.bare.push(...result.bare);
      pooled.agentic.push(...result.agentic);
      pooled.ratios.push(...result.ratios);
      medians.push(median(result.ratios));
    }
    results.set(name, pooled);
    processMedians.set(name, medians);
  }
  console.log(
    `agent-core bench: ${cycles} tool cycles per run, ${processes} processes × ${rounds} interleaved rounds, Node ${process.version}`,
  );
  console.log(`${"µs per tool cycle".padEnd(32)}      min   median      max`);
  for (const [name, result] of results) {
    row(`bare loop, ${comparisons[name].label}`, result.bare);
    row(`agentic, ${comparisons[name].label}`, result.agentic);
  }
  console.log(`${"ratio agentic / bare".padEnd(32)}      min   median      max`);
  for (const [name, result] of results) row(`ratio, ${comparisons[name].ratioLabel}`, result.ratios);
  for (const [name, medians] of processMedians)
    console.log(
      `${`median ratio of each process, ${comparisons[name].label}`.padEnd(48)} ${medians.map((m) => m.toFixed(2)).join("  ")}`,
    );
  const specified = median(results.get("scripted")?.ratios ?? []);
  console.log(specified <= target ? `within the ${target}x target` : `ABOVE the ${target}x target`);
}
