import { abortError } from "../errors.js";

/**
 * A run's abort: it owns the controller whose signal the model and the tools get, and calls its
 * hooks directly. Node 20's EventTarget makes an add/remove listener pair cost about 5 µs and
 * `AbortSignal.any` about 20 µs, so the per-call abort races use these hooks, not listeners.
 */
export class AbortScope {
  readonly #controller = new AbortController();
  readonly #hooks = new Set<() => void>();
  #unlink: (() => void) | undefined;

  /** `linked`: an outside signal (the prompt's) that aborts this scope too. */
  constructor(linked?: AbortSignal) {
    if (linked === undefined) return;
    if (linked.aborted) {
      this.abort(linked.reason);
      return;
    }
    const onAbort = () => this.abort(linked.reason);
    linked.addEventListener("abort", onAbort, { once: true });
    this.#unlink = () => linked.removeEventListener("abort", onAbort);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  abort(reason?: unknown): void {
    if (this.#controller.signal.aborted) return;
    this.#controller.abort(reason);
    this.dispose();
    for (const hook of this.#hooks) hook();
    this.#hooks.clear();
  }

  /** Calls `hook` when the scope aborts (at once if it already has); returns a remover. */
  onAbort(hook: () => void): () => void {
    if (this.signal.aborted) {
      hook();
      return noop;
    }
    this.#hooks.add(hook);
    return () => this.#hooks.delete(hook);
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

/** Settles with `promise`, or rejects with `AbortedError` as soon as the scope aborts. */
export function raceAbort<T>(promise: PromiseLike<T>, scope: AbortScope): Promise<T> {
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
