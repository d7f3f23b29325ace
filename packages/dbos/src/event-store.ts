import type { AgentEvent, EventSink, OrchestratorEvent } from "@agent-core/core";
import type { Pool } from "pg";
import { isConnectionError } from "./database.js";

/** The channel `NOTIFY` names the runs with new events on. */
export const EVENTS_CHANNEL = "agent_core_events";

/** Events per `INSERT`: three parameters each, well under PostgreSQL's 65,535 per statement. */
const ROWS_PER_INSERT = 5000;

/**
 * The durable event log: every event of every run in PostgreSQL, keyed by `(run_id, seq)`. A run
 * replayed after a crash publishes its events again with the same seq (its model and tool steps
 * return what they recorded), so a write is `ON CONFLICT DO NOTHING`: each seq is stored once,
 * and the log goes on from where the crashed process left it.
 */
export class EventStore {
  readonly #pool: Pick<Pool, "query">;
  #pending: AgentEvent[] = [];
  #writing: Promise<void> = Promise.resolve();
  /** The first failed write of each run, until a flush of that run reports it. */
  readonly #failures = new Map<string, unknown>();
  /** Whether the events published from now on are dropped (see `stop()`). */
  #stopped = false;

  /** A pool, or one of its connections (to read in that connection's transaction). */
  constructor(pool: Pick<Pool, "query">) {
    this.#pool = pool;
  }

