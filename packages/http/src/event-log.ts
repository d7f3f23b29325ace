/** One event as the log keeps it: its seq, type and JSON text (encoded once, for every reader). */
export interface LoggedEvent {
  readonly seq: number;
  readonly type: string;
  readonly json: string;
}

/** Thrown to a reader whose place in the log was dropped to keep it within its bound. */
export class EventsExpiredError extends Error {
  constructor(after: number, first: number) {
    super(`Events after seq ${after} are no longer kept (the log starts at seq ${first}).`);
    this.name = "EventsExpiredError";
  }
}

/**
 * A run's events, in seq order, for every stream attached to it now or later (re-attaching with
 * `after`). Bounded: past `maxEvents` the oldest are dropped, and a reader that still needed them
 * gets `EventsExpiredError`. Readers never hold their own copies: a slow reader only holds a
 * position, so memory stays bounded by the log whatever the readers do.
 */
export class EventLog {
  readonly #maxEvents: number;
  #events: LoggedEvent[] = [];
  /** Seq of `#events[0]`. */
  #first = 0;
  #closed = false;
  /** One promise for every reader waiting for the next event (each reader's wait stays on it until
   * then: a stream waits once per event, not once per heartbeat). */
  #next: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(maxEvents: number) {
    this.#maxEvents = maxEvents;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Seq of the next event. */
  get end(): number {
    return this.#first + this.#events.length;
  }

  append(event: { seq: number; type: string }, json: string): void {
    if (this.#closed) return;
    this.#events.push({ seq: event.seq, type: event.type, json });
    if (this.#events.length > this.#maxEvents) {
      // Dropped in halves: one copy per `maxEvents / 2` appends instead of one per append.
      const drop = Math.ceil(this.#maxEvents / 2);
      this.#events = this.#events.slice(drop);
      this.#first += drop;
    }
    this.#wake();
  }

  /**
   * Writes the event of seq `seq` anew, for the readers that come to it later (a re-attach); one
   * no longer kept is left dropped.
   */
  rewrite(seq: number, json: string): void {
    const index = seq - this.#first;
    const kept = this.#events[index];
    if (kept !== undefined) this.#events[index] = { ...kept, json };
  }

  /** No more events (the run ended, or the log is being discarded). */
  close(): void {
    this.#closed = true;
    this.#wake();
  }

  /** The events from seq `from` on that are here now; throws when some of them were dropped. */
  read(from: number): LoggedEvent[] {
    if (from < this.#first) throw new EventsExpiredError(from - 1, this.#first);
    return this.#events.slice(from - this.#first);
  }

  /** Resolves when an event after `from - 1` is appended or the log closes (at once if so already). */
  changed(from: number): Promise<void> {
    if (from < this.end || this.#closed) return Promise.resolve();
    if (this.#next === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => {
        resolve = done;
      });
      this.#next = { promise, resolve };
    }
    return this.#next.promise;
  }

  #wake(): void {
    const next = this.#next;
    this.#next = undefined;
    next?.resolve();
  }
}
