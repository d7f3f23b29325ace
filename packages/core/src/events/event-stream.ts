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
  /** Readers waiting for the next event, resolved directly with it (no extra promise per event). */
  readonly #waiting: Reader<T>[] = [];
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
    const reader: Reader<T> = { index: 0, stopped: false, resolve: undefined };
    return {
      next: () => {
        if (reader.stopped) return Promise.resolve(DONE);
        if (reader.index < this.#events.length)
          return Promise.resolve({ value: this.#events[reader.index++] as T, done: false });
        if (this.#ended) return Promise.resolve(DONE);
        const next = new Promise<IteratorResult<T>>(captureResolve);
        reader.resolve = captured as (result: IteratorResult<T>) => void;
        captured = ignore; // not kept past this call: it would keep the reader's run reachable
        this.#waiting.push(reader);
        return next;
      },
      return: () => {
        reader.stopped = true;
        reader.resolve?.(DONE);
        reader.resolve = undefined;
        return Promise.resolve(DONE);
      },
    };
  }

  #wake(): void {
    if (this.#waiting.length === 0) return;
    // Resolving runs no reader code now (it resumes in a later microtask): the list is reused.
    for (const reader of this.#waiting) {
      const resolve = reader.resolve;
      reader.resolve = undefined;
      if (resolve === undefined) continue;
      if (reader.index < this.#events.length)
        resolve({ value: this.#events[reader.index++] as T, done: false });
      else resolve(DONE);
    }
    this.#waiting.length = 0;
  }
}

interface Reader<T> {
  index: number;
  stopped: boolean;
  resolve: ((result: IteratorResult<T>) => void) | undefined;
}

/** Takes a new promise's resolve function without a closure per promise (one per awaited event). */
let captured: (result: never) => void = ignore;
function captureResolve(resolve: (result: never) => void): void {
  captured = resolve;
}

function ignore(): void {}

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true }) as IteratorResult<never>;
