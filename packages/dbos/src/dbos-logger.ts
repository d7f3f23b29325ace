import { failSafeLogger, type Logger } from "@agent-core/core";
import { type ContextualMetadata, DBOS, type DLogger, type StackTrace } from "@dbos-inc/dbos-sdk";

/**
 * DBOS's own log lines (a workflow that failed, a step retried, a recovery), written to an
 * agent-core logger instead of DBOS's console: `{ source: "dbos", runId?, err? }` and the message.
 * A line carries the `runId` of the run it is about where DBOS tells: written inside a run's
 * workflow (each workflow is a run, its id the run's), or about an error that names its run (a
 * `RunFailedError`). DBOS filters nothing when it is given a logger; the logger's levels do. A line
 * the logger cannot write is lost, never DBOS's work.
 */
export function dbosLogger(logger: Logger): DLogger {
  const lines = failSafeLogger(logger);
  const fields = (runId = DBOS.workflowID): Record<string, unknown> =>
    runId === undefined ? { source: "dbos" } : { source: "dbos", runId };
  return {
    info: (entry) => lines.info(fields(), String(entry)),
    debug: (entry) => lines.debug(fields(), String(entry)),
    warn: (entry) => lines.warn(fields(), String(entry)),
    // DBOS hands an error's message as the entry and the error itself as `metadata.error`; it
    // logs a failed workflow's error after the workflow, outside its context.
    error: (entry, metadata?: ContextualMetadata & StackTrace) => {
      const err = metadata?.error;
      if (err === undefined) return lines.error(fields(), String(entry));
      const named = (err as { runId?: unknown }).runId;
      lines.error({ ...fields(typeof named === "string" ? named : undefined), err }, String(entry));
    },
  };
}
