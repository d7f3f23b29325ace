import { describe, expect, it } from "vitest";
import type { ToolCall } from "../messages.js";
import { decisionsForResume, type PendingDecisions } from "./suspension.js";

const call = (id: string): ToolCall => ({ id, name: "pay", args: { id } });

function pending(decided: [string, { approved: boolean; reason?: string }][]): PendingDecisions {
  return {
    suspension: {
      calls: [call("a"), call("b"), call("c"), call("free")],
      waits: new Map([
        ["a", { kind: "approval", reason: "spends money" }],
        ["b", { kind: "approval" }],
        ["c", { kind: "approval" }],
      ]),
    },
    decisions: new Map(decided),
  };
}

describe("decisionsForResume", () => {
  it("keeps the decisions made and denies every wait still undecided, in wait order", () => {
    const decisions = decisionsForResume(pending([["b", { approved: true }]]));
    expect([...decisions]).toEqual([
      ["b", { approved: true }],
      ["a", { approved: false, reason: "not approved before the conversation went on" }],
      ["c", { approved: false, reason: "not approved before the conversation went on" }],
    ]);
  });

  it("keeps a denial's own reason, gives calls that do not wait no decision, and leaves the pending ones alone", () => {
    const waiting = pending([
      ["a", { approved: false, reason: "too risky" }],
      ["c", { approved: true }],
    ]);
    const decisions = decisionsForResume(waiting);
    expect(decisions.get("a")).toEqual({ approved: false, reason: "too risky" });
    expect(decisions.get("c")).toEqual({ approved: true });
    expect(decisions.has("free")).toBe(false);
    expect(decisions).not.toBe(waiting.decisions);
    expect([...waiting.decisions.keys()]).toEqual(["a", "c"]);
  });
});
