import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryTokenLedger } from "./token-ledger.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("MemoryTokenLedger", () => {
  it("answers first, then repeat for the same payload and conflict for another", () => {
    const ledger = new MemoryTokenLedger(() => 1_000);
    expect(ledger.use("n1", "p", 5_000)).toBe("first");
    expect(ledger.use("n1", "p", 5_000)).toBe("repeat");
    expect(ledger.use("n1", "q", 5_000)).toBe("conflict");
    expect(ledger.use("n2", "q", 5_000)).toBe("first");
  });

  it("forgets a token once it has expired, though it is never used again (it is refused as expired before the ledger is asked)", () => {
    vi.useFakeTimers({ now: 1_000 });
    const ledger = new MemoryTokenLedger();
    ledger.use("n1", "p", 2_000);
    ledger.use("n2", "p", 60_000);
    vi.advanceTimersByTime(19_000);
    expect(ledger.size).toBe(1);
    expect(ledger.use("n2", "p", 60_000)).toBe("repeat");
    vi.advanceTimersByTime(60_000);
    expect(ledger.size).toBe(0);
  });

  it("keeps no token that has expired already or has no expiry (NaN): no timer looks at it again and again", () => {
    vi.useFakeTimers({ now: 10_000 });
    const ledger = new MemoryTokenLedger();
    expect(ledger.use("n1", "p", 5_000)).toBe("first");
    expect(ledger.use("n2", "p", Number.NaN)).toBe("first");
    expect([ledger.size, vi.getTimerCount()]).toEqual([0, 0]);
  });

  it("forgets every token on close(), and leaves no timer behind", () => {
    vi.useFakeTimers({ now: 1_000 });
    const ledger = new MemoryTokenLedger();
    ledger.use("n1", "p", 60_000);
    ledger.close();
    expect([ledger.size, vi.getTimerCount()]).toEqual([0, 0]);
  });
});
