import { APICallError } from "@ai-sdk/provider";

export interface RetryOptions {
  /** Retries after the first attempt (default 2). Only retryable provider errors are retried. */
  maxRetries: number;
  /** Delay before the first retry (default 500 ms); doubles each time. */
  initialDelayMs: number;
  /** Upper bound of one delay, also for a server's `retry-after` (default 10 s). */
  maxDelayMs: number;
  /** Also retry a model call that ran past `timeouts.stepMs`/`firstChunkMs`/`chunkMs` (default false). */
  retryTimeouts?: boolean;
}

/** Every setting's default, as the docs list them; frozen: changed, it would change every agent's. */
export const defaultRetry: Readonly<Required<RetryOptions>> = Object.freeze({
  maxRetries: 2,
  initialDelayMs: 500,
  maxDelayMs: 10_000,
  retryTimeouts: false,
});

export function isRetryable(error: unknown): boolean {
  return APICallError.isInstance(error) && error.isRetryable;
}

/** The wait before retry number `attempt` (0-based): the server's retry-after when given, else backoff. */
export function retryDelay(error: unknown, attempt: number, options: RetryOptions): number {
  const headers = APICallError.isInstance(error) ? error.responseHeaders : undefined;
  const fromServer = retryAfterMs(headers);
  const backoff = options.initialDelayMs * 2 ** attempt;
  return Math.min(fromServer ?? backoff, options.maxDelayMs);
}

function retryAfterMs(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = headers["retry-after-ms"];
  if (ms !== undefined && DELAY.test(ms)) return Number(ms);
  const retryAfter = headers["retry-after"];
  if (retryAfter === undefined) return undefined;
  if (DELAY.test(retryAfter)) return Number(retryAfter) * 1000;
  // An HTTP date names its day and month; Date.parse alone also reads "-3" as a date long past.
  const date = /[a-z]/i.test(retryAfter) ? Date.parse(retryAfter) : Number.NaN;
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/**
 * A delay a server gives: digits, perhaps a fraction. Checked as text because `Number()` reads a
 * blank value as 0, which would retry at once, as often as allowed, instead of backing off.
 */
const DELAY = /^\s*\d+(\.\d+)?\s*$/;
