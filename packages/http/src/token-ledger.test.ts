import { describe, expect, it } from "vitest";
import { MemoryTokenLedger } from "./token-ledger.js";

describe("MemoryTokenLedger", () => {
  it("answers first, then repeat for the same payload and conflict for another", () => {
    const ledger = new MemoryTokenLedger(() => 1_000);
    expect(ledger.use("n1", "p", 5_000)).toBe("first");
    expect(ledger.use("n1", "p", 5_000)).toBe("repeat");
    expect(ledger.use("n1", "q", 5_000)).toBe("conflict");
    expect(ledger.use("n2", "q", 5_000)).toBe("first");
  });

  it("forgets a token once it has expired (it is refused as expired before the ledger is asked)", () => {
    let now = 1_000;
    const ledger = new MemoryTokenLedger(() => now);
    ledger.use("n1", "p", 2_000);
    ledger.use("n2", "p", 60_000);
    now = 20_000;
    ledger.use("n3", "p", 60_000);
    expect(ledger.size).toBe(2);
    expect(ledger.use("n2", "p", 60_000)).toBe("repeat");
  });
});
