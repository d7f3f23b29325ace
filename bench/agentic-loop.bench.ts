/**
 * Per-tool-cycle cost of the agentic loop against a bare loop that reads the same model's
 * doStream() directly, interleaved in one process so the ratios are robust to machine noise.
 * Two models: the testing kit's scripted model (the benchmark as specified) and a leaner
 * hand-written one (a stricter floor). Run: `pnpm bench`.
 * Options: BENCH_CYCLES (default 50), BENCH_ROUNDS (default 21), BENCH_ROUND_MS (default 200).
 */
import { cycleModel, scriptedCycleModel } from "./cycle-model.js";
import { agenticLoop, bareLoop } from "./loops.js";

const cycles = Number(process.env.BENCH_CYCLES ?? 50);
const rounds = Number(process.env.BENCH_ROUNDS ?? 21);
const roundMs = Number(process.env.BENCH_ROUND_MS ?? 200);
const lean = cycleModel(cycles);

type Variant = { name: string; run: () => Promise<string> };
const variants: Variant[] = [
  { name: "bare loop, scripted model", run: () => bareLoop(scriptedCycleModel(cycles)) },
  { name: "agentic, scripted model", run: () => agenticLoop(scriptedCycleModel(cycles), cycles) },
  { name: "bare loop, lean model", run: () => bareLoop(lean) },
  { name: "agentic, lean model", run: () => agenticLoop(lean, cycles) },
];
const comparisons = [
  {
    name: "ratio, scripted model (target)",
    ours: "agentic, scripted model",
    bare: "bare loop, scripted model",
  },
  { name: "ratio, lean model", ours: "agentic, lean model", bare: "bare loop, lean model" },
];

/** Runs a variant for about `ms` and returns its median microseconds per tool cycle. */
async function measure(variant: Variant, ms: number): Promise<number> {
  const samples: number[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until || samples.length < 5) {
    const start = performance.now();
    const text = await variant.run();
    samples.push(((performance.now() - start) * 1000) / cycles);
    if (text !== "done") throw new Error(`${variant.name} answered ${JSON.stringify(text)}`);
  }
  return median(samples);
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

for (const variant of variants) await measure(variant, 800); // warm-up
const perRound = new Map<string, number[]>(variants.map((v) => [v.name, []]));
const ratios = new Map<string, number[]>(comparisons.map((c) => [c.name, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  const times = new Map<string, number>();
  for (const variant of order) {
    (globalThis as { gc?: () => void }).gc?.();
    const us = await measure(variant, roundMs);
    times.set(variant.name, us);
    perRound.get(variant.name)?.push(us);
  }
  for (const c of comparisons)
    ratios.get(c.name)?.push((times.get(c.ours) as number) / (times.get(c.bare) as number));
}

console.log(
  `agent-core bench: ${cycles} tool cycles per run, ${rounds} interleaved rounds, Node ${process.version}`,
);
console.log(`${"µs per tool cycle".padEnd(32)}      min   median      max`);
for (const [name, values] of perRound) row(name, values);
console.log(`${"ratio agentic / bare".padEnd(32)}      min   median      max`);
for (const [name, values] of ratios) row(name, values);
const target = 1.5;
const specified = median(ratios.get(comparisons[0]?.name as string) as number[]);
console.log(specified <= target ? `within the ${target}x target` : `ABOVE the ${target}x target`);
