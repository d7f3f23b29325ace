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
      BENCH_ONLY: "cycles,one-call,concurrent",
      BENCH_CYCLES: "3",
      BENCH_ROUNDS: "2",
      BENCH_ROUND_MS: "2",
      BENCH_PROCESSES: "2",
      BENCH_CONCURRENT_RUNS: "4",
      BENCH_CONCURRENT_ROUNDS: "2",
    });
    const sections = [
      {
        title: "agent-core bench: 3 tool cycles per run, 2 processes × 2 interleaved rounds",
        rows: {
          "µs per tool cycle": [
            "bare loop, scripted model",
            "agentic, scripted model",
            "bare loop, lean model",
            "agentic, lean model",
          ],
          "ratio agentic / bare": ["ratio, scripted model (target)", "ratio, lean model"],
        },
        processMedians: ["scripted model", "lean model"],
      },
      {
        title:
          "one-call run (one model call answering with text, lean model), 2 processes × 2 interleaved rounds",
        rows: {
          "µs per run": [
            "bare loop, one call",
            "agentic, fresh agent per run",
            "agentic, reused agent, reset()",
          ],
          "ratio agentic / bare": ["ratio, one-call run, fresh agent", "ratio, one-call run, reused agent"],
        },
        processMedians: ["one-call run, fresh agent", "one-call run, reused agent"],
      },
      {
        title:
          "4 concurrent runs of 5 tool cycles, 2 ms model latency (lean model), 2 processes × 2 interleaved rounds",
        rows: {
          "ms per 4 runs at once": ["bare loops, concurrent", "agentic, concurrent"],
          "MB peak RSS growth": ["bare loops, concurrent", "agentic, concurrent"],
          "ratio agentic / bare, wall time": ["ratio, concurrent runs"],
        },
        processMedians: ["concurrent runs"],
      },
    ];
    const lines = stdout.split("\n");
    let at = -1;
    for (const { title, rows, processMedians } of sections) {
      at = next(lines, at, (line) => line.startsWith(title));
      // Each table in order, under its header, every row's min / median / max a number.
      for (const [header, labels] of Object.entries(rows)) {
        at = next(lines, at, (line) => new RegExp(`^${escapeRegExp(header)} +min +median +max$`).test(line));
        for (const label of labels) {
          at += 1;
          expect(lines[at]).toMatch(
            new RegExp(`^${escapeRegExp(label)} +(\\d+\\.\\d\\d +){2}\\d+\\.\\d\\d$`),
          );
        }
      }
      for (const label of processMedians) {
        at += 1;
        expect(lines[at]).toMatch(
          new RegExp(
            `^median ratio of each process, ${escapeRegExp(label)} +\\d+\\.\\d\\d {2}\\d+\\.\\d\\d$`,
          ),
        );
      }
      if (title.startsWith("agent-core bench"))
        expect(lines[++at]).toMatch(/^(within|ABOVE) the 1\.5x target$/);
    }
  }, 90_000); // twelve processes, each loading tsx: more than the default 15 s on a busy host

  it("compares tracing off, the default with no provider, and tracing on, per tool cycle and per run", async () => {
    const { stdout } = await bench({
      BENCH_ONLY: "tracing,tracing-one-call",
      BENCH_CYCLES: "3",
      BENCH_ROUNDS: "2",
      BENCH_ROUND_MS: "2",
      BENCH_PROCESSES: "1",
    });
    const lines = stdout.split("\n");
    let at = -1;
    for (const [title, unit, suffix] of [
      ["tracing: 3 tool cycles per run (lean model)", "µs per tool cycle", ""],
      ["tracing: one-call run (lean model)", "µs per run", ", one call"],
    ] as const) {
      at = next(lines, at, (line) => line.startsWith(title));
      expect(lines[++at]).toMatch(new RegExp(`^${unit} +min +median +max$`));
      for (const label of [
        "agentic, tracing off (noTracing)",
        "agentic, default, no provider registered",
        "agentic, tracing on, in-memory exporter",
      ])
        expect(lines[++at]).toMatch(
          new RegExp(`^${escapeRegExp(label)} +(\\d+\\.\\d\\d +){2}\\d+\\.\\d\\d$`),
        );
      expect(lines[++at]).toMatch(/^ratio to tracing off +min +median +max$/);
      for (const label of [`ratio, no provider${suffix}`, `ratio, in-memory exporter${suffix}`])
        expect(lines[++at]).toMatch(
          new RegExp(`^${escapeRegExp(label)} +(\\d+\\.\\d\\d +){2}\\d+\\.\\d\\d$`),
        );
    }
  }, 60_000);

  it("runs only the workloads BENCH_ONLY names", async () => {
    const { stdout } = await bench({
      BENCH_ONLY: "one-call",
      BENCH_ROUNDS: "2",
      BENCH_ROUND_MS: "2",
      BENCH_PROCESSES: "1",
    });
    expect(stdout).toMatch(/^one-call run /);
    expect(stdout).not.toContain("tool cycles");
  });

  it("refuses an option that is not a whole number >= 1, naming it", async () => {
    for (const name of ["BENCH_PROCESSES", "BENCH_CONCURRENT_RUNS", "BENCH_CONCURRENT_ROUNDS"])
      expect(await failure({ [name]: "0" })).toContain(
        `RangeError: ${name} must be a whole number >= 1, got "0".`,
      );
  });

  it("refuses a workload it does not have, naming the ones it has", async () => {
    expect(await failure({ BENCH_ONLY: "one-call,cycle" })).toContain(
      'RangeError: BENCH_ONLY must list workloads among cycles, one-call, concurrent, tracing, tracing-one-call, got "one-call,cycle".',
    );
  });
});

/** The bench's stderr when it fails as it should, at once and with exit code 1. */
async function failure(env: Record<string, string>): Promise<string | undefined> {
  const error = await bench(env).then(
    () => undefined,
    (error: { code?: number; stderr?: string }) => error,
  );
  expect(error?.code).toBe(1);
  return error?.stderr;
}

/** The index of the first line after `from` that `matches`; fails the test if there is none. */
function next(lines: string[], from: number, matches: (line: string) => boolean): number {
  const at = lines.findIndex((line, i) => i > from && matches(line));
  expect(at, `a line after ${JSON.stringify(lines[from])} matching ${matches}`).toBeGreaterThan(from);
  return at;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
