/** What the ledger answers for a token's use. */
export type LedgerVerdict = "first" | "repeat" | "conflict";

/**
 * Which hook tokens were used, and with what payload: single use is enforced here, not by the
 * signature. In memory by default (one process); entries go once their token has expired (after
 * that the token is refused as expired anyway). A durable ledger implements the same interface.
 */
export interface TokenLedger {
  /** Records the first use of `nonce` with `payload` (a digest); a later use is a repeat or a conflict. */
  use(nonce: string, payload: string, expiresAt: number): LedgerVerdict | Promise<LedgerVerdict>;
}

export class MemoryTokenLedger implements TokenLedger {
  readonly #used = new Map<string, { payload: string; expiresAt: number }>();
  readonly #now: () => number;
  #nextSweep = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  get size(): number {
    return this.#used.size;
  }

  use(nonce: string, payload: string, expiresAt: number): LedgerVerdict {
    this.#sweep();
    const used = this.#used.get(nonce);
    if (used !== undefined) return used.payload === payload ? "repeat" : "conflict";
    this.#used.set(nonce, { payload, expiresAt });
    return "first";
  }

  #sweep(): void {
    const now = this.#now();
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + 10_000;
    for (const [nonce, { expiresAt }] of this.#used) if (expiresAt < now) this.#used.delete(nonce);
  }
}
