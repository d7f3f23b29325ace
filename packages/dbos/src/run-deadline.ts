import { AsyncResource } from "node:async_hooks";

/**
 * A durable run's `timeouts.totalMs`, which counts from the run's recorded start (the workflow's
 * start for its first run, the answer or message that began a later one), not from the start of
 * the process that executes it now: a run recovered after a crash has what was left of its time.
 * The timer runs only live: while a recovered run replays what it recorded, an abort would land at
 * another point than in its first execution. The first call the run makes live checks whether the
 * time ran out meanwhile (and the run ends as `timeout` before making it); from then on a timer
 * takes what is left, and a timeout it fires is recorded like a cancel (`RecordedAbort`).
 */
export class RunDeadline {
  readonly #totalMs: number | undefined;
  readonly #expire: (totalMs: number) => void;
  /** The recorded start of the run in progress, or undefined between runs. */
  #startedAt: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(totalMs: number | undefined, expire: (totalMs: number) => void) {
    this.#totalMs = totalMs;
    // Fired in the workflow's context, as the agent's own timer would be, not the step's that
    // armed it.
    this.#expire = AsyncResource.bind(expire);
  }

  /** A run begins at `at` (the recorded clock's time); `live`: the execution runs live by now. */
  begin(at: number, live: boolean): void {
    this.end();
    this.#startedAt = at;
    if (live) this.live();
  }

  /** The execution runs live from here: the timer takes what is left of the run's time. */
  live(): void {
    const totalMs = this.#totalMs;
    const startedAt = this.#startedAt;
    if (totalMs === undefined || startedAt === undefined || this.#timer !== undefined) return;
    const left = Math.max(0, totalMs - (Date.now() - startedAt));
    this.#timer = setTimeout(() => this.#expire(totalMs), left);
  }

  /** `totalMs` when the run in progress has used it up, else undefined. */
  expired(): number | undefined {
    const totalMs = this.#totalMs;
    const startedAt = this.#startedAt;
    if (totalMs === undefined || startedAt === undefined) return undefined;
    return Date.now() - startedAt >= totalMs ? totalMs : undefined;
  }

  /** The run in progress has ended (or is waiting): no timer. */
  end(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#startedAt = undefined;
  }
}
