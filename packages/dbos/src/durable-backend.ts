import { randomUUID } from "node:crypto";
import { ClientToolError, InvalidConfigError, LONGEST_TIMER_MS, refuseUnknownKeys } from "@agent-core/core";
import {
  type AgentRequest,
  type BackendRun,
  HttpError,
  idempotencyKeyReused,
  queueFull,
  type RunBackend,
  type RunOwner,
  type StartKey,
} from "@agent-core/http";
import {
  CONNECT_TIMEOUT_MS,
  checkDatabaseUrl,
  checkReachable,
  connectionPool,
  inTransaction,
  isConnectionError,
  unreachable,
} from "./database.js";
import { queuedMessages, RunEndedError, shown } from "./durable-messages.js";
import type { DurableRuntime } from "./durable-runtime.js";
import { EventFollower } from "./event-follower.js";
import { EventStore } from "./event-store.js";
import { answeringOutages } from "./http-answers.js";
import { PostgresTokenLedger } from "./postgres-token-ledger.js";
import { canNameRun } from "./run-ids.js";
import { runtimeAgents } from "./runtime-options.js";

/** What the backend needs of a `DurableRuntime` (a worker) or a `DurableRunClient` (a server only). */
export type DurableRunControl = Pick<DurableRuntime, "answer" | "steer" | "followUp" | "cancel"> & {
  start(agentName: string, prompt: string, options: { runId: string }): Promise<unknown>;
};

export interface DurableBackendOptions {
  /** The database the workers' runtime uses. */
  databaseUrl: string;
  /** Where runs start and answers go: this process's runtime, or a `DurableRunClient`. */
  runs: DurableRunControl;
  /** The registered agent a request runs. */
  agentName: string | ((request: AgentRequest) => string);
  /** How often a followed run's log is read when no notification came (default 1 s). */
  pollMs?: number;
}

/** A durable backend, and the hook-token ledger every server process on its database shares. */
export interface DurableBackend extends RunBackend {
  readonly ledger: PostgresTokenLedger;
}

/**
 * Runs the HTTP server's runs durably (`createAgentServer({ backend, ledger: backend.ledger })`):
 * a run starts as a workflow any worker may take; its events stream from the durable log, so any
 * server process on the same database serves any run's stream, tool results, steering,
 * follow-ups and cancel. Durable runs outlive their streams. A request that finds the database out
 * of reach answers 503 `database-unreachable` (see `answeringOutages`).
 */
