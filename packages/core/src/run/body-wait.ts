import { AbortHook, type AbortScope } from "../model/abortable.js";

/** What the wait needs of the run it ends (a `RunSession`, whose result is `R`). */
export interface WaitedRun<R> {
  /** Cancels the work the body left under way; true if some is, and `then` follows once it settled. */
  cancelLeftovers(then: () => void): boolean;
  /** The run's result, once its body ended (`failed`: threw `error`). */
  bodyEnded(failed: boolean, error: unknown): R;
}

/**
 * The wait for a run's body: the run ends when the body settles, or when the run suspends, or
 * `graceMs` after the run's abort: an orchestrator or hook that ignores the abort is abandoned,
 * so abort is prompt on every path, a resumed batch included. A class rather than closures kept
 * in fields: on Node 20 a closure assigned to a field of the run after its creation kept every
 * run alive through young-generation collections (see docs/benchmarks.md).
 */
export class BodyWait<R> extends AbortHook {
  readonly #session: WaitedRun<R>;
  readonly #ended: (result: R) => void;
  readonly #scope: AbortScope;
  readonly #graceMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #settled = false;
  /** How the body ended, while the run waits for the work it left under way. */
  #returned: { failed: boolean; error: unknown } | undefined;
  /** The run cancelled the work left under way, and waits for it to settle. */
  #cancelling = false;

  constructor(session: WaitedRun<R>, ended: (result: R) => void, scope: AbortScope, graceMs: number) {
    super();
    this.#session = session;
    this.#ended = ended;
    this.#scope = scope;
    this.#graceMs = graceMs;
    scope.add(this);
  }

  /** The run aborted: the body (or, once cancelled, the work it left) has `graceMs` to end. */
  fire(): void {
    if (!this.#settled)
      this.#timer = setTimeout(this.#cancelling ? this.finishNow : this.endNow, this.#graceMs);
  }

  /** `end`, for a timer or a microtask (made only on those rare paths). */
  get endNow(): () => void {
    return () => this.end();
  }

  /** The run's end once the cancelled work settled, or its grace period ran out. */
  get finishNow(): () => void {
    return () => this.#finish();
  }

  /** The body returned (`failed`: threw `error`): the run ends (see `end`). */
  bodyReturned(failed: boolean, error: unknown): void {
    if (this.#settled || this.#returned !== undefined) return;
    this.#returned = { failed, error };
    this.end();
  }

  /**
   * The run ends: its body returned, it suspended, or the grace period after an abort ran out.
   * Work still under way (a batch or model call the orchestrator did not await, a batch beside
   * the one that suspended) is cancelled first, and the run ends once that has settled (a result
   * already on its way still lands), or `graceMs` after (the cancel's abort starts that timer).
   */
  end(): void {
    if (this.#settled || this.#cancelling) return;
    // Set first: the cancel's abort calls `fire`, whose timer then finishes the run.
    this.#cancelling = true;
    if (this.#session.cancelLeftovers(this.finishNow)) return;
    this.#cancelling = false;
    this.#finish();
  }

  #finish(): void {
    const returned = this.#returned;
    if (this.#settle()) this.#ended(this.#session.bodyEnded(returned?.failed ?? false, returned?.error));
  }

  #settle(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    this.#scope.remove(this);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    return true;
  }
}
