import fc from "fast-check";
import { type Mode, raceCase } from "./generators.js";
import { runCase } from "./harness.js";
import { checkInvariants, describeFailures, type InvariantName, invariants } from "./invariants.js";

/**
 * The race property of one mode, run by fast-check with settings from the environment:
 * `FUZZ_SEED` (default fixed, so the test command is reproducible), `FUZZ_RUNS` (cases per mode),
 * `FUZZ_PATH` (replays a counterexample reported with its seed), `FUZZ_ONLY` (a comma-separated list
 * of invariants to check, to look past a known failure while fixing another), `FUZZ_TIME_LIMIT_MS`.
 */

export const DEFAULT_SEED = 20_260_101;
/** Per mode: 300 cases in the test command, a few seconds. */
export const DEFAULT_RUNS = 100;
/** Bounds the search plus the shrinking of a failure; a run stopped short of `FUZZ_RUNS` fails. */
const DEFAULT_TIME_LIMIT_MS = 40_000;

export class FuzzConfigError extends Error {
  override name = "FuzzConfigError";
}

/**
 * fast-check's options for a property whose every case is a whole HTTP exchange on loopback: the
 * seed and replay path of `FUZZ_SEED` / `FUZZ_PATH`, a quarter of `FUZZ_RUNS` cases.
 */
export function httpFuzzOptions(settings: FuzzSettings = fuzzSettings()) {
  return {
    seed: settings.seed,
    numRuns: Math.max(1, Math.round(settings.numRuns / 4)),
    path: settings.path,
    endOnFailure: true,
  };
}

export interface FuzzSettings {
  seed: number;
  numRuns: number;
  path: string | undefined;
  only: InvariantName[] | undefined;
  timeLimitMs: number;
}

export function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min)
    throw new FuzzConfigError(`${name} must be a whole number >= ${min}, got ${JSON.stringify(raw)}.`);
  return value;
}

export function fuzzSettings(env: NodeJS.ProcessEnv = process.env): FuzzSettings {
  const path = env.FUZZ_PATH || undefined;
  if (path !== undefined && !/^\d+(:\d+)*$/.test(path))
    throw new FuzzConfigError(
      `FUZZ_PATH must look like "12:0:3" (as reported), got ${JSON.stringify(path)}.`,
    );
  if (path !== undefined && !env.FUZZ_SEED)
    throw new FuzzConfigError("FUZZ_PATH replays a counterexample of one seed: set FUZZ_SEED too.");
  const numRuns = wholeNumber(env, "FUZZ_RUNS", DEFAULT_RUNS, 1);
  const only = env.FUZZ_ONLY ? env.FUZZ_ONLY.split(",").map((name) => name.trim()) : undefined;
  const unknown = only?.filter((name) => !(name in invariants));
  if (unknown?.length)
    throw new FuzzConfigError(
      `FUZZ_ONLY names unknown invariant(s) ${unknown.join(", ")}; known: ${Object.keys(invariants).join(", ")}.`,
    );
  return {
    seed: wholeNumber(env, "FUZZ_SEED", DEFAULT_SEED, -(2 ** 31)),
    numRuns,
    path,
    only: only as InvariantName[] | undefined,
    // A long run (`pnpm fuzz`) gets the time it needs.
    timeLimitMs: wholeNumber(env, "FUZZ_TIME_LIMIT_MS", Math.max(DEFAULT_TIME_LIMIT_MS, numRuns * 150), 1),
  };
}

/** The name `vitest -t` selects a mode's property by. */
export const propertyName = (mode: Mode) => `race property: ${mode}`;

/** Runs the property; throws the report (seed, path, shrunk case, what broke, how to replay) on failure. */
export async function checkRaceProperty(mode: Mode, settings: FuzzSettings = fuzzSettings()): Promise<void> {
  const property = fc.asyncProperty(raceCase(mode), async (race) => {
    const observation = await runCase(race);
    const failures = checkInvariants(observation, settings.only);
    if (failures.length > 0) throw new Error(describeFailures(observation, failures));
  });
  const details = await fc.check(property, {
    seed: settings.seed,
    numRuns: settings.numRuns,
    ...(settings.path === undefined ? {} : { path: settings.path }),
    plugins: [fc.interruptAfterTimeLimit(settings.timeLimitMs, { failOnInterrupt: true })],
  });
  if (!details.failed) return;
  const only = settings.only ? `FUZZ_ONLY=${settings.only.join(",")} ` : "";
  const replay = details.counterexamplePath
    ? `Replay: ${only}FUZZ_SEED=${details.seed} FUZZ_PATH=${details.counterexamplePath} pnpm fuzz -t "${propertyName(mode)}"`
    : `Rerun: ${only}FUZZ_SEED=${details.seed} pnpm fuzz -t "${propertyName(mode)}"`;
  const cause =
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(`${replay}\n\n${fc.defaultReportMessage(details) ?? ""}\n\n${cause}\n\n${replay}`);
}
