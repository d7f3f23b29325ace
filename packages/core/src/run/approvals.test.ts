import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { ToolCall } from "../messages.js";
import { defineTool, type ToolCallContext } from "../tools/define-tool.js";
import { askBeforeToolCall, mayNeedApproval } from "./approvals.js";
import type { AgentHooks, BeforeToolCallResult } from "./hooks.js";
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

  it("a resumed batch whose undecided call now needs approval suspends again, keeping the decisions", async () => {
    const { hook } = hookOf({ c: { requireApproval: true } });
    const decided = new Map<string, ApprovalDecision>([["a", { approved: true }]]);
    const calls = [call("a"), call("c")];
    const { suspension } = await askBeforeToolCall(calls, hook, decided, contextOf, () => false);
    expect([...(suspension?.waits ?? [])]).toStrictEqual([["c", { kind: "approval" }]]);
    expect(suspension?.decided).toBe(decided);
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

describe("askBeforeToolCall with tools that declare needsApproval", () => {
  const amountOver100 = vi.fn(({ amount }: { amount: number }, _context: unknown) => amount > 100);
  const pay = defineTool({
    name: "pay",
    description: "Pays",
    inputSchema: z.object({ amount: z.number() }),
    needsApproval: amountOver100,
    execute: () => "paid",
  });
  const payCall = (id: string, args: unknown): ToolCall => ({ id, name: "pay", args });
  const withTool = (call: ToolCall): ToolCallContext => ({ ...contextOf(call), tool: pay });

  it("waits on the calls the tool's function picks, asking it only about valid arguments", async () => {
    amountOver100.mockClear();
    const calls = [payCall("a", { amount: 5 }), payCall("b", { amount: 500 }), payCall("c", { amount: "x" })];
    const { suspension } = await askBeforeToolCall(calls, undefined, undefined, withTool, () => false);
    expect([...(suspension?.waits ?? [])]).toStrictEqual([["b", { kind: "approval" }]]);
    expect(amountOver100.mock.calls.map(([args]) => args)).toEqual([{ amount: 5 }, { amount: 500 }]);
    expect(amountOver100.mock.calls[0]?.[1]).toMatchObject({ runId: "run", call: calls[0] });
  });

  it("waits on every call of a tool whose needsApproval is true, and on none when it is false", async () => {
    const always = defineTool({ ...pay, name: "always", needsApproval: true });
    const never = defineTool({ ...pay, name: "never", needsApproval: false });
    const calls = [payCall("a", { amount: 1 }), payCall("b", { amount: 1 })];
    const toolOf = (call: ToolCall): ToolCallContext => ({
      ...contextOf(call),
      tool: call.id === "a" ? always : never,
    });
    const { suspension } = await askBeforeToolCall(calls, undefined, undefined, toolOf, () => false);
    expect([...(suspension?.waits ?? [])]).toStrictEqual([["a", { kind: "approval" }]]);
  });

  it("lets beforeToolCall speak first: its block and its reason win", async () => {
    const { hook } = hookOf({ a: { block: "no money" }, b: { requireApproval: true, reason: "big" } });
    const calls = [
      payCall("a", { amount: 500 }),
      payCall("b", { amount: 500 }),
      payCall("c", { amount: 500 }),
    ];
    const { verdicts, suspension } = await askBeforeToolCall(calls, hook, undefined, withTool, () => false);
    expect([...verdicts]).toStrictEqual([["a", { block: "no money" }]]);
    expect([...(suspension?.waits ?? [])]).toStrictEqual([
      ["b", { kind: "approval", reason: "big" }],
      ["c", { kind: "approval" }],
    ]);
  });

  it("mayNeedApproval: only with a hook, or a tool of the batch that declares needsApproval", () => {
    const plain = defineTool({ name: "echo", description: "e", inputSchema: z.object({}), execute: () => 1 });
    const toolOf = (call: ToolCall) => (call.name === "pay" ? pay : plain);
    const echo: ToolCall = { id: "e", name: "echo", args: {} };
    expect(mayNeedApproval([echo], undefined, toolOf)).toBe(false);
    expect(mayNeedApproval([echo, payCall("p", {})], undefined, toolOf)).toBe(true);
    expect(mayNeedApproval([echo], () => undefined, toolOf)).toBe(true);
  });
});
