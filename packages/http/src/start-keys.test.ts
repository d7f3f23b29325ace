import { afterEach, describe, expect, it, vi } from "vitest";
import { StartKeys } from "./start-keys.js";

afterEach(() => {
  vi.useRealTimers();
});

const start = (key: string) => ({ key, digest: "d", ttlMs: 60_000 });

describe("StartKeys", () => {
  it("forgets a key once its TTL passed, though no other start comes", async () => {
    vi.useFakeTimers({ now: 1_000 });
    const keys = new StartKeys(Date.now);
    await keys.once("alice", start("k1"), async () => "r1");
    await keys.once("alice", start("k2"), async () => "r2");
    expect(keys.size).toBe(2);
    vi.advanceTimersByTime(60_000);
    expect(keys.size).toBe(0);
  });

  it("forgets every key on close(), and leaves no timer behind", async () => {
    vi.useFakeTimers({ now: 1_000 });
    const keys = new StartKeys(Date.now);
    await keys.once("alice", start("k1"), async () => "r1");
    keys.close();
    expect([keys.size, vi.getTimerCount()]).toEqual([0, 0]);
  });
});
