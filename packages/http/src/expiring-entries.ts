import { forgetOnceIdle } from "./idle-forgetting.js";

/**
 * Entries by key, each dropped at its own `expiresAt` (by the `now` clock) by a timer, not by a
 * sweep on the next use: a server that got a burst and then no more requests must still let them
 * go. Each entry's timer is `forgetOnceIdle`'s (it keeps no process alive); `clear()` stops them all.
 */
export class ExpiringEntries<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number; stopWatching: () => void }>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value kept for `key`, undefined once expired (though its timer has not fired yet). */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.expiresAt > this.#now() ? entry.value : undefined;
  }

  /** Whether `value` is what `key` keeps now (not replaced by a later `set`). */
  holds(key: string, value: V): boolean {
    return this.#entries.get(key)?.value === value;
  }

  set(key: string, value: V, expiresAt: number): void {
    this.delete(key);
    const keptAt = this.#now();
    // Expired already, or no time at all (NaN): `get` would never give it, and its timer would
    // look again every millisecond.
    if (!(expiresAt > keptAt)) return;
    const entry = {
      value,
      expiresAt,
      stopWatching: forgetOnceIdle(
        {
          busy: () => false,
          idleFor: () => this.#now() - keptAt,
          ttlMs: () => expiresAt - keptAt,
          forget: () => {
            if (this.#entries.get(key) === entry) this.#entries.delete(key);
          },
        },
        expiresAt - keptAt,
      ),
    };
    this.#entries.set(key, entry);
  }

  delete(key: string): void {
    this.#entries.get(key)?.stopWatching();
    this.#entries.delete(key);
  }

  /** Drops every entry and stops its timer. */
  clear(): void {
    for (const { stopWatching } of this.#entries.values()) stopWatching();
    this.#entries.clear();
  }
}