  async createTable(): Promise<void> {
    await this.#pool.query(`CREATE TABLE IF NOT EXISTS agent_core_events (
      run_id text NOT NULL,
      seq integer NOT NULL,
      event jsonb NOT NULL,
      PRIMARY KEY (run_id, seq)
    )`);
  }

  /** A sink for an agent's container: events are written in batches, in order. */
  sink(): EventSink {
    return {
      publish: (event) => {
        if (this.#stopped) return;
        this.#pending.push(event);
        // The first event since the last batch was taken schedules the next batch.
        if (this.#pending.length === 1) this.#writing = this.#writing.then(() => this.#write());
      },
    };
  }

  /**
   * Drops the events published from now on, as a process that died would not store them: the
   * runtime shuts down under the runs executing in it, their steps fail, and what their agents make
   * of that (a failed tool result, `error`, `agent_end`) is no part of the runs. The worker that
   * recovers them publishes their events again from their recorded steps, with the same seq.
   */
  stop(): void {
    this.#stopped = true;
  }

  /**
   * Resolves once every event published so far is stored; rejects if a write of one of `runIds`
   * (default: of any run) failed since the last flush that reported it. The runs of one process
   * share the store: a write that failed for one run fails no other.
   */
  async flush(runIds?: readonly string[]): Promise<void> {
    await this.#writing;
    for (const runId of runIds ?? [...this.#failures.keys()]) {
      if (!this.#failures.has(runId)) continue;
      const failure = this.#failures.get(runId);
      this.#failures.delete(runId);
      throw failure;
    }
  }

  /**
   * Ends the stored log of a workflow whose workflow failed (`RunFailedError`), so that whoever
   * follows it (an HTTP stream, an `EventFollower`) stops: its last run, `<workflowId>.<n>` or the
   * workflow's own, gets the events that end a failed run (see `failedRunEnding`). A run that has
   * its `agent_end` is left as it is.
   */
  async endFailedRun(workflowId: string, failure: { code: string; message: string }): Promise<void> {
    // The events published before the failure are stored first.
    await this.#writing.catch(() => {});
    const runId = await this.lastRun(workflowId);
    const ending = failedRunEnding(runId, await this.read(runId), failure, Date.now());
    if (ending.length > 0) await this.#insert(ending);
  }

  /** The id of the workflow's last run that stored an event: `<workflowId>.<n>`, or its own. */
  async lastRun(workflowId: string): Promise<string> {
    let runId = workflowId;
    // The runs of a workflow are `<id>`, `<id>.2`, `<id>.3`, …: a primary key lookup each.
    for (let index = 2; ; index++) {
      const next = `${workflowId}.${index}`;
      const { rowCount } = await this.#pool.query(
        "SELECT 1 FROM agent_core_events WHERE run_id = $1 LIMIT 1",
        [next],
      );
      if (rowCount === 0) return runId;
      runId = next;
    }
  }

  /**
   * Whether a `tool_result` of the call is stored for one of the runs (`runIds`): a call that has
   * its result waits for nothing again.
   */
  async hasResult(runIds: readonly string[], toolCallId: string): Promise<boolean> {
    const { rowCount } = await this.#pool.query(
      `SELECT 1 FROM agent_core_events WHERE run_id = ANY($1)
       AND event->>'type' = 'tool_result' AND event->>'toolCallId' = $2 LIMIT 1`,
      [runIds, toolCallId],
    );
    return rowCount === 1;
  }

  /** The run's last stored event, if any. */
  async last(runId: string): Promise<AgentEvent | undefined> {
    const { rows } = await this.#pool.query<{ event: AgentEvent }>(
      "SELECT event FROM agent_core_events WHERE run_id = $1 ORDER BY seq DESC LIMIT 1",
      [runId],
    );
    return rows[0]?.event;
  }

  /** The stored events of a run after `after`, in seq order. */
  async read(runId: string, after = -1): Promise<AgentEvent[]> {
    const { rows } = await this.#pool.query<{ event: AgentEvent }>(
      "SELECT event FROM agent_core_events WHERE run_id = $1 AND seq > $2 ORDER BY seq",
      [runId, after],
    );
    return rows.map((row) => row.event);
  }

  async #write(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    for (let from = 0; from < batch.length; from += ROWS_PER_INSERT) {
      const rows = batch.slice(from, from + ROWS_PER_INSERT);
      try {
        await this.#stored(rows);
      } catch {
        // One run's bad event must not cost the others theirs: each run's events on their own.
        const byRun = new Map<string, AgentEvent[]>();
        for (const event of rows) {
          const events = byRun.get(event.runId);
          if (events === undefined) byRun.set(event.runId, [event]);
          else events.push(event);
        }
        for (const [runId, events] of byRun)
          await this.#stored(events).catch((error: unknown) => {
            if (!this.#failures.has(runId)) this.#failures.set(runId, error);
          });
      }
    }
  }

  /**
   * Inserts the events, again and again while the database is out of reach (a restart, a
   * failover): the run waits for it meanwhile anyway (DBOS records its steps once it is back), so
   * they are stored late, in order, rather than lost, which would leave a gap in the log and fail
   * the run.
   */
  async #stored(batch: readonly AgentEvent[]): Promise<void> {
    for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 2000)) {
      try {
        return await this.#insert(batch);
      } catch (error) {
        if (!isConnectionError(error)) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }

  async #insert(batch: readonly AgentEvent[]): Promise<void> {
    const values: unknown[] = [];
    const rows = batch.map((event, i) => {
      values.push(event.runId, event.seq, storable(JSON.stringify(event)));
      return `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`;
    });
    // Followers in any process (`EventFollower`) are told which runs have new events.
    await this.#pool.query(
      `WITH stored AS (
        INSERT INTO agent_core_events (run_id, seq, event) VALUES ${rows.join(", ")}
        ON CONFLICT DO NOTHING RETURNING run_id
      )
      SELECT pg_notify('${EVENTS_CHANNEL}', run_id) FROM (SELECT DISTINCT run_id FROM stored) AS runs`,
      values,
    );
  }
}

/**
 * The events that end the stored log of a run whose workflow failed, after `stored` (its events so
 * far): `agent_start` if it has none, a `tool_result` (status `error`) for each call it left
 * without one, a `turn_end` (an empty assistant message) for a turn it left open, then `error`
 * with the failure's code and message and `agent_end` (`stopReason: "error"`, zero usage: what the
 * run used is not known here). None when it has its `agent_end`.
 */
export function failedRunEnding(
  runId: string,
  stored: readonly AgentEvent[],
  failure: { code: string; message: string },
  now: number,
): AgentEvent[] {
  const last = stored.at(-1);
  if (last?.type === "agent_end") return [];
  let seq = last === undefined ? 0 : last.seq + 1;
  const ts = Math.max(now, last?.ts ?? 0);
  const open = new Map<string, string>();
  let turnStartedAt: number | undefined;
  for (const event of stored)
    if (event.type === "tool_call") open.set(event.toolCallId, event.toolName);
    else if (event.type === "tool_result") open.delete(event.toolCallId);
    else if (event.type === "turn_start") turnStartedAt = event.ts;
    else if (event.type === "turn_end") turnStartedAt = undefined;
  const ending: AgentEvent[] = [];
  const add = (event: OrchestratorEvent) => ending.push({ ...event, runId, seq: seq++, ts } as AgentEvent);
  if (last === undefined) add({ type: "agent_start" });
  for (const [toolCallId, toolName] of open)
    add({
      type: "tool_result",
      toolCallId,
      toolName,
      status: "error",
      error: `not finished: ${failure.message}`,
    });
  if (turnStartedAt !== undefined)
    add({
      type: "turn_end",
      message: { role: "assistant", content: [], stopReason: "error", timestamp: ts },
      durationMs: ts - turnStartedAt,
    });
  add({ type: "error", code: failure.code, message: failure.message });
  const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  add({ type: "agent_end", stopReason: "error", usage, durationMs: ts - (stored[0]?.ts ?? ts) });
  return ending;
}

/**
 * The JSON of an event as `jsonb` takes it: `jsonb` holds no U+0000 and no lone surrogate (a text
 * delta may end inside a surrogate pair), so their escapes become U+FFFD. `JSON.stringify` escapes
 * exactly these (a pair it writes as it is); an escape preceded by an escaped backslash is text.
 */
function storable(json: string): string {
  return json.replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g, "$1\\ufffd");
}
