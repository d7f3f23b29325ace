import { type Agent, type AgentRun, TimeoutError } from "@agent-core/core";

/**
 * Ends `run` as timed out once it has run `runTimeoutMs` from its `agent_start`, as an agent's own
 * `timeouts.totalMs` would, with a message that names the server's option: passed on as the
 * prompt's `timeouts.totalMs`, the message would name an option the user never set.
 */
export function limitRunTime(agent: Agent, run: AgentRun, runTimeoutMs: number): void {
  if (run.done) return;
  let overTime: ReturnType<typeof setTimeout> | undefined;
  const startTimer = () => {
    const limit = new TimeoutError("total", runTimeoutMs, undefined, "runTimeoutMs");
    overTime = setTimeout(() => run.abort(limit), runTimeoutMs);
  };
  // A run that was not queued behind another has started inside prompt() already.
  if (run.events.some((event) => event.type === "agent_start")) startTimer();
  const stop = agent.on("*", (event) => {
    if (event.runId !== run.runId) return;
    if (event.type === "agent_start") startTimer();
    if (event.type === "agent_end") {
      clearTimeout(overTime);
      stop();
    }
  });
}
