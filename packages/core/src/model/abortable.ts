import { abortError } from "../errors.js";

/**
 * Something to call when a scope aborts. Hooks are linked into their scope's list, so adding and
 * removing one allocates nothing (docs/benchmarks.md has what a `Set` entry per call cost).
 * Extend it (`fire` is called once, on abort) or use `AbortScope.onAbort(fn)`.
 */
export abstract class AbortHook {
  /** @internal The scope's list. */
  hookPrev: AbortHook | undefined = undefined;
  /** @internal */
  hookNext: AbortHook | undefined = undefined;
  /** @internal True while the hook is in a scope's list. */
  hookLinked = false;

  abstract fire(): void;
}

class FunctionHook extends AbortHook {
  constructor(readonly fn: () => void) {
    super();
  }

  fire(): void {
    this.fn();
  }
}

/**
 * A run's abort: it owns the controller whose signal the model and the tools get, and calls its
 * hooks directly: on Node 20, EventTarget listeners and `AbortSignal.any` cost far more per call
 * (measured in docs/benchmarks.md), so the per-call abort races use these hooks, not listeners.
 */
export class AbortScope {
  readonly #controller = new AbortController();
  /** Read once: Node's `controller.signal` getter is slow enough to show on a hot path. */
  readonly signal: AbortSignal = this.#controller.signal;
  #first: AbortHook | undefined;
  #last: AbortHook | undefined;
  #unlink: (() => void) | undefined;
  /** Same as `signal.aborted`, without the getter. */
  aborted = false;

  /** `linked`: an outside signal (the prompt's) that aborts this scope too. */
  constructor(linked?: AbortSignal) {
    if (linked === undefined) return;
    if (linked.aborted) {
      this.abort(linked.reason);
      return;
    }
    this.#unlink = onAbortShared(linked, () => this.abort(linked.reason));
  }

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.#controller.abort(reason);
    this.dispose();
    // Hooks removed by an earlier hook are not called; hooks added now run at once (see `add`).
    const hooks: AbortHook[] = [];
    for (let hook = this.#first; hook !== undefined; hook = hook.hookNext) hooks.push(hook);
    for (const hook of hooks) {
      if (!hook.hookLinked) continue;
      this.remove(hook);
      hook.fire();
    }
  }

  /** Fires `hook` when the scope aborts (at once if it already has). Remove it with `remove`. */
  add(hook: AbortHook): void {
    if (this.aborted) {
      hook.fire();
      return;
    }
    if (hook.hookLinked) return;
    hook.hookLinked = true;
    hook.hookPrev = this.#last;
    hook.hookNext = undefined;
    if (this.#last === undefined) this.#first = hook;
    else this.#last.hookNext = hook;
    this.#last = hook;
  }

  /** Unlinks `hook`; a no-op when it is not linked. */
  remove(hook: AbortHook): void {
    if (!hook.hookLinked) return;
    hook.hookLinked = false;
    const { hookPrev: prev, hookNext: next } = hook;
    if (prev === undefined) this.#first = next;
    else prev.hookNext = next;
    if (next === undefined) this.#last = prev;
    else next.hookPrev = prev;
    hook.hookPrev = undefined;
    hook.hookNext = undefined;
  }

  /** Calls `hook` when the scope aborts (at once if it already has); returns a remover. */
  onAbort(hook: () => void): () => void {
    if (this.aborted) {
      hook();
      return noop;
    }
    const node = new FunctionHook(hook);
    this.add(node);
    return () => this.remove(node);
  }

  /** A scope that aborts with this one, and can also abort on its own (a batch of tool calls). */
  child(): AbortScope {
    const child = new AbortScope();
    child.#unlink = this.onAbort(() => child.abort(this.signal.reason));
    return child;
  }

  /** Stops listening to the linked signal or parent scope (the run or batch is over). */
  dispose(): void {
    this.#unlink?.();
    this.#unlink = undefined;
  }
}

const noop = () => {};

/**
 * Calls `listener` when `signal` aborts; returns its remover. Every listener given the same
 * signal shares a single listener on it: a signal passed to many concurrent prompts (or one run's
 * signal given to many calls) would otherwise get one each, and Node warns past 10
 * (MaxListenersExceededWarning). Call it with a signal that has not aborted yet.
 */
export function onAbortShared(signal: AbortSignal, listener: () => void): () => void {
  const link = links.get(signal) ?? new SignalLink(signal);
  link.listeners.add(listener);
  return () => link.unlink(listener);
}

class SignalLink {
  readonly listeners = new Set<() => void>();
  readonly #signal: AbortSignal;
  // As with a listener each: one removed by an earlier one is skipped, and one that throws is
  // reported as uncaught without keeping the others from running.
  readonly #onAbort = () => {
    links.delete(this.#signal);
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  };

  constructor(signal: AbortSignal) {
    this.#signal = signal;
    signal.addEventListener("abort", this.#onAbort, { once: true });
    links.set(signal, this);
  }

  unlink(listener: () => void): void {
    if (!this.listeners.delete(listener) || this.listeners.size > 0) return;
    this.#signal.removeEventListener("abort", this.#onAbort);
    links.delete(this.#signal);
  }
}

const links = new WeakMap<AbortSignal, SignalLink>();

/** Settles with `promise`, or rejects with `AbortedError` as soon as the scope aborts. */
function raceAbort<T>(promise: PromiseLike<T>, scope: AbortScope): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const remove = scope.onAbort(() => reject(abortError(scope.signal.reason)));
    promise.then(
      (value) => {
        remove();
        resolve(value);
      },
      (error: unknown) => {
        remove();
        reject(error);
      },
    );
  });
}

export function sleep(ms: number, scope: AbortScope): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const wait = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return raceAbort(wait, scope).finally(() => clearTimeout(timer));
}
