import { LONGEST_TIMER_MS } from "@agent-core/core";

/** What `forgetOnceIdle` reads of the thing it watches (a conversation, a chat) each time it looks. */
export interface IdleWatch {
  /** Its agent is running (or not made yet): never idle then. */
  busy(): boolean;
  /** How long it has been idle, in ms. */
  idleFor(): number;
  /** How long it may be idle before it is forgotten, in ms (read each time: it may change). */
  ttlMs(): number;
  forget(): void;
}

/**
 * Forgets what `watch` watches once it has been idle for its TTL, looking first after `firstLookMs`
 * and then again whenever it may be: a timer, not a sweep on the next request, because a server that
 * gets no more requests must still let go of its agents and their histories. The timer keeps no
 * process alive; a wait longer than a Node timer allows is waited out in steps (one longer would
 * fire after 1 ms). Returns what stops the watch.
 */
export function forgetOnceIdle(watch: IdleWatch, firstLookMs: number): () => void {
  let timer: ReturnType<typeof setTimeout>;
  const lookAfter = (waitMs: number): void => {
    timer = setTimeout(
      () => {
        const ttlMs = watch.ttlMs();
        const busy = watch.busy();
        const idleFor = watch.idleFor();
        if (!busy && idleFor >= ttlMs) watch.forget();
        else lookAfter(busy ? ttlMs : ttlMs - idleFor);
      },
      Math.min(waitMs, LONGEST_TIMER_MS),
    );
    timer.unref?.();
  };
  lookAfter(firstLookMs);
  return () => clearTimeout(timer);
}
