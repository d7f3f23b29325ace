import { InvalidConfigError, LONGEST_TIMER_MS } from "@agent-core/core";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { HttpError } from "./http-error.js";
import type { RateLimit } from "./server-options.js";

/**
 * A per-user limiter (in memory), or none when the option (`name`) is `false`. Checked here, when
 * the server is made: with 0 points every request is refused, and with a `durationSec` of 0 the
 * limiter never gives points back, so a user is locked out for good while `Retry-After` says 1 s.
 */
export function limiter(
  option: RateLimit | false | undefined,
  fallback: RateLimit,
  name: string,
): RateLimiterMemory | undefined {
  if (option === false) return undefined;
  const { points, durationSec } = option ?? fallback;
  // The limiter forgets a user's points by a timer of `durationSec`: past the longest a timer waits
  // it fires after 1 ms, and the limit would let every request through.
  if (!Number.isInteger(points) || points < 1 || !(durationSec > 0 && durationSec * 1000 <= LONGEST_TIMER_MS))
    throw new InvalidConfigError(
      `${name} must be { points: a whole number >= 1, durationSec: a number > 0, at most ${LONGEST_TIMER_MS / 1000} } or false, got ${shownLimit(option)}.`,
    );
  return new RateLimiterMemory({ points, duration: durationSec });
}

/** A refused limit as given: its numbers as they are (JSON would write NaN and Infinity as null). */
function shownLimit(option: unknown): string {
  if (typeof option !== "object" || option === null) return String(option);
  const { points, durationSec } = option as Partial<RateLimit>;
  return `{ points: ${String(points)}, durationSec: ${String(durationSec)} }`;
}

/** Takes one point for the user, or refuses the request with 429 and `Retry-After`. */
export async function consume(limit: RateLimiterMemory | undefined, userId: string): Promise<void> {
  if (limit === undefined) return;
  try {
    await limit.consume(userId);
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    throw new HttpError(429, "rate-limited", `Too many requests; try again in ${seconds} s.`, {
      headers: { "retry-after": String(seconds) },
    });
  }
}
