import { AbortedError } from "../errors.js";

/** Settles with `promise`, or rejects with `AbortedError` as soon as `signal` aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(new AbortedError(signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return raceAbort(
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
    }),
    signal,
  );
}
