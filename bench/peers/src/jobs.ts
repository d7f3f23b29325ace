/** The jobs a child process runs, and what each reports back (plain JSON over the IPC channel). */

/** W1 and the forced-GC probe: entries interleaved in rounds in one process, ratios to the floor per round. */
export interface W1Job {
  kind: "w1";
  /** Variant ids; "+gc" after an id forces a full `gc()` before each of its measured blocks. */
  entries: string[];
  cycles: number[];
  rounds: number;
  roundMs: number;
  warmMs: number;
}
export interface W1Block {
  /** Median µs per tool cycle over the block's runs. */
  perCycle: number;
  /** µs per cycle of the block's first run. */
  firstPerCycle: number;
  runs: number;
  /** Collections during the block: minor (scavenges) and major (mark-compact), and their total ms. */
  minor: number;
  major: number;
  gcMs: number;
  /** The young generation's size (MB) when the block started. */
  newSpaceMB: number;
}
export interface W1Result {
  kind: "w1";
  /** blocks[entry][cycles][round] */
  blocks: Record<string, Record<number, W1Block[]>>;
}

/** W2: one batch of `runs` concurrent runs in a fresh process. */
export interface W2Job {
  kind: "w2";
  variant: string;
  runs: number;
  cycles: number;
  latencyMs: number;
}
export interface W2Result {
  kind: "w2";
  wallMs: number;
  cpuMs: number;
  peakRssMB: number;
  rssBeforeMB: number;
}

/** W3: long runs with 1 KB results, every cycle timed. */
export interface W3Job {
  kind: "w3";
  variant: string;
  cycles: number;
  warmRuns: number;
  runs: number;
}
export interface W3Result {
  kind: "w3";
  /** Per measured run: the µs of each cycle (model call + tool + bookkeeping). */
  cycleUs: number[][];
}

/** Heap: allocated and retained bytes, in a process with a young generation too large to collect. */
export interface HeapJob {
  kind: "heap";
  variant: string;
  cycles: number;
  samples: number;
  /** Finished runs per leak sample. */
  leakRuns: number;
  /** Runs before measuring. */
  warmRuns: number;
}
export interface HeapResult {
  kind: "heap";
  /** KB allocated per cycle, per run that saw no collection. */
  allocatedKB: number[];
  /** Runs discarded because a collection happened during them. */
  discarded: number;
  /** KB live per cycle at the last tool call, over the heap before the run. */
  liveKB: number[];
  /** Bytes still retained per finished (and dropped) run. */
  leakBytes: number[];
}

export type Job = W1Job | W2Job | W3Job | HeapJob;
export type Result = W1Result | W2Result | W3Result | HeapResult;
