import { agentic } from "@agent-core/agentic";
import { DurableRuntime } from "@agent-core/dbos";
import { planExecute } from "@agent-core/plan-execute";
import { type ConformanceOptions, describeOrchestratorConformance } from "@agent-core/testing/conformance";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reflect } from "../../examples/custom-orchestrator/index.js";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// The orchestrator conformance suite on the durable runtime: every run a DBOS workflow whose
// model and tool calls are recorded steps, against a throwaway PostgreSQL. No orchestrator knows.

let postgres: ThrowawayPostgres;
let runtime: DurableRuntime;

beforeAll(async () => {
  postgres = await startPostgres();
  await postgres.createDatabase("agent_core_conformance");
  runtime = new DurableRuntime({ databaseUrl: postgres.url("agent_core_conformance"), agents: {} });
  await runtime.launch();
}, 60_000);

afterAll(async () => {
  await runtime?.shutdown();
  postgres?.stop();
});

const durably: ConformanceOptions = {
  prompt: (agent, input) => runtime.prompt(agent, input),
  // A durable run waits for a DBOS message: its workflow (the prompt's run id) resumes the batch
  // as a new run, `<runId>.2`, once every call is answered.
  approve: (_agent, toolCallId, run) =>
    runtime.answer(run.runId, { kind: "approval", toolCallId, approved: true }),
};

describeOrchestratorConformance("agentic, durable", () => agentic(), durably);
describeOrchestratorConformance("plan-execute, durable", () => planExecute(), durably);
describeOrchestratorConformance("reflect (examples/custom-orchestrator), durable", () => reflect(), durably);

describe("the durable conformance runs", () => {
  it("were workflows with recorded steps, their events in the durable log", async () => {
    const pool = new pg.Pool({ connectionString: postgres.url("agent_core_conformance"), max: 1 });
    try {
      const { rows: logged } = await pool.query(
        "SELECT count(DISTINCT run_id)::int AS runs FROM agent_core_events",
      );
      const { rows: resumed } = await pool.query(
        "SELECT count(DISTINCT run_id)::int AS runs FROM agent_core_events WHERE run_id LIKE '%.2'",
      );
      const { rows: steps } = await pool.query(
        "SELECT count(*)::int AS steps FROM dbos.operation_outputs WHERE function_name LIKE 'agent-core.%'",
      );
      // Every check above ran at least one workflow, and the approvals check the run that resumed
      // each orchestrator's batch after its approval (`<runId>.2`); most ran model and tool steps.
      expect(resumed[0].runs).toBeGreaterThanOrEqual(3);
      expect(logged[0].runs).toBeGreaterThanOrEqual(33);
      expect(steps[0].steps).toBeGreaterThan(logged[0].runs * 2);
    } finally {
      await pool.end();
    }
  });
});
