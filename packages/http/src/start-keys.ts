import { ExpiringEntries } from "./expiring-entries.js";
import { HttpError } from "./http-error.js";

/** A start's `Idempotency-Key`, as the server checked it, and what a repeat must match. */
export interface StartKey {
  /** The header's value; its scope is the user who sent it, never another. */
  key: string;
  /** A digest of the start's body: the same key with another body is refused. */
  digest: string;
  /** How long after the start that first used it the key is remembered (`idempotencyKeyTtlMs`). */
  ttlMs: number;
}

/**
 * The `Idempotency-Key` of a request, or undefined without one: 1 to 255 visible ASCII characters
 * (`!` to `~`), 400 `invalid-idempotency-key` otherwise. Visible only: what is stored and compared is
 * exactly what the client sent (a header's surrounding spaces are trimmed on the way, and a header
 * given twice arrives joined by ", ").
 */
export function idempotencyKeyOf(request: Request): string | undefined {
  const key = request.headers.get("idempotency-key");
  if (key === null) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(key))
    throw new HttpError(
      400,
      "invalid-idempotency-key",
      "Idempotency-Key must be 1 to 255 visible ASCII characters (no spaces), such as a UUID.",
    );
  return key;
}

/** The refusal of a key used before, by the same user, for a start with another body: the same from every backend. */
export function idempotencyKeyReused(): HttpError {
  return new HttpError(
    409,
    "idempotency-key-reused",
    "This Idempotency-Key was used for another start (a different body); a new start needs a new key.",
  );
}

/**
 * The runs this process started under an `Idempotency-Key`, by user and key, until the key's
 * `ttlMs` passed: the same start again gets the first one's run id (also while the first is still
 * being started: it waits for it), another body `idempotencyKeyReused()`. A start that failed frees
 * its key here: no run was started in this process (a durable backend finds in its database what it
 * recorded before failing).
 */
export class StartKeys {
  readonly #starts: ExpiringEntries<{ digest: string; runId: Promise<string> }>;
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
    this.#starts = new ExpiringEntries(now);
  }

  /** The keys remembered now. */
  get size(): number {
    return this.#starts.size;
  }

  once(userId: string, start: StartKey, begin: () => Promise<string>): Promise<string> {
    const id = `${userId}\u0000${start.key}`;
    const first = this.#starts.get(id);
    if (first !== undefined) {
      if (first.digest !== start.digest) throw idempotencyKeyReused();
      return first.runId;
    }
    const kept = { digest: start.digest, runId: begin() };
    this.#starts.set(id, kept, this.#now() + start.ttlMs);
    kept.runId.catch(() => {
      if (this.#starts.holds(id, kept)) this.#starts.delete(id);
    });
    return kept.runId;
  }

  /** Forgets every key (the server is closed) and stops their timers. */
  close(): void {
    this.#starts.clear();
  }
}
