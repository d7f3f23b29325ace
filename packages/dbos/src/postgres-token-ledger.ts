import type { LedgerVerdict, TokenLedger } from "@agent-core/http";
import type { Pool } from "pg";
import { answeringOutages } from "./http-answers.js";

/**
 * The hook-token ledger in PostgreSQL, so single use holds across every server process sharing
 * the database: the first use of a nonce is an insert; a later one reads what the first recorded.
 * Entries go once their token has expired (a sweep at most once a minute). A database out of
 * reach is answered 503 `database-unreachable`, as the durable backend's routes answer it.
 */
export class PostgresTokenLedger implements TokenLedger {
  readonly #pool: Pool;
  readonly #now: () => number;
  #nextSweep = 0;

  constructor(pool: Pool, now: () => number = Date.now) {
    this.#pool = pool;
    this.#now = now;
  }

  async createTable(): Promise<void> {
    await this.#pool.query(`CREATE TABLE IF NOT EXISTS agent_core_hook_tokens (
      nonce text PRIMARY KEY,
      payload text NOT NULL,
      expires_at bigint NOT NULL
    )`);
  }

  use(nonce: string, payload: string, expiresAt: number): Promise<LedgerVerdict> {
    return answeringOutages(() => this.#use(nonce, payload, expiresAt));
  }

  async #use(nonce: string, payload: string, expiresAt: number): Promise<LedgerVerdict> {
    await this.#sweep();
    const inserted = await this.#pool.query(
      "INSERT INTO agent_core_hook_tokens (nonce, payload, expires_at) VALUES ($1, $2, $3) ON CONFLICT (nonce) DO NOTHING",
      [nonce, payload, expiresAt],
    );
    if (inserted.rowCount === 1) return "first";
    const { rows } = await this.#pool.query<{ payload: string }>(
      "SELECT payload FROM agent_core_hook_tokens WHERE nonce = $1",
      [nonce],
    );
    return rows[0]?.payload === payload ? "repeat" : "conflict";
  }

  async #sweep(): Promise<void> {
    const now = this.#now();
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + 60_000;
    await this.#pool.query("DELETE FROM agent_core_hook_tokens WHERE expires_at < $1", [now]);
  }
}
