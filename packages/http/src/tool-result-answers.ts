import { ExpiringEntries } from "./expiring-entries.js";
import { HttpError } from "./http-error.js";

/** A tool-result post's answer: the run it resumed (202), undefined (204), or an `HttpError`. */
type Answer = Promise<string | undefined>;

/**
 * The answers this process gave to tool-result posts, by token nonce, until the token expires: the
 * same result posted again (a retry, a proxy's resend) gets exactly the first post's answer, a
 * refusal included, also while the first is still being answered. The ledger alone cannot say it:
 * it records a result when it is first posted, before the run takes or refuses it.
 */
export class ToolResultAnswers {
  readonly #answers: ExpiringEntries<{ payload: string; answer: Answer }>;

  constructor(now: () => number) {
    this.#answers = new ExpiringEntries(now);
  }

  /** The answers kept now. */
  get size(): number {
    return this.#answers.size;
  }

  /**
   * The first answer to `payload` for `nonce`, else `answer()`, kept for the same payload again.
   * Another payload is answered without being kept (the ledger refuses it); a failure that is not
   * an `HttpError`, or is a 5xx one (the server could not answer now: `database-unreachable`), is
   * no answer: the post may be retried.
   */
  once(nonce: string, payload: string, expiresAt: number, answer: () => Answer): Answer {
    const first = this.#answers.get(nonce);
    if (first !== undefined) return first.payload === payload ? first.answer : answer();
    const kept = { payload, answer: answer() };
    this.#answers.set(nonce, kept, expiresAt);
    kept.answer.catch((error: unknown) => {
      const final = error instanceof HttpError && error.status < 500;
      if (!final && this.#answers.holds(nonce, kept)) this.#answers.delete(nonce);
    });
    return kept.answer;
  }

  /** Forgets every answer (the server is closed) and stops their timers. */
  close(): void {
    this.#answers.clear();
  }
}
