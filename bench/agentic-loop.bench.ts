/**
 * Per-tool-cycle cost of the agentic loop against a bare loop over the same model's doStream(),
 * interleaved in one process so the ratio is robust to machine noise. Run: `pnpm bench`.
 * Options: BENCH_CYCLES (default 50), BENCH_ROUNDS (default 7), BENCH_ROUND_MS (default 400).
 */

import { cycleModel } from "./cycle-model.js";
import { agenticLoop, bareLoop } from "./loops.js";

const cycles = Number(process.env.BENCH_CYCLES ?? 50);
const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const roundMs = Number(process.env.BENCH_ROUND_MS ?? 400);
const model = cycleModel(cycles);

type Variant = { name: string; run: () => Promise<string> };
const variants: Variant[] = [
  { name: "bare doStream loop", run: () => bareLoop(model) },
  { name: "agentic (Agent.prompt)", run: () => agenticLoop(model, cycles) },
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

const fmt = (n: number) => n.toFixed(1).padStart(8);

for (const variant of variants) await measure(variant, 800); // warm-up
const perRound = new Map<string, number[]>(variants.map((v) => [v.name, []]));
const ratios: number[] = [];
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  const times = new Map<string, number>();
  for (const variant of order) {
    (globalThis as { gc?: () => void }).gc?.();
    const us = await measure(variant, roundMs);
    times.set(variant.name, us);
    perRound.get(variant.name)?.push(us);
  }
  ratios.push((times.get("agentic (Agent.prompt)") as number) / (times.get("bare doStream loop") as number));
}

console.log(
  `agent-core bench: ${cycles} tool cycles per run, ${rounds} interleaved rounds, Node ${process.version}`,
);
console.log(`${"variant".padEnd(26)}   µs/cycle:    min   median      max`);
for (const [name, values] of perRound)
  console.log(
    `${name.padEnd(26)}            ${fmt(Math.min(...values))} ${fmt(median(values))} ${fmt(Math.max(...values))}`,
  );
console.log(
  `${"ratio agentic / bare".padEnd(26)}            ${fmt(Math.min(...ratios))} ${fmt(median(ratios))} ${fmt(Math.max(...ratios))}`,
);
const target = 1.5;
console.log(median(ratios) <= target ? `within the ${target}x target` : `ABOVE the ${target}x target`);
