/**
 * The order a recovered workflow hands a batch's tool results back in. A parallel batch publishes
 * each result as its call ends; replayed, the recorded results come back as the database answers,
 * and the calls that were running at the crash end when they end: in another order. The log
 * stores each seq once, so where a crash cut the log inside the batch, one call's result would be
 * logged twice and another's never. So a result waits for the recorded results the log has before
 * it (all of them, for a result the log lacks) of the calls running now, and for every call
 * running now to be known as recorded or not.
 */
export class ReplayOrder {
  readonly #logged: (runId: string) => Promise<string[]>;
  /** The log's tool results of each run, by call id, in seq order (read once per run). */
  readonly #runs = new Map<string, Promise<string[]>>();
  /**
   * The calls started and not handed back, by `runId:callId`: whether their step was recorded,
   * undefined until that is known.
   */
  readonly #running = new Map<string, boolean | undefined>();
  #waiting: (() => void)[] = [];

  /** `logged`: the ids of the calls whose `tool_result` the run's stored log has, in seq order. */
  constructor(logged: (runId: string) => Promise<string[]>) {
    this.#logged = logged;
  }

  started(runId: string, callId: string): void {
    this.#running.set(`${runId}:${callId}`, undefined);
  }

  /** Whether the call's step was recorded (else it runs now). */
  settled(runId: string, callId: string, recorded: boolean): void {
    this.#running.set(`${runId}:${callId}`, recorded);
    this.#wake();
  }

  /** Resolves when the call's result may be handed back. */
  async turn(runId: string, callId: string): Promise<void> {
    let logged = this.#runs.get(runId);
    if (logged === undefined) {
      logged = this.#logged(runId);
      this.#runs.set(runId, logged);
    }
    const order = (await logged).map((id) => `${runId}:${id}`);
    const key = `${runId}:${callId}`;
    const position = order.indexOf(key);
    const before = new Set(position === -1 ? order : order.slice(0, position));
    for (;;) {
      // A result handed back lets the batch start its next call in the same tick: by the next
      // one it is running, and the log may have its result before this one.
      await new Promise((resolve) => setImmediate(resolve));
      const running = [...this.#running];
      if (running.every(([other, recorded]) => recorded === false || (recorded && !before.has(other))))
        return;
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  handedBack(runId: string, callId: string): void {
    this.#running.delete(`${runId}:${callId}`);
    this.#wake();
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }
}
