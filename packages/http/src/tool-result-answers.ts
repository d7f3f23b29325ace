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
  readonly #answers = new Map<string, { payload: string; answer: Answer; expiresAt: number }>();
  readonly #now: () => number;
  #nextSweep = 0;

  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * The first answer to `payload` for `nonce`, else `answer()`, kept for the same payload again.
   * Another payload is answered without being kept (the ledger refuses it); a failure that is not
   * an `HttpError`, or is a 5xx one (the server could not answer now: `database-unreachable`), is
   * no answer: the post may be retried.
   */
  once(nonce: string, payload: string, expiresAt: number, answer: () => Answer): Answer {
    this.#sweep();
    const first = this.#answers.get(nonce);
    if (first !== undefined) return first.payload === payload ? first.answer : answer();
    const answered = answer();
    this.#answers.set(nonce, { payload, answer: answered, expiresAt });
    answered.catch((error: unknown) => {
      const final = error instanceof HttpError && error.status < 500;
      if (!final && this.#answers.get(nonce)?.answer === answered) this.#answers.delete(nonce);
    });
    return answered;
  }

  #sweep(): void {
    const now = this.#now();
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + 10_000;
    for (const [nonce, { expiresAt }] of this.#answers) if (expiresAt < now) this.#answers.delete(nonce);
  }
}
