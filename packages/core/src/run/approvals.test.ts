import { describe, expect, it } from "vitest";
import type { ToolCall } from "../messages.js";
import { askBeforeToolCall } from "./approvals.js";
import type { AgentHooks, BeforeToolCallResult, ToolCallContext } from "./hooks.js";
import type { ApprovalDecision } from "./suspension.js";

const call = (id: string): ToolCall => ({ id, name: "pay", args: { id } });
const contextOf = (call: ToolCall): ToolCallContext => ({
  runId: "run",
  call,
  tool: undefined,
  messages: [],
});

/** A hook that answers from `answers` by call id and records the ids it was asked about. */
function hookOf(answers: Record<string, BeforeToolCallResult>) {
  const asked: string[] = [];
  const hook: NonNullable<AgentHooks["beforeToolCall"]> = async ({ call }) => {
    asked.push(call.id);
    return answers[call.id];
  };
  return { hook, asked };
}

describe("askBeforeToolCall", () => {
  it("blocks, suspends and lets through by the hook's answers, asking about every call", async () => {
    const calls = [call("a"), call("b"), call("c"), call("d")];
    const { hook, asked } = hookOf({
      a: { block: "not on Sundays" },
      b: { requireApproval: true, reason: "spends money" },
      d: { requireApproval: true },
    });
    const { verdicts, suspension } = await askBeforeToolCall(calls, hook, undefined, contextOf, () => false);
    expect(asked).toEqual(["a", "b", "c", "d"]);
    expect([...verdicts]).toStrictEqual([["a", { block: "not on Sundays" }]]);
    expect(suspension?.calls).toBe(calls);
    // A wait without a reason has no `reason` key at all.
    expect([...(suspension?.waits ?? [])]).toStrictEqual([
      ["b", { kind: "approval", reason: "spends money" }],
      ["d", { kind: "approval" }],
    ]);
  });

  it("returns no suspension when no call needs approval", async () => {
    const { hook } = hookOf({ a: { block: "no" } });
    const { verdicts, suspension } = await askBeforeToolCall(
      [call("a"), call("b")],
      hook,
      undefined,
      contextOf,
      () => false,
    );
    expect(suspension).toBeUndefined();
    expect([...verdicts.keys()]).toEqual(["a"]);
  });

  it("does not ask again about calls already decided, and uses their decisions as verdicts", async () => {
    const { hook, asked } = hookOf({ b: { requireApproval: true } });
    const decided = new Map<string, ApprovalDecision>([
      ["a", { approved: false, reason: "too risky" }],
      ["b", { approved: true }],
    ]);
    const { verdicts, suspension } = await askBeforeToolCall(
      [call("a"), call("b"), call("c")],
      hook,
      decided,
      contextOf,
      () => false,
    );
    expect(asked).toEqual(["c"]);
    expect([...verdicts]).toStrictEqual([
      ["a", { approved: false, reason: "too risky" }],
      ["b", { approved: true }],
    ]);
    expect(suspension).toBeUndefined();
  });

  it("stops asking once the run has ended, and then suspends nothing", async () => {
    let ended = false;
    const asked: string[] = [];
    const hook: NonNullable<AgentHooks["beforeToolCall"]> = ({ call }) => {
      asked.push(call.id);
      if (call.id === "b") ended = true;
      return call.id === "c" ? { block: "late" } : { requireApproval: true };
    };
    const { verdicts, suspension } = await askBeforeToolCall(
      [call("a"), call("b"), call("c")],
      hook,
      undefined,
      contextOf,
      () => ended,
    );
    expect(asked).toEqual(["a", "b"]);
    expect(verdicts.size).toBe(0);
    expect(suspension).toBeUndefined();
  });

  it("keeps nothing of the answer that came after the run ended", async () => {
    let ended = false;
    const hook: NonNullable<AgentHooks["beforeToolCall"]> = () => {
      ended = true;
      return { block: "too late" };
    };
    const { verdicts } = await askBeforeToolCall([call("a")], hook, undefined, contextOf, () => ended);
    expect(verdicts.size).toBe(0);
  });
});
