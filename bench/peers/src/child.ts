/** A benchmark child process: runs the job in PEERS_JOB and sends its result to the parent. */
import { PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";
import { adapter } from "./adapters/index.js";
import type {
  HeapJob,
  HeapResult,
  Job,
  Result,
  W1Block,
  W1Job,
  W1Result,
  W2Job,
  W2Result,
  W3Job,
  W3Result,
} from "./jobs.js";
import { check } from "./script.js";
import { median } from "./stats.js";

const gc = (globalThis as { gc?: () => void }).gc;
function fullGc(): void {
  if (!gc) throw new Error("run with --expose-gc");
  gc();
}

/** Every collection this process sees, with its kind and time (for attributing them to blocks). */
const collections: { start: number; ms: number; major: boolean }[] = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
    // kinds: 1 minor (scavenge), 2 major (mark-compact), 4 incremental marking, 8 weak callbacks
    collections.push({ start: entry.startTime, ms: entry.duration, major: kind === 2 || kind === 4 });
  }
});
observer.observe({ entryTypes: ["gc"] });
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 5));

function newSpaceMB(): number {
  const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
  return (space?.space_size ?? 0) / 2 ** 20;
}

/** A run with its tool calls counted and its answer checked. */
async function checkedRun(
  id: string,
  cycles: number,
  latencyMs: number,
  bigResults: boolean,
  onTool?: (v: number) => void,
) {
  let calls = 0;
  const run = await (await adapter(id)).make({
    cycles,
    latencyMs,
    bigResults,
    onTool: (v) => {
      calls++;
      onTool?.(v);
    },
  });
  return {
    /** One run, checked: exactly `cycles` tool calls, then "done". */
    async once(): Promise<void> {
      calls = 0;
      check(id, await run(), calls, cycles);
    },
    /** `count` runs at once, checked together. */
    async many(count: number): Promise<void> {
      calls = 0;
      const texts = await Promise.all(Array.from({ length: count }, () => run()));
      for (const text of texts) check(id, text, cycles, cycles);
      if (calls !== count * cycles)
        throw new Error(`${id}: ${calls} tool calls for ${count} runs of ${cycles}`);
    },
  };
}

async function w1(job: W1Job): Promise<W1Result> {
  const blocks: W1Result["blocks"] = {};
  for (const entry of job.entries) blocks[entry] = {};
  for (const cycles of job.cycles) {
    const entries = await Promise.all(
      job.entries.map(async (entry) => {
        const [id, mode] = entry.split("+");
        return { entry, forceGc: mode === "gc", run: await checkedRun(id as string, cycles, 0, false) };
      }),
    );
    const timedBlock = async (run: () => Promise<void>, ms: number, minRuns: number) => {
      const times: number[] = [];
      const until = performance.now() + ms;
      while (performance.now() < until || times.length < minRuns) {
        const start = performance.now();
        await run();
        times.push((performance.now() - start) * 1000);
      }
      return times;
    };
    // Warm-up: at least warmMs and 300 tool cycles each.
    for (const e of entries) await timedBlock(() => e.run.once(), job.warmMs, Math.ceil(300 / cycles));
    const spans: { entry: string; start: number; end: number; block: W1Block }[] = [];
    for (const e of entries) (blocks[e.entry] as Record<number, W1Block[]>)[cycles] = [];
    for (let round = 0; round < job.rounds; round++) {
      const order = round % 2 === 0 ? entries : [...entries].reverse();
      for (const e of order) {
        if (e.forceGc) fullGc();
        const space = newSpaceMB();
        const start = performance.now();
        const times = await timedBlock(() => e.run.once(), job.roundMs, 3);
        const end = performance.now();
        const block: W1Block = {
          perCycle: median(times) / cycles,
          firstPerCycle: (times[0] as number) / cycles,
          runs: times.length,
          minor: 0,
          major: 0,
          gcMs: 0,
          newSpaceMB: space,
        };
        spans.push({ entry: e.entry, start, end, block });
        blocks[e.entry]?.[cycles]?.push(block);
      }
    }
    await settle();
    for (const c of collections)
      for (const s of spans)
        if (c.start >= s.start && c.start < s.end) {
          if (c.major) s.block.major++;
          else s.block.minor++;
          s.block.gcMs += c.ms;
        }
    collections.length = 0;
  }
  return { kind: "w1", blocks };
}

async function w2(job: W2Job): Promise<W2Result> {
  const run = await checkedRun(job.variant, job.cycles, job.latencyMs, false);
  // Warm-up on batches too small to set the process's peak RSS.
  for (let i = 0; i < 3; i++) await run.many(20);
  const rssBefore = process.memoryUsage.rss();
  const cpu = process.cpuUsage();
  const start = performance.now();
  await run.many(job.runs);
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return {
    kind: "w2",
    wallMs,
    cpuMs: (used.user + used.system) / 1000,
    peakRssMB: (process.resourceUsage().maxRSS * 1024) / 2 ** 20,
    rssBeforeMB: rssBefore / 2 ** 20,
  };
}

async function w3(job: W3Job): Promise<W3Result> {
  let stamps: number[] = [];
  const run = await checkedRun(job.variant, job.cycles, 0, true, () => stamps.push(performance.now()));
  for (let i = 0; i < job.warmRuns; i++) await run.once();
  const cycleUs: number[][] = [];
  for (let i = 0; i < job.runs; i++) {
    stamps = [];
    const start = performance.now();
    await run.once();
    cycleUs.push(stamps.map((t, j) => (t - (j === 0 ? start : (stamps[j - 1] as number))) * 1000));
  }
  return { kind: "w3", cycleUs };
}

async function heap(job: HeapJob): Promise<HeapResult> {
  const used = () => process.memoryUsage().heapUsed;
  let atLast = 0;
  const run = await checkedRun(job.variant, job.cycles, 0, false, (v) => {
    if (v === job.cycles) {
      fullGc();
      atLast = used();
    }
  });
  const plain = await checkedRun(job.variant, job.cycles, 0, false);
  for (let i = 0; i < job.warmRuns; i++) await plain.once();
  const result: HeapResult = { kind: "heap", allocatedKB: [], discarded: 0, liveKB: [], leakBytes: [] };
  for (let i = 0; i < job.samples; i++) {
    // Allocated: the heap's growth across a run during which no collection ran.
    fullGc();
    await settle();
    const seen = collections.length;
    const before = used();
    await plain.once();
    const after = used();
    await settle();
    if (collections.length === seen) result.allocatedKB.push((after - before) / 1024 / job.cycles);
    else result.discarded++;
    // Live while running: after a full collection inside the last tool call.
    fullGc();
    const base = used();
    await run.once();
    result.liveKB.push((atLast - base) / 1024 / job.cycles);
  }
  // Retained by finished runs whose results were dropped: the heap's growth over `leakRuns` more runs,
  // measured after a first batch of as many (which pays for one-time growth: JIT code, caches).
  fullGc();
  let previous = used();
  for (let i = 0; i < 4; i++) {
    for (let r = 0; r < job.leakRuns; r++) await plain.once();
    fullGc();
    const now = used();
    if (i > 0) result.leakBytes.push((now - previous) / job.leakRuns);
    previous = now;
  }
  return result;
}

const job = JSON.parse(process.env.PEERS_JOB as string) as Job;
const result: Result =
  job.kind === "w1"
    ? await w1(job)
    : job.kind === "w2"
      ? await w2(job)
      : job.kind === "w3"
        ? await w3(job)
        : await heap(job);
observer.disconnect();
if (process.send) process.send(result, () => process.exit(0));
else console.log(JSON.stringify(result));
