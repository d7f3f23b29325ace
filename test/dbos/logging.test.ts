import { DurableRunClient, type DurableRuntime, RunFailedError } from "@agent-core/dbos";
import type { Logger } from "agent-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DurableWorker } from "./harness.js";
import type { ThrowawayPostgres } from "./throwaway-postgres.js";

// DBOS logs what happens to its workflows (a workflow that failed, a step retried, a recovery).
// Those lines go to the runtime's (and a client's) `logger`, never to the console: a library that
// writes to the console of the application that runs it cannot be silenced.

/** A logger that keeps its lines, by level. */
function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const level =
    (name: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      lines.push({ level: name, fields, message });
    };
  const logger: Logger = {
    error: level("error"),
    warn: level("warn"),
    info: level("info"),
    debug: level("debug"),
  };
  return { logger, lines };
}

const runtimeLog = recordingLogger();
const worker = new DurableWorker();
let databaseUrl: string;
let postgres: ThrowawayPostgres;
let runtime: DurableRuntime;
const consoleWrites: unknown[][] = [];

beforeAll(async () => {
  for (const method of ["log", "info", "warn", "error", "debug"] as const)
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      consoleWrites.push([method, ...args]);
    });
  ({ databaseUrl, runtime, postgres } = await worker.start("agent_core_logging", {
    agents: {
      broken: () => {
        throw new Error("no API key for the provider");
      },
    },
    // The queue a client's runs start through.
    queue: {},
    logger: runtimeLog.logger,
  }));
});

afterAll(async () => {
  await worker.stop();
  vi.restoreAllMocks();
});

describe("DBOS's own log lines", () => {
  it("go to the runtime's logger, with source and the run's id, and none to the console", async () => {
    const run = await runtime.start("broken", "Hi.", { runId: "logged-failure" });
    await expect(run.result()).rejects.toBeInstanceOf(RunFailedError);
    const failure = runtimeLog.lines.find(
      (line) => line.level === "error" && line.fields.runId === "logged-failure",
    );
    expect(failure).toMatchObject({
      fields: { source: "dbos", runId: "logged-failure", err: expect.any(RunFailedError) },
      message:
        'Durable run "logged-failure" failed: The factory of agent "broken" threw: no API key for the provider',
    });
    expect(runtimeLog.lines.every((line) => line.fields.source === "dbos")).toBe(true);
    expect(consoleWrites).toEqual([]);
  });

  it("of a client go to its own logger (a connection the database dropped); one that throws loses its line, never the client's work", async () => {
    let written = 0;
    const lost = () => {
      written++;
      throw new Error("the log disk is full");
    };
    const throwing: Logger = { error: lost, warn: lost, info: lost, debug: lost };
    const client = await DurableRunClient.connect({ databaseUrl, logger: throwing });
    try {
      const runId = await client.start("broken", "Hi.", { runId: "client-logged" });
      await expect(client.result(runId)).rejects.toBeInstanceOf(RunFailedError);
      // The database goes away under the client's idle connections: DBOS warns of each.
      postgres.halt();
      await vi.waitFor(() => expect(written).toBeGreaterThan(0), { timeout: 10_000 });
    } finally {
      postgres.restart();
      await client.close();
    }
    expect(consoleWrites).toEqual([]);
  });
});
