import { ExpiringEntries } from "./expiring-entries.js";

/** What the ledger answers for a token's use. */
export type LedgerVerdict = "first" | "repeat" | "conflict";

/**
 * Which hook tokens were used, and with what payload: single use is enforced here, not by the
 * signature. In memory by default (one process); entries go once their token has expired, by a timer (after
 * that the token is refused as expired anyway). A durable ledger implements the same interface.
 */
export interface TokenLedger {
  /** Records the first use of `nonce` with `payload` (a digest); a later use is a repeat or a conflict. */
  use(nonce: string, payload: string, expiresAt: number): LedgerVerdict | Promise<LedgerVerdict>;
}

export class MemoryTokenLedger implements TokenLedger {
  readonly #used: ExpiringEntries<string>;

  constructor(now: () => number = Date.now) {
    this.#used = new ExpiringEntries(now);
  }

  get size(): number {
    return this.#used.size;
  }

  use(nonce: string, payload: string, expiresAt: number): LedgerVerdict {
    const used = this.#used.get(nonce);
    if (used !== undefined) return used === payload ? "repeat" : "conflict";
    this.#used.set(nonce, payload, expiresAt);
    return "first";
  }

  /** Forgets every token and stops the timers that drop them (a server closes its default ledger). */
  close(): void {
    this.#used.clear();
  }
}