export async function durableBackend(options: DurableBackendOptions): Promise<DurableBackend> {
  checkBackendOptions(options);
  // Out of reach (or no such database), it fails here as `connect()` does: database_unreachable.
  await checkReachable(options.databaseUrl);
  // A request waits for a connection, and for each query's answer, as long as a connect may take,
  // then answers 503: a host that never answers, or went silent, would hold it for ever.
  const pool = connectionPool(options.databaseUrl, 4, {
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    queryTimeoutMs: CONNECT_TIMEOUT_MS,
  });
  const store = new EventStore(pool);
  const ledger = new PostgresTokenLedger(pool);
  try {
    await store.createTable();
    await ledger.createTable();
    await pool.query(`CREATE TABLE IF NOT EXISTS agent_core_run_owners (
      workflow_id text PRIMARY KEY,
      user_id text NOT NULL,
      document_id text
    )`);
    // A start's Idempotency-Key, unique per user while remembered (several NULLs never conflict).
    // Added to the table of a database from before them too.
    await pool.query(`ALTER TABLE agent_core_run_owners
      ADD COLUMN IF NOT EXISTS idempotency_key text,
      ADD COLUMN IF NOT EXISTS request_digest text,
      ADD COLUMN IF NOT EXISTS key_expires_at timestamptz`);
    await pool.query(`CREATE UNIQUE INDEX IF NOT EXISTS agent_core_run_owners_idempotency_key
      ON agent_core_run_owners (user_id, idempotency_key)`);
  } catch (error) {
    // Nothing is left open by a backend that was not made.
    await pool.end();
    throw isConnectionError(error) ? unreachable(error) : error;
  }
  const follower = new EventFollower(store, options.databaseUrl, { pollMs: options.pollMs });
  const { runs } = options;

  /**
   * One run of a workflow: the workflow's own (`<id>`), or a resumption after a wait (`<id>.2`, …).
   * It notes from its events which client calls its suspension waits for, so the result that
   * completes them answers with the resumed run.
   */
  function durableRun(workflowId: string, index: number, owner: RunOwner): BackendRun {
    const runId = index === 1 ? workflowId : `${workflowId}.${index}`;
    let awaiting: Set<string> | undefined;
    return {
      runId,
      owner,
      subscribe(onEvent) {
        const followed = follower.follow(runId, -1, (event) => {
          // With approvals pending too, the run resumes only once they are decided (not over HTTP).
          if (event.type === "agent_end" && event.stopReason === "awaiting_client_tool")
            awaiting =
              (event.pendingApprovals?.length ?? 0) > 0
                ? undefined
                : new Set((event.pendingClientTools ?? []).map((call) => call.toolCallId));
          onEvent(event);
        });
        return { stop: followed.stop, caughtUp: answeringOutages(() => followed.caughtUp) };
      },
      async submitToolResult(toolCallId, outcome) {
        try {
          await answeringOutages(() => runs.answer(workflowId, { kind: "tool-result", toolCallId, outcome }));
        } catch (error) {
          throw error instanceof RunEndedError ? new ClientToolError(error.message) : error;
        }
        if (awaiting === undefined || !awaiting.delete(toolCallId) || awaiting.size > 0) return undefined;
        return durableRun(workflowId, index + 1, owner);
      },
      steer: (message, maxQueued) =>
        queue(runId, workflowId, maxQueued, () => runs.steer(workflowId, message)),
      followUp: (message, maxQueued) =>
        queue(runId, workflowId, maxQueued, () => runs.followUp(workflowId, message)),
      // Resolves once the cancel's messages are stored: the server answers 202 then.
      cancel: () => answeringOutages(() => runs.cancel(workflowId)),
    };
  }

  /**
   * Sends a steering message or a follow-up with `send`, unless the workflow has `maxQueued` of
   * them in the database that it has not received yet: then 429 `queue-full`, as the in-process
   * backend answers. Counted and sent under a lock of the workflow's, held by the connection that
   * counts (the message goes on one of the runtime's or client's), so that posts at once, to any
   * server process, never queue more.
   */
  function queue(runId: string, workflowId: string, maxQueued: number, send: () => Promise<void>) {
    return answeringOutages(() =>
      inTransaction(pool, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
          `agent-core.messages:${workflowId}`,
        ]);
        if ((await queuedMessages(client, workflowId)) >= maxQueued) throw queueFull(runId, maxQueued);
        await ended(send);
      }),
    );
  }

  return {
    runsOutliveStreams: true,
    ledger,
    async start(request, prompt, key) {
      if (request.conversationId !== undefined)
        throw new HttpError(
          400,
          "conversations-unsupported",
          "A durable server runs every prompt as a run of its own: conversationId is not supported.",
        );
      const agentName =
        typeof options.agentName === "function" ? options.agentName(request) : options.agentName;
      const workflowId = await answeringOutages(async () => {
        const id = await owned(randomUUID(), request, key);
        // The key's run may be recorded and not started yet (its start failed after the row was
        // written): started now, once, whichever start gets there first (same id, same run).
        await runs.start(agentName, prompt, { runId: id });
        return id;
      });
      return durableRun(workflowId, 1, { userId: request.userId, documentId: request.documentId });
    },
    find: (runId) => answeringOutages(() => find(runId)),
    async close() {
      await follower.close();
      await pool.end();
    },
  };

  /**
   * Records the owner of a new run `workflowId`, and returns it; with a key the user already gave
   * a run within its TTL, that run's id instead (another body: 409), recording nothing.
   */
  async function owned(
    workflowId: string,
    request: AgentRequest,
    key: StartKey | undefined,
  ): Promise<string> {
    const owner = [workflowId, request.userId, request.documentId ?? null];
    if (key === undefined) {
      await pool.query(
        "INSERT INTO agent_core_run_owners (workflow_id, user_id, document_id) VALUES ($1, $2, $3)",
        owner,
      );
      return workflowId;
    }
    // An expired key is let go of, so that the unique index takes it for the new run.
    await pool.query(
      `UPDATE agent_core_run_owners SET idempotency_key = NULL
        WHERE user_id = $1 AND idempotency_key = $2 AND key_expires_at <= now()`,
      [request.userId, key.key],
    );
    const inserted = await pool.query(
      `INSERT INTO agent_core_run_owners
         (workflow_id, user_id, document_id, idempotency_key, request_digest, key_expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')
       ON CONFLICT (user_id, idempotency_key) DO NOTHING`,
      [...owner, key.key, key.digest, key.ttlMs],
    );
    if (inserted.rowCount === 1) return workflowId;
    const { rows } = await pool.query<{ workflow_id: string; request_digest: string }>(
      "SELECT workflow_id, request_digest FROM agent_core_run_owners WHERE user_id = $1 AND idempotency_key = $2",
      [request.userId, key.key],
    );
    const first = rows[0];
    // Let go of between the two statements (it expired): this start takes it.
    if (first === undefined) return owned(workflowId, request, key);
    if (first.request_digest !== key.digest) throw idempotencyKeyReused();
    return first.workflow_id;
  }

  /** The run of that id, whichever server process started it, once it has begun; else undefined. */
  async function find(runId: string): Promise<BackendRun | undefined> {
    // One PostgreSQL cannot store no run has (a path's %00): asked, it would fail the request (500).
    if (!canNameRun(runId)) return undefined;
    const suffix = /^(.+)\.(\d+)$/.exec(runId);
    const candidates: [string, number][] = [[runId, 1]];
    if (suffix !== null) candidates.push([suffix[1] as string, Number(suffix[2])]);
    for (const [workflowId, index] of candidates) {
      if (index < 1) continue;
      const { rows } = await pool.query<{ user_id: string; document_id: string | null }>(
        "SELECT user_id, document_id FROM agent_core_run_owners WHERE workflow_id = $1",
        [workflowId],
      );
      const row = rows[0];
      if (row === undefined) continue;
      const owner = { userId: row.user_id, documentId: row.document_id ?? undefined };
      // A resumption is known once it has begun.
      if (index === 1) return durableRun(workflowId, index, owner);
      const begun = await pool.query("SELECT 1 FROM agent_core_events WHERE run_id = $1 LIMIT 1", [runId]);
      if (begun.rowCount === 1) return durableRun(workflowId, index, owner);
    }
    return undefined;
  }
}

