/**
 * Lets shared work run side by side and exclusive work run alone: a `sequential` tool waits for
 * the running calls to end, and no call starts while it runs.
 */
export class ExclusiveGate {
  #running = 0;
  #exclusive = false;
  /** Exclusive work waiting its turn: later shared work waits behind it, so it is not starved. */
  #queuedExclusive = 0;
  #waiting: (() => void)[] = [];

  async shared<T>(work: () => T | Promise<T>): Promise<T> {
    while (this.#exclusive || this.#queuedExclusive > 0) await this.#wait();
    this.#running++;
    try {
      return await work();
    } finally {
      this.#running--;
      this.#wake();
    }
  }

  async exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    this.#queuedExclusive++;
    while (this.#exclusive || this.#running > 0) await this.#wait();
    this.#queuedExclusive--;
    this.#exclusive = true;
    try {
      return await work();
    } finally {
      this.#exclusive = false;
      this.#wake();
    }
  }

  #wait(): Promise<void> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }
}
