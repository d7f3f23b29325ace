import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { HttpError } from "./http-error.js";
import type { RateLimit } from "./server-options.js";

/** A per-user limiter (in memory), or none when the option is `false`. */
export function limiter(
  option: RateLimit | false | undefined,
  fallback: RateLimit,
): RateLimiterMemory | undefined {
  if (option === false) return undefined;
  const { points, durationSec } = option ?? fallback;
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