async function ended(send: () => Promise<void>): Promise<void> {
  try {
    await send();
  } catch (error) {
    if (error instanceof RunEndedError) throw new HttpError(409, "run-ended", error.message);
    throw error;
  }
}

/**
 * Throws `InvalidConfigError` for options no backend could use, before anything is made: a
 * `databaseUrl` that is not `postgres://`, `runs` without the calls the backend makes, an empty
 * `agentName` (or, on a runtime, one it does not have), a `pollMs` that is not a number above 0 (0 would read every followed run's log
 * without pause).
 */
function checkBackendOptions(options: DurableBackendOptions): void {
  if (typeof options !== "object" || options === null)
    throw new InvalidConfigError(`durableBackend()'s options must be an object, got ${shown(options)}.`);
  refuseUnknownKeys("durableBackend() options", options, ["databaseUrl", "runs", "agentName", "pollMs"]);
  checkDatabaseUrl(options.databaseUrl);
  const { runs, agentName, pollMs } = options;
  for (const call of ["start", "answer", "steer", "followUp", "cancel"] as const)
    if (typeof (runs as Partial<DurableRunControl> | null)?.[call] !== "function")
      throw new InvalidConfigError(
        `runs must be a DurableRuntime or a DurableRunClient (its ${call}() is missing), got ${shown(runs)}.`,
      );
  if (typeof agentName !== "function" && (typeof agentName !== "string" || agentName === ""))
    throw new InvalidConfigError(
      `agentName must be a non-empty string or a function of the request, got ${shown(agentName)}.`,
    );
  // On a runtime (a client knows no agents): a name it does not have would fail every start, 500.
  const agents = runtimeAgents.get(runs);
  if (agents !== undefined && typeof agentName === "string" && !Object.hasOwn(agents, agentName))
    throw new InvalidConfigError(
      `agentName "${agentName}" is no agent of the runtime; registered: ${Object.keys(agents).join(", ") || "none"}.`,
    );
  if (pollMs !== undefined && !(typeof pollMs === "number" && pollMs > 0 && pollMs <= LONGEST_TIMER_MS))
    throw new InvalidConfigError(
      `pollMs must be a number of milliseconds above 0, at most 2147483647, got ${shown(pollMs)}.`,
    );
}
