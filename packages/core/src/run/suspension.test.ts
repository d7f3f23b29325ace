import { describe, expect, it } from "vitest";
import type { ToolCall } from "../messages.js";
import { awaitingOf, type PendingDecisions, resumeWith } from "./suspension.js";

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
    results: new Map(),
  };
}

const decisionsForResume = (waiting: PendingDecisions) => resumeWith(waiting).decisions;

describe("resumeWith: approvals", () => {
  it("keeps the decisions made and denies every wait still undecided, in wait order", () => {
    const waiting = pending([["b", { approved: true }]]);
    // Approvals only: no client call gets an outcome.
    expect(resumeWith(waiting).results.size).toBe(0);
    const decisions = decisionsForResume(waiting);
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

describe("resumeWith: client calls", () => {
  const clientWaits: PendingDecisions = {
    suspension: {
      calls: [call("a"), call("b"), call("free")],
      waits: new Map([
        ["a", { kind: "client" }],
        ["b", { kind: "client" }],
      ]),
    },
    decisions: new Map(),
    results: new Map([["b", { result: "B" }]]),
  };

  it("keeps the results delivered and gives every unanswered client call an error outcome", () => {
    const { results, decisions } = resumeWith(clientWaits);
    expect([...results]).toEqual([
      ["b", { result: "B" }],
      ["a", { error: "no result arrived before the conversation went on" }],
    ]);
    expect(decisions.size).toBe(0);
    expect(results.has("free")).toBe(false);
    expect([...clientWaits.results.keys()]).toEqual(["b"]);
  });

  it("when the conversation goes on, every call of the batch still without a result fails", () => {
    const { results } = resumeWith(clientWaits, true);
    expect([...results]).toEqual([
      ["b", { result: "B" }],
      ["a", { error: "no result arrived before the conversation went on" }],
      ["free", { error: "no result arrived before the conversation went on" }],
    ]);
    // Only resuming (approve(), submitToolResult()): a call no wait names keeps no outcome.
    expect(resumeWith(clientWaits, false).results.has("free")).toBe(false);
  });

  it("names the ending: awaiting_client_tool for client waits, awaiting_approval once any approval waits", () => {
    expect(awaitingOf(clientWaits.suspension)).toBe("awaiting_client_tool");
    expect(awaitingOf(pending([]).suspension)).toBe("awaiting_approval");
    const mixed = new Map(clientWaits.suspension.waits);
    mixed.set("free", { kind: "approval" });
    expect(awaitingOf({ calls: clientWaits.suspension.calls, waits: mixed })).toBe("awaiting_approval");
  });
});
