import { TimeoutError } from "../errors.js";

export interface StepTimeouts {
  /** The whole model call. */
  stepMs?: number;
  /** From the call to its first chunk. */
  firstChunkMs?: number;
  /** The longest gap between two chunks. */
  chunkMs?: number;
}

/**
 * Watches one model call against its time limits with a single timer. A chunk only records the
 * time; the timer, when it fires, checks every deadline and re-arms itself for the nearest one,
 * so a stream of many chunks costs no timer churn.
 */
export class StepWatchdog {
  readonly #limits: StepTimeouts;
  readonly #onExpire: (error: TimeoutError) => void;
  readonly #startedAt = Date.now();
  #lastChunkAt: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  expired: TimeoutError | undefined;

  constructor(limits: StepTimeouts, onExpire: (error: TimeoutError) => void) {
    this.#limits = limits;
    this.#onExpire = onExpire;
    this.#arm();
  }

  static needed(limits: StepTimeouts | undefined): limits is StepTimeouts {
    return limits !== undefined && (limits.stepMs ?? limits.firstChunkMs ?? limits.chunkMs) !== undefined;
  }

  chunk(): void {
    this.#lastChunkAt = Date.now();
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    const now = Date.now();
    const next = Math.min(...this.#deadlines().map((deadline) => deadline.at));
    this.#timer = setTimeout(() => this.#check(), Math.max(0, next - now));
  }

  #check(): void {
    const now = Date.now();
    const passed = this.#deadlines().find((deadline) => deadline.at <= now);
    if (passed === undefined) {
      this.#arm();
      return;
    }
    this.expired = new TimeoutError(passed.kind, passed.ms);
    this.#timer = undefined;
    this.#onExpire(this.expired);
  }

  #deadlines(): { kind: "step" | "firstChunk" | "chunk"; ms: number; at: number }[] {
    const { stepMs, firstChunkMs, chunkMs } = this.#limits;
    const deadlines: { kind: "step" | "firstChunk" | "chunk"; ms: number; at: number }[] = [];
    if (stepMs !== undefined) deadlines.push({ kind: "step", ms: stepMs, at: this.#startedAt + stepMs });
    if (firstChunkMs !== undefined && this.#lastChunkAt === undefined)
      deadlines.push({ kind: "firstChunk", ms: firstChunkMs, at: this.#startedAt + firstChunkMs });
    if (chunkMs !== undefined && this.#lastChunkAt !== undefined)
      deadlines.push({ kind: "chunk", ms: chunkMs, at: this.#lastChunkAt + chunkMs });
    return deadlines;
  }
}
