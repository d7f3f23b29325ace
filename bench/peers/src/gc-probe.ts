/**
 * The forced-GC investigation. For each of the floor, agent-core and pi, three child processes:
 * - curve: warm up, then 8 episodes of [100 runs, `gc()`, 300 runs], untraced: how much slower the
 *   runs after a forced collection are, per 30 runs, than the steady runs before it;
 * - deopts: 5 forced collections under `--trace-deopt`: the TurboFan functions deoptimized with
 *   "reason: weak objects" (their embedded hidden classes died) per forced collection;
 * - natural: the same variant looping for a few seconds with no forced collection: natural
 *   mark-compacts and weak-object deoptimizations after the warm-up;
 * - natural, `--retain-maps-for-n-gc=0`: the same, with V8's policy of keeping unused hidden classes
 *   (maps) alive for two more old-space collections turned off (forced collections skip that policy).
 * `node --import tsx bench/peers/src/gc-probe.ts [variant ...]`; `pnpm bench:peers` runs it in its gc part.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { adapter } from "./adapters/index.js";
import { median } from "./stats.js";

const MARK = "=== measured";
const cycles = 50;

export interface ProbeResult {
  variant: string;
  /** Distinct functions deoptimized for "weak objects", per forced collection (median over episodes). */
  forcedDeopts: number;
  /** Their names (anonymous functions shown as "(anonymous)"). */
  deoptedFunctions: string[];
  /** Median µs per cycle of the 100 runs before each forced collection. */
  steadyUs: number;
  /** Median µs per cycle of each 30 runs after a forced collection (runs 1–30, 31–60, … 271–300). */
  afterGc30: number[];
  /** About how many ms the 300 runs after one forced collection lost against steady runs. */
  extraMsPerGc: number;
  naturalMarkCompacts: number;
  naturalDeopts: number;
  noRetainMarkCompacts: number;
  noRetainDeopts: number;
}

async function child(mode: string, id: string, quick: boolean): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc as () => void;
  const run = await (await adapter(id)).make({ cycles, latencyMs: 0, bigResults: false });
  const time = async () => {
    const start = performance.now();
    await run();
    return ((performance.now() - start) * 1000) / cycles;
  };
  for (let i = 0; i < 600; i++) await time();
  if (mode === "curve") {
    // Untraced: 8 episodes of 100 steady runs, gc(), 300 runs.
    const episodes: { steady: number; buckets: number[] }[] = [];
    for (let e = 0; e < (quick ? 2 : 8); e++) {
      const steady: number[] = [];
      for (let i = 0; i < 100; i++) steady.push(await time());
      gc();
      const after: number[] = [];
      for (let i = 0; i < 300; i++) after.push(await time());
      episodes.push({
        steady: median(steady),
        buckets: Array.from({ length: 10 }, (_, b) => median(after.slice(b * 30, b * 30 + 30))),
      });
    }
    console.log(`RESULT ${JSON.stringify(episodes)}`);
  } else if (mode === "deopts") {
    for (let e = 0; e < (quick ? 2 : 5); e++) {
      for (let i = 0; i < 40; i++) await time();
      console.log(`${MARK} episode ${e}`);
      gc();
      for (let i = 0; i < 40; i++) await time();
    }
  } else {
    console.log(MARK);
    const until = performance.now() + (quick ? 2000 : 6000);
    while (performance.now() < until) await time();
  }
}

async function spawn(flags: string[], mode: string, id: string, quick: boolean): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      ...process.execArgv.filter((a) => !a.startsWith("--expose-gc")),
      ...flags,
      fileURLToPath(import.meta.url),
    ],
    {
      env: { ...process.env, PEERS_PROBE: `${mode}:${id}:${quick ? "quick" : "full"}` },
      maxBuffer: 256 * 2 ** 20,
    },
  );
  return stdout;
}

const weak = /<SharedFunctionInfo ?([^>]*)>.*reason: weak objects/;

export async function probe(id: string, quick = false): Promise<ProbeResult> {
  const curveOut = await spawn(["--expose-gc"], "curve", id, quick);
  const episodes = JSON.parse(
    (curveOut.split("\n").find((l) => l.startsWith("RESULT ")) as string).slice(7),
  ) as { steady: number; buckets: number[] }[];
  const steady = median(episodes.map((e) => e.steady));
  const buckets = Array.from({ length: 10 }, (_, b) => median(episodes.map((e) => e.buckets[b] as number)));
  const traced = await spawn(["--expose-gc", "--trace-deopt"], "deopts", id, quick);
  const names = new Set<string>();
  const perGc = traced
    .split(/^=== measured episode \d+$/m)
    .slice(1)
    .map((text) => {
      const here = new Set<string>();
      for (const line of text.split("\n")) {
        const m = weak.exec(line);
        if (m) {
          here.add(m[1] || "(anonymous)");
          names.add(m[1] || "(anonymous)");
        }
      }
      return here.size;
    });
  const natural = async (flags: string[]) => {
    const out = await spawn(["--trace-gc", "--trace-deopt", ...flags], "natural", id, quick);
    const measured = out.slice(out.indexOf(MARK));
    return {
      mc: (measured.match(/Mark-Compact/g) ?? []).length,
      deopts: (measured.match(/reason: weak objects/g) ?? []).length,
    };
  };
  // The natural-collection runs take seconds each and are left out of a quick run.
  const skipped = { mc: Number.NaN, deopts: Number.NaN };
  const nat = quick ? skipped : await natural([]);
  const noRetain = quick ? skipped : await natural(["--retain-maps-for-n-gc=0"]);
  return {
    variant: id,
    forcedDeopts: median(perGc),
    deoptedFunctions: [...names].sort(),
    steadyUs: steady,
    afterGc30: buckets,
    extraMsPerGc: (buckets.reduce((sum, b) => sum + (b - steady) * 30, 0) * cycles) / 1000,
    naturalMarkCompacts: nat.mc,
    naturalDeopts: nat.deopts,
    noRetainMarkCompacts: noRetain.mc,
    noRetainDeopts: noRetain.deopts,
  };
}

const role = process.env.PEERS_PROBE;
if (role) {
  const [mode, id, speed] = role.split(":") as [string, string, string];
  await child(mode, id, speed === "quick");
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const ids = process.argv.slice(2).length ? process.argv.slice(2) : ["floor", "agent-core", "pi"];
  for (const id of ids) console.log(JSON.stringify(await probe(id)));
}
