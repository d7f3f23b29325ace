import { InvalidConfigError } from "@agent-core/core";
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
  if (!Number.isInteger(points) || points < 1 || !Number.isFinite(durationSec) || !(durationSec > 0))
    throw new InvalidConfigError(
      `${name} must be { points: a whole number >= 1, durationSec: a number > 0 } or false, got ${JSON.stringify(option)}.`,
    );
  return new RateLimiterMemory({ points, duration: durationSec });
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
