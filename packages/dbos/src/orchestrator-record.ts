import { type Agent, AgentError } from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";

/**
 * Records the orchestrator a run starts with and when (a step: a resumed run reads the record, and
 * its clock starts there) and refuses to go on with another orchestrator: a changed loop could
 * take another path through the recorded steps. `live` is called when the step runs (the
 * workflow's first execution), not when it is replayed.
 */
export async function checkOrchestrator(agent: Agent, live: () => void): Promise<number> {
  const current = `${agent.orchestrator.name}@${agent.orchestrator.version ?? "unversioned"}`;
  const started = await DBOS.runStep(
    async () => {
      live();
      return { orchestrator: current, at: Date.now() };
    },
    { name: "agent-core.orchestrator" },
  );
  if (started.orchestrator !== current) throw new OrchestratorVersionError(started.orchestrator, current);
  return started.at;
}

/**
 * A durable run resumed by a process whose orchestrator is not the one the run started with: its
 * workflow fails there (`RunFailedError`), for good.
 */
export class OrchestratorVersionError extends AgentError {
  constructor(started: string, current: string) {
    super(
      "orchestrator_version",
      `This run started with orchestrator ${started}; this process has ${current}, which could take another path through its recorded steps, so the run ends here. Keep workers with ${started} until their runs end (see docs/durable-runs.md, "Upgrading").`,
    );
  }
}
