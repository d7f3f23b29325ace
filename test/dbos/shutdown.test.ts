import { DurableRuntime } from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import { Agent, InvalidConfigError } from "agent-core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gateTool } from "./harness.js";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// A runtime that shuts down while a run executes in it stops the run where it is, as a crash
// would, and leaves it to the next worker that launches: the run did not fail. (A file of its
// own: DBOS, and so a runtime, is one per process.)

let postgres: ThrowawayPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);

afterAll(() => postgres?.stop());

describe("a durable runtime shut down while a run executes in it", () => {
  it("leaves the run to the next worker: its log is not ended as a failed run's, its result() says the runtime shut down", async () => {
    const databaseUrl = await postgres.createDatabase("agent_core_shut_mid_run");
    const { gate, reached, open } = gateTool();
    const runtime = new DurableRuntime({
      databaseUrl,
      agents: {
        waiter: () =>
          new Agent({
            provider: scriptedModel([[script.toolCall("gate", {}, { id: "w1" })], [script.text("Done.")]]),
            tools: [gate],
          }),
      },
    });
    await runtime.launch();
    const run = await runtime.start("waiter", "Wait", { runId: "shut-mid-run" });
    const result = run.result();
    await reached;
    // The tool ends while DBOS shuts down: its step can no longer be recorded.
    const stopped = runtime.shutdown();
    open();
    await stopped;
    await expect(result).rejects.toThrow(
      new InvalidConfigError(
        'This runtime shut down before run "shut-mid-run" ended: the next worker that launches goes on with it.',
      ),
    );

    const database = new pg.Client({ connectionString: databaseUrl });
    await database.connect();
    try {
      const { rows: events } = await database.query<{ type: string }>(
        "SELECT event->>'type' AS type FROM agent_core_events WHERE run_id = $1 ORDER BY seq",
        ["shut-mid-run"],
      );
      expect(events.map((event) => event.type)).not.toContain("agent_end");
      expect(events.map((event) => event.type)).not.toContain("error");
      const { rows: statuses } = await database.query<{ status: string }>(
        "SELECT status FROM dbos.workflow_status WHERE workflow_uuid = $1",
        ["shut-mid-run"],
      );
      expect(statuses).toEqual([{ status: "PENDING" }]);
    } finally {
      await database.end();
    }
  }, 60_000);
});
