import type { AgentEvent, EventSink } from "@agent-core/core";
import type { Pool } from "pg";

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
  readonly #pool: Pool;
  #pending: AgentEvent[] = [];
  #writing: Promise<void> = Promise.resolve();
  /** The first failed write of each run, until a flush of that run reports it. */
  readonly #failures = new Map<string, unknown>();

  constructor(pool: Pool) {
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
        this.#pending.push(event);
        // The first event since the last batch was taken schedules the next batch.
        if (this.#pending.length === 1) this.#writing = this.#writing.then(() => this.#write());
      },
    };
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
        await this.#insert(rows);
      } catch {
        // One run's bad event must not cost the others theirs: each run's events on their own.
        const byRun = new Map<string, AgentEvent[]>();
        for (const event of rows) {
          const events = byRun.get(event.runId);
          if (events === undefined) byRun.set(event.runId, [event]);
          else events.push(event);
        }
        for (const [runId, events] of byRun)
          await this.#insert(events).catch((error: unknown) => {
            if (!this.#failures.has(runId)) this.#failures.set(runId, error);
          });
      }
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
 * The JSON of an event as `jsonb` takes it: `jsonb` holds no U+0000 and no lone surrogate (a text
 * delta may end inside a surrogate pair), so their escapes become U+FFFD. `JSON.stringify` escapes
 * exactly these (a pair it writes as it is); an escape preceded by an escaped backslash is text.
 */
function storable(json: string): string {
  return json.replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g, "$1\\ufffd");
}
