import { AgentError, errorMessage } from "@agent-core/core";
import pg from "pg";
import { isConnectionError, unreachable } from "./database.js";

/** How often the database is asked whether it answers while calls wait, and how long each ask may take. */
const ASK_EVERY_MS = 1000;
const ASK_TIMEOUT_MS = 5000;

/**
 * Bounds how long the calls of a runtime or a client (`result()`, `start()`, `answer()`,
 * `steer()`, `cancel()`, …) wait on a database that does not answer. DBOS waits for it without
 * end (its operations retry until the connection is back), so such a call would wait forever for
 * a database that stays down. While calls wait, the watch asks the database every second, on a
 * connection of its own (the pool's may all be busy); once it has not answered for `timeoutMs`,
 * every waiting call rejects with `database_unreachable`. What DBOS was doing goes on, and may
 * take effect once the database is back.
 */
export class DatabaseWatch {
  readonly #databaseUrl: string;
  /** How long a call may wait on a database that does not answer: a query's answer too, at most. */
  readonly timeoutMs: number;
  /** How each waiting call gives up. */
  readonly #waiting = new Set<(error: AgentError) => void>();
  #watching = false;
  /** Ends the watch's wait for its next ask, once no call waits. */
  #idle: (() => void) | undefined;
  #connection: Promise<pg.Client> | undefined;

  constructor(databaseUrl: string, timeoutMs: number) {
    this.#databaseUrl = databaseUrl;
    this.timeoutMs = timeoutMs;
  }

  /**
   * What `call` resolves with, unless the database stops answering for `timeoutMs` first; a
   * connection error of its own is `database_unreachable` too.
   */
  async bounded<T>(call: () => Promise<T>): Promise<T> {
    let giveUp!: (error: AgentError) => void;
    const outage = new Promise<never>((_, reject) => {
      giveUp = reject;
    });
    this.#waiting.add(giveUp);
    void this.#watch();
    try {
      return await Promise.race([call(), outage]);
    } catch (error) {
      throw isConnectionError(error) ? unreachable(error) : error;
    } finally {
      this.#waiting.delete(giveUp);
      if (this.#waiting.size === 0) this.#idle?.();
    }
  }

  /** Asks the database every second while calls wait; gives them up once it has not answered for `timeoutMs`. */
  async #watch(): Promise<void> {
    if (this.#watching) return;
    this.#watching = true;
    let downSince: number | undefined;
    while (this.#waiting.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ASK_EVERY_MS);
        this.#idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#idle = undefined;
      if (this.#waiting.size === 0) break;
      const asked = Date.now();
      try {
        await this.#ask();
        downSince = undefined;
      } catch (error) {
        downSince ??= asked;
        if (Date.now() - downSince < this.timeoutMs) continue;
        const gaveUp = new AgentError(
          "database_unreachable",
          `Cannot reach the database for ${this.timeoutMs} ms (databaseTimeoutMs): ${errorMessage(error)}`,
          { cause: error },
        );
        for (const giveUp of this.#waiting) giveUp(gaveUp);
      }
    }
    this.#watching = false;
    // Nothing waits: no connection held for it.
    const connection = this.#connection;
    this.#connection = undefined;
    void connection?.then((client) => client.end()).catch(() => {});
  }

  async #ask(): Promise<void> {
    this.#connection ??= connect(this.#databaseUrl);
    const connection = this.#connection;
    try {
      await (await connection).query("SELECT 1");
    } catch (error) {
      // Made again at the next ask.
      if (this.#connection === connection) this.#connection = undefined;
      void connection.then((client) => client.end()).catch(() => {});
      throw error;
    }
  }
}

async function connect(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: ASK_TIMEOUT_MS,
    query_timeout: ASK_TIMEOUT_MS,
  });
  // Its next query fails instead, and the watch connects again.
  client.on("error", () => {});
  await client.connect();
  return client;
}
