import type pg from "pg";
import { ownConnection } from "./database.js";
import { CANCEL_CHANNEL, MESSAGES } from "./durable-messages.js";
import type { ExecutingRun } from "./durable-run.js";

/** A worker's way for cancels to reach the runs it executes: a `LISTEN` connection, kept up. */
export class CancelListener {
  readonly #databaseUrl: string;
  readonly #pool: Pick<pg.Pool, "query">;
  /** The runs executing in this process, by workflow id (the runtime's, read when a cancel comes). */
  readonly #executing: ReadonlyMap<string, ExecutingRun>;
  #client: pg.Client | undefined;
  #closing = false;

  constructor(
    databaseUrl: string,
    pool: Pick<pg.Pool, "query">,
    executing: ReadonlyMap<string, ExecutingRun>,
  ) {
    this.#databaseUrl = databaseUrl;
    this.#pool = pool;
    this.#executing = executing;
  }

  /**
   * The connection the cancels' `NOTIFY` reach this worker on. When it drops (a restart or a
   * failover of the database), it is made again, and the runs executing here whose cancel came
   * meanwhile are aborted then: without it, no cancel would reach a running run of this worker.
   */
  async listen(): Promise<void> {
    // One that does not connect within CONNECT_TIMEOUT_MS fails, and is made again: a host that
    // never answers would hold it, and with it every cancel's NOTIFY, for ever.
    const listener = ownConnection(this.#databaseUrl);
    listener.on("notification", ({ payload }) => {
      if (payload !== undefined) this.#executing.get(payload)?.cancel();
    });
    let lost = false;
    const reconnect = () => {
      if (lost || this.#closing) return;
      lost = true;
      void listener.end().catch(() => {});
      this.#relisten(100);
    };
    listener.on("error", reconnect);
    listener.on("end", reconnect);
    try {
      await listener.connect();
      await listener.query(`LISTEN ${CANCEL_CHANNEL}`);
    } catch (error) {
      lost = true;
      await listener.end().catch(() => {});
      throw error;
    }
    this.#client = listener;
    // Shut down while it connected: it listens for no one.
    if (this.#closing) await listener.end().catch(() => {});
  }

  /** Listens again after `delayMs` (doubling up to 5 s while the database is away). */
  #relisten(delayMs: number): void {
    this.#client = undefined;
    const timer = setTimeout(async () => {
      if (this.#closing) return;
      try {
        await this.listen();
        await this.#abortCancelledMeanwhile();
      } catch {
        this.#relisten(Math.min(delayMs * 2, 5000));
      }
    }, delayMs);
    timer.unref();
  }

  /** The runs executing here with a cancel waiting as a message: their `NOTIFY` may be lost. */
  async #abortCancelledMeanwhile(): Promise<void> {
    const executing = [...this.#executing.keys()];
    if (executing.length === 0) return;
    const { rows } = await this.#pool.query<{ workflow_id: string }>(
      `SELECT DISTINCT destination_uuid AS workflow_id FROM dbos.notifications
       WHERE destination_uuid = ANY($1) AND topic = $2 AND NOT consumed AND message LIKE '%"queue":"cancel"%'`,
      [executing, MESSAGES],
    );
    for (const { workflow_id } of rows) this.#executing.get(workflow_id)?.cancel();
  }

  /** The worker shuts down: a connection lost from now on is not made again. */
  closing(): void {
    this.#closing = true;
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#client?.end().catch(() => {});
  }
}
