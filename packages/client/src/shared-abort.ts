/**
 * Calls `listener` when `signal` aborts; returns its remover. Every listener given the same signal
 * shares one listener on it: a signal given to many `start()`s (a page's one stop button for all
 * its runs) would otherwise get one each, and Node warns past 10 (MaxListenersExceededWarning).
 * Call it with a signal that has not aborted yet. (The core has the same, `onAbortShared`; the
 * client imports nothing of the core at run time, so that a page does not bundle it.)
 */
export function onAbortShared(signal: AbortSignal, listener: () => void): () => void {
  const link = links.get(signal) ?? new SignalLink(signal);
  link.listeners.add(listener);
  return () => link.unlink(listener);
}

class SignalLink {
  readonly listeners = new Set<() => void>();
  readonly #signal: AbortSignal;
  // As with a listener each: one that throws is reported as uncaught without keeping the others
  // (the other runs' cancels) from running.
  readonly #onAbort = () => {
    links.delete(this.#signal);
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  };

  constructor(signal: AbortSignal) {
    this.#signal = signal;
    signal.addEventListener("abort", this.#onAbort, { once: true });
    links.set(signal, this);
  }

  unlink(listener: () => void): void {
    if (!this.listeners.delete(listener) || this.listeners.size > 0) return;
    this.#signal.removeEventListener("abort", this.#onAbort);
    if (links.get(this.#signal) === this) links.delete(this.#signal);
  }
}

const links = new WeakMap<AbortSignal, SignalLink>();
