import { TimeoutError } from "../errors.js";
import { LONGEST_TIMER_MS } from "../longest-timer.js";

export interface StepTimeouts {
  /** The whole model call. */
  stepMs?: number;
  /** From the call to its first chunk. */
  firstChunkMs?: number;
  /** The longest gap between two chunks. */
  chunkMs?: number;
}

type DeadlineKind = "step" | "firstChunk" | "chunk";

/**
 * Watches one model call against its time limits with a single timer. A chunk after the first
 * only records the time; the timer, when it fires, checks the nearest deadline and re-arms itself
 * for the next one, so a stream of many chunks costs no timer churn. No timer runs while no
 * deadline applies (only `chunkMs` before the first chunk, only `firstChunkMs` after it).
 */
export class StepWatchdog {
  readonly #limits: StepTimeouts;
  readonly #onExpire: (error: TimeoutError) => void;
  readonly #startedAt = Date.now();
  #lastChunkAt: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer is due. */
  #due = 0;
  #stopped = false;
  expired: TimeoutError | undefined;

  constructor(limits: StepTimeouts, onExpire: (error: TimeoutError) => void) {
    this.#limits = limits;
    this.#onExpire = onExpire;
    this.#arm(this.#startedAt);
  }

  static needed(limits: StepTimeouts | undefined): limits is StepTimeouts {
    return limits !== undefined && (limits.stepMs ?? limits.firstChunkMs ?? limits.chunkMs) !== undefined;
  }

  chunk(): void {
    const now = Date.now();
    this.#lastChunkAt = now;
    // The first chunk may bring the nearest deadline (the timer is due later, or none runs); later
    // chunks only move it further, which the timer finds when it fires.
    const { chunkMs } = this.#limits;
    if (chunkMs === undefined || this.#stopped) return;
    if (this.#timer === undefined || now + chunkMs < this.#due) {
      clearTimeout(this.#timer);
      this.#arm(now);
    }
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Arms the timer for the nearest deadline that applies, if any. */
  #arm(now: number): void {
    const deadline = this.#nearest();
    if (deadline === undefined) {
      this.#timer = undefined;
      return;
    }
    const delay = Math.min(Math.max(0, deadline.at - now), LONGEST_TIMER_MS);
    this.#due = now + delay;
    this.#timer = setTimeout(() => this.#fire(), delay);
  }

  #fire(): void {
    const now = Date.now();
    const deadline = this.#nearest();
    if (deadline === undefined || deadline.at > now) {
      this.#arm(now);
      return;
    }
    this.stop();
    this.expired = new TimeoutError(deadline.kind, deadline.ms);
    this.#onExpire(this.expired);
  }

  /** On a tie, the first in the order step, firstChunk, chunk. */
  #nearest(): { kind: DeadlineKind; ms: number; at: number } | undefined {
    const { stepMs, firstChunkMs, chunkMs } = this.#limits;
    let nearest: { kind: DeadlineKind; ms: number; at: number } | undefined;
    const consider = (kind: DeadlineKind, ms: number | undefined, from: number) => {
      if (ms !== undefined && from + ms < (nearest?.at ?? Number.POSITIVE_INFINITY))
        nearest = { kind, ms, at: from + ms };
    };
    consider("step", stepMs, this.#startedAt);
    if (this.#lastChunkAt === undefined) consider("firstChunk", firstChunkMs, this.#startedAt);
    else consider("chunk", chunkMs, this.#lastChunkAt);
    return nearest;
  }
}
