import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// `pnpm bench` as a user runs it, shrunk to a few milliseconds: it must keep running and report
// every figure the docs quote. The figures themselves are timings, so they are not asserted here.

const root = join(import.meta.dirname, "..");

function bench(env: Record<string, string>) {
  return promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", "bench/agentic-loop.bench.ts"],
    { cwd: root, env: { ...process.env, ...env }, timeout: 60_000 },
  );
}

describe("the benchmark", () => {
  it("pools every process of each comparison and prints the ratios and each process's median", async () => {
    const { stdout } = await bench({
      BENCH_CYCLES: "3",
      BENCH_ROUNDS: "2",
      BENCH_ROUND_MS: "2",
      BENCH_PROCESSES: "2",
    });
    expect(stdout).toContain("3 tool cycles per run, 2 processes × 2 interleaved rounds");
    for (const row of [
      "bare loop, scripted model",
      "agentic, scripted model",
      "bare loop, lean model",
      "agentic, lean model",
      "ratio, scripted model (target)",
      "ratio, lean model",
    ])
      expect(stdout).toMatch(new RegExp(`^${escapeRegExp(row)} +(\\d+\\.\\d\\d +){2}\\d+\\.\\d\\d$`, "m"));
    expect(stdout).toMatch(/^median ratio of each process, scripted model +\d+\.\d\d {2}\d+\.\d\d$/m);
    expect(stdout).toMatch(/^median ratio of each process, lean model +\d+\.\d\d {2}\d+\.\d\d$/m);
    expect(stdout).toMatch(/^(within|ABOVE) the 1\.5x target$/m);
  });

  it("refuses an option that is not a whole number >= 1, naming it", async () => {
    const failure = await bench({ BENCH_PROCESSES: "0" }).then(
      () => undefined,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('RangeError: BENCH_PROCESSES must be a whole number >= 1, got "0".');
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
