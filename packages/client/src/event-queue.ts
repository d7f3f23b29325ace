/**
 * The events of one run on their way to its reader: the one loop iterating the run, if any. Buffers
 * them, wakes the reader waiting for one, holds the writer back while the reader lags
 * (`demand()`), and ends, done or failed, once the reader has taken what was buffered. The run
 * writes: it decides what is pushed and when the queue ends.
 */
export class EventQueue<T> {
  readonly #highWaterMark: number;
  /** Events not yet taken by a reader, from `#head` on. */
  #queue: (T | undefined)[] = [];
  #head = 0;
  #reading = false;
  #ended = false;
  /** What the reader throws once it has taken the buffered events (undefined: it is done). */
  #error: Error | undefined;
  /** Settles when an event is pushed or the queue ends (what a waiting reader waits for). */
  readonly #produced = new Pulse();
  /** Settles when the reader takes an event or stops, or the queue ends (what the writer waits for). */
  readonly #consumed = new Pulse();

  /** `highWaterMark`: events the reader may have waiting before `demand()` holds the writer back. */
  constructor(highWaterMark: number) {
    this.#highWaterMark = highWaterMark;
  }

  /**
   * Buffers `event` and wakes the reader. Taken after the end too: the run's client tools may report
   * a problem after its `agent_end`, and a reader that has not reached the end, or a later one, gets it.
   */
  push(event: T): void {
    this.#queue.push(event);
    this.#produced.fire();
  }

  /** Ends the queue: the reader takes the buffered events, then is done. */
  close(): void {
    this.#end(undefined);
  }

  /** Ends the queue: the reader takes the buffered events, then throws `error`. */
  fail(error: Error): void {
    this.#end(error);
  }

  /** Backpressure: waits while a reader has `highWaterMark` events waiting. */
  async demand(): Promise<void> {
    while (!this.#ended && this.#reading && this.#queue.length - this.#head >= this.#highWaterMark)
      await this.#consumed.next();
  }

  /**
   * The reader: takes the events in order, from the first not yet taken by an earlier reader.
   * Undefined while another reader reads (until it ends or returns).
   */
  reader(): AsyncIterator<T> | undefined {
    if (this.#reading) return undefined;
    this.#reading = true;
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.#reading = false;
      this.#consumed.fire();
    };
    return {
      next: async (): Promise<IteratorResult<T>> => {
        for (;;) {
          if (stopped) return DONE;
          if (this.#head < this.#queue.length) return { value: this.#take(), done: false };
          if (this.#ended) {
            stop();
            if (this.#error !== undefined) throw this.#error;
            return DONE;
          }
          await this.#produced.next();
        }
      },
      return: async (): Promise<IteratorResult<T>> => {
        stop();
        this.#produced.fire();
        return DONE;
      },
    };
  }

  #take(): T {
    const event = this.#queue[this.#head] as T;
    this.#queue[this.#head++] = undefined;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    this.#consumed.fire();
    return event;
  }

  #end(error: Error | undefined): void {
    this.#ended = true;
    this.#error = error;
    this.#produced.fire();
    this.#consumed.fire();
  }
}

/** A promise that settles on the next `fire()`, renewed each time. */
class Pulse {
  #promise!: Promise<void>;
  #resolve!: () => void;

  constructor() {
    this.#renew();
  }

  next(): Promise<void> {
    return this.#promise;
  }

  fire(): void {
    this.#resolve();
    this.#renew();
  }

  #renew(): void {
    this.#promise = new Promise<void>((resolve) => {
      this.#resolve = resolve;
    });
  }
}

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true });
