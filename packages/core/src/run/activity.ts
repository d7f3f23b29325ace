/**
 * The model calls and tool batches a run has under way. The run's end cancels what is left, and
 * waits (up to the grace period) for it to settle, so a result already on its way still lands.
 */
export class Activity {
  inFlight = 0;
  #onIdle: (() => void) | undefined;

  settled(): void {
    this.inFlight--;
    const onIdle = this.#onIdle;
    if (this.inFlight > 0 || onIdle === undefined) return;
    this.#onIdle = undefined;
    onIdle();
  }

  /** Calls `onIdle` once nothing is under way (at once when nothing is). */
  whenIdle(onIdle: () => void): void {
    if (this.inFlight === 0) onIdle();
    else this.#onIdle = onIdle;
  }
}
