/**
 * An unbounded, multi-consumer event stream with a final result.
 *
 * - `push` never blocks: a producer cannot be stalled by a slow or absent reader (the Go stream
 *   deadlocked after 10 unread events).
 * - Every iterator sees every event from the first one, so several consumers can read one run.
 * - `result()` resolves when the stream ends, whether or not anybody reads the events.
 * - `push` after `end` is a no-op, and `end` is idempotent.
 */
export class EventStream<T, R> implements AsyncIterable<T> {
  readonly #events: T[] = [];
  #ended = false;
  #waiters: (() => void)[] = [];
  readonly #result: Promise<R>;
  #resolveResult!: (result: R) => void;

  constructor() {
    this.#result = new Promise<R>((resolve) => {
      this.#resolveResult = resolve;
    });
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The events pushed so far. */
  get events(): readonly T[] {
    return this.#events;
  }

  push(event: T): void {
    if (this.#ended) return;
    this.#events.push(event);
    this.#wake();
  }

  end(result: R): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#resolveResult(result);
    this.#wake();
  }

  result(): Promise<R> {
    return this.#result;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    let index = 0;
    let stopped = false;
    return {
      next: async (): Promise<IteratorResult<T>> => {
        while (!stopped && index >= this.#events.length && !this.#ended) {
          await new Promise<void>((resolve) => this.#waiters.push(resolve));
        }
        if (!stopped && index < this.#events.length) return { value: this.#events[index++] as T, done: false };
        return { value: undefined, done: true };
      },
      return: async (): Promise<IteratorResult<T>> => {
        stopped = true;
        return { value: undefined, done: true };
      },
    };
  }

  #wake(): void {
    if (this.#waiters.length === 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
