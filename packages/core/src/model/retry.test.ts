import { APICallError } from "@ai-sdk/provider";
import { afterEach, describe, expect, it, vi } from "vitest";
import { defaultRetry, isRetryable, type RetryOptions, retryDelay } from "./retry.js";

const options: RetryOptions = { maxRetries: 2, initialDelayMs: 100, maxDelayMs: 5_000 };

function apiError(statusCode: number, responseHeaders?: Record<string, string>): APICallError {
  return new APICallError({
    message: `HTTP ${statusCode}`,
    url: "http://localhost/v1/chat/completions",
    requestBodyValues: {},
    statusCode,
    ...(responseHeaders === undefined ? {} : { responseHeaders }),
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe("defaultRetry", () => {
  it("retries twice, from 500 ms, waiting at most 10 s, timeouts not retried; frozen", () => {
    expect(defaultRetry).toEqual({
      maxRetries: 2,
      initialDelayMs: 500,
      maxDelayMs: 10_000,
      retryTimeouts: false,
    });
    // Shared by every agent: one changed would change them all.
    expect(Object.isFrozen(defaultRetry)).toBe(true);
  });
});

describe("isRetryable", () => {
  it("is true only for a provider error the provider marks retryable", () => {
    expect(isRetryable(apiError(429))).toBe(true);
    expect(isRetryable(apiError(503))).toBe(true);
    expect(isRetryable(apiError(400))).toBe(false);
    expect(isRetryable(Object.assign(new Error("x"), { isRetryable: true }))).toBe(false);
    expect(isRetryable(undefined)).toBe(false);
  });
});

describe("retryDelay", () => {
  it("doubles from initialDelayMs, up to maxDelayMs", () => {
    expect([0, 1, 2, 3, 6].map((attempt) => retryDelay(apiError(500), attempt, options))).toEqual([
      100, 200, 400, 800, 5_000,
    ]);
  });

  it("uses retry-after-ms, then retry-after in seconds, capped by maxDelayMs", () => {
    expect(retryDelay(apiError(429, { "retry-after-ms": "1234" }), 3, options)).toBe(1234);
    expect(retryDelay(apiError(429, { "retry-after-ms": "0" }), 3, options)).toBe(0);
    expect(retryDelay(apiError(429, { "retry-after": "2" }), 0, options)).toBe(2_000);
    expect(retryDelay(apiError(429, { "retry-after": "0" }), 3, options)).toBe(0);
    expect(retryDelay(apiError(429, { "retry-after": "60" }), 0, options)).toBe(5_000);
    expect(retryDelay(apiError(429, { "retry-after-ms": "60000" }), 0, options)).toBe(5_000);
  });

  it("skips a retry-after-ms that is negative or not a number", () => {
    expect(retryDelay(apiError(429, { "retry-after-ms": "-5", "retry-after": "1" }), 0, options)).toBe(1_000);
    expect(retryDelay(apiError(429, { "retry-after-ms": "soon", "retry-after": "1" }), 0, options)).toBe(
      1_000,
    );
    expect(retryDelay(apiError(429, { "retry-after-ms": "-5" }), 1, options)).toBe(200);
  });

  it("reads retry-after as an HTTP date, a past one meaning now", () => {
    vi.useFakeTimers({ now: new Date("2025-01-01T00:00:00Z") });
    expect(retryDelay(apiError(429, { "retry-after": "Wed, 01 Jan 2025 00:00:03 GMT" }), 0, options)).toBe(
      3_000,
    );
    expect(retryDelay(apiError(429, { "retry-after": "Tue, 31 Dec 2024 23:59:00 GMT" }), 0, options)).toBe(0);
  });

  it("never waits a negative time, nor reads an infinite retry-after as seconds", () => {
    expect(retryDelay(apiError(429, { "retry-after": "-1" }), 0, options)).toBeGreaterThanOrEqual(0);
    expect(retryDelay(apiError(429, { "retry-after": "-30" }), 0, options)).toBeGreaterThanOrEqual(0);
    expect(retryDelay(apiError(429, { "retry-after": "Infinity" }), 1, options)).toBe(200);
  });

  it("falls back to backoff for a blank or negative retry-after, and a blank retry-after-ms", () => {
    const unreadable: Record<string, string>[] = [
      { "retry-after": "" },
      { "retry-after": "  " },
      { "retry-after-ms": "" },
      { "retry-after": "-3" },
    ];
    for (const headers of unreadable) expect(retryDelay(apiError(503, headers), 1, options)).toBe(200);
  });

  it("falls back to backoff for an unreadable retry-after, or headers on something else", () => {
    expect(retryDelay(apiError(429, { "retry-after": "soon" }), 1, options)).toBe(200);
    expect(retryDelay(apiError(429, {}), 2, options)).toBe(400);
    const notApi = Object.assign(new Error("x"), { responseHeaders: { "retry-after-ms": "7" } });
    expect(retryDelay(notApi, 0, options)).toBe(100);
  });
});
