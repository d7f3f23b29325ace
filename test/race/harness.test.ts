import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Mode, raceCase } from "./generators.js";
import { type Observation, runCase } from "./harness.js";
import { DEFAULT_RUNS, DEFAULT_SEED, FuzzConfigError, fuzzSettings } from "./property.js";

/**
 * Read from the core's clock, which may not be the faked `Date` (one that kept a reference to the
 * real `Date.now`, or a monotonic one for durations): they may differ between two replays.
 */
const REAL_TIME = new Set(["metrics", "durationMs", "ts", "timestamp"]);

/**
 * Everything a case produced, with run ids (random) replaced by run labels, and so the part of
 * plan-execute's call ids made from them, and real-time figures left out.
 */
function transcript(observation: Observation): string {
  let text = JSON.stringify(
    {
      actions: observation.actions,
      events: observation.heard,
      history: observation.finalHistory,
      results: observation.runs.map((record) => [record.result?.stopReason, record.settledAt]),
    },
    (key, value) => (REAL_TIME.has(key) ? undefined : typeof value === "bigint" ? String(value) : value),
  );
  for (const record of observation.runs) text = text.replaceAll(record.run.runId, record.label);
  // Plan-execute's call ids start with a hash of the (random) run id: p<8 hex digits>_<turn>_<step>.
  return text.replace(/\bp[0-9a-f]{8}_(?=\d+_)/g, "p<run>_");
}

describe("the race harness", () => {
  it.each<Mode>(["sequential", "parallel", "plan-execute"])(
    "replays a %s case exactly: same events, times, history and endings",
    async (mode) => {
      for (const race of fc.sample(raceCase(mode), { seed: 7, numRuns: 20 })) {
        const once = transcript(await runCase(race));
        expect(transcript(await runCase(race))).toBe(once);
      }
    },
  );

  it("reads its settings from the environment, with fixed defaults", () => {
    expect(fuzzSettings({})).toEqual({
      seed: DEFAULT_SEED,
      numRuns: DEFAULT_RUNS,
      path: undefined,
      only: undefined,
      timeLimitMs: 40_000,
    });
    expect(
      fuzzSettings({
        FUZZ_SEED: "-3",
        FUZZ_RUNS: "3000",
        FUZZ_PATH: "4:0:1",
        FUZZ_ONLY: "seqGapless, openAIShape",
      }),
    ).toEqual({
      seed: -3,
      numRuns: 3000,
      path: "4:0:1",
      only: ["seqGapless", "openAIShape"],
      timeLimitMs: 450_000,
    });
  });

  it("rejects settings it cannot use, saying what is wrong", () => {
    expect(() => fuzzSettings({ FUZZ_RUNS: "lots" })).toThrow(
      new FuzzConfigError('FUZZ_RUNS must be a whole number >= 1, got "lots".'),
    );
    expect(() => fuzzSettings({ FUZZ_PATH: "4:0" })).toThrow(/set FUZZ_SEED too/);
    expect(() => fuzzSettings({ FUZZ_SEED: "1", FUZZ_PATH: "four" })).toThrow(/FUZZ_PATH must look like/);
    expect(() => fuzzSettings({ FUZZ_ONLY: "seqGapless,noDeadlock" })).toThrow(
      /unknown invariant\(s\) noDeadlock; known: startsAndEndsOnce, /,
    );
  });
});
