import { describe, expect, it } from "vitest";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../messages.js";
import { validateTranscript } from "../run/transcript.js";
import { chainTransforms, defaultConvertToLlm, keepFirstAndRecent, keepRecent } from "./pipeline.js";

const ctx = { signal: new AbortController().signal };
const users = (n: number): AgentMessage[] =>
  Array.from({ length: n }, (_, i) => ({ role: "user", content: `message ${i}` }));
const notification: AgentMessage = { role: "notification", text: "build finished" };
const assistant = (text: string): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text }],
});
const callMessage = (...ids: string[]): AssistantMessage => ({
  role: "assistant",
  content: ids.map((id) => ({ type: "toolCall" as const, id, name: "calculator", args: {} })),
});
const result = (id: string): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "calculator",
  content: "1",
  isError: false,
  status: "ok",
});

describe("defaultConvertToLlm (Go TestDefaultConvertToLLM)", () => {
  it("keeps user, assistant and toolResult in order and drops custom kinds", () => {
    const messages: AgentMessage[] = [
      { role: "user", content: "hi" },
      notification,
      callMessage("c1"),
      { role: "ui-marker" },
      result("c1"),
    ];
    expect(defaultConvertToLlm(messages).map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
  });

  it("handles an empty history (Go TestPipelineEmptyMessages)", () => {
    expect(defaultConvertToLlm([])).toEqual([]);
  });
});

describe("keepRecent / keepFirstAndRecent", () => {
  it("keeps the last n (Go TestKeepRecentMessages, ...UnderLimit)", async () => {
    expect(await keepRecent(10)(users(100), ctx)).toHaveLength(10);
    expect(await keepRecent(10)(users(3), ctx)).toHaveLength(3);
  });

  it("keeps the first and the last n (Go TestKeepFirstAndRecentMessages)", async () => {
    const kept = await keepFirstAndRecent(10)(users(100), ctx);
    expect(kept).toHaveLength(11);
    expect(kept[0]).toEqual({ role: "user", content: "message 0" });
    expect(kept[1]).toEqual({ role: "user", content: "message 90" });
  });

  it("chains left to right (Go TestChainTransform)", async () => {
    const chained = chainTransforms(keepRecent(100), keepFirstAndRecent(10));
    expect(await chained(users(200), ctx)).toHaveLength(11);
  });

  it("never separates a tool call from its results", async () => {
    const history: AgentMessage[] = [
      { role: "user", content: "task" },
      assistant("thinking about it"),
      callMessage("a", "b", "c"),
      result("a"),
      result("b"),
      result("c"),
      assistant("done"),
    ];
    // A cut at the last 3 messages would start at result "b": it moves back to the call message.
    const recent = await keepRecent(3)(history, ctx);
    expect(recent.map((m) => m.role)).toEqual([
      "assistant",
      "toolResult",
      "toolResult",
      "toolResult",
      "assistant",
    ]);
    expect(validateTranscript(recent)).toEqual([]);
    const firstAndRecent = await keepFirstAndRecent(2)(history, ctx);
    expect(firstAndRecent[0]).toBe(history[0]);
    expect(validateTranscript(firstAndRecent)).toEqual([]);
    expect(firstAndRecent).toHaveLength(6);
  });

  it("rejects a negative or fractional n", () => {
    expect(() => keepRecent(-1)).toThrow(RangeError);
    expect(() => keepFirstAndRecent(1.5)).toThrow(/whole number/);
  });

  it("rejects n = 0, which would send the model no recent message at all, and n that is no number", async () => {
    expect(() => keepRecent(0)).toThrow(new RangeError("keepRecent(n) needs a whole number n >= 1, got 0."));
    expect(() => keepFirstAndRecent(0)).toThrow(
      new RangeError("keepFirstAndRecent(n) needs a whole number n >= 1, got 0."),
    );
    expect(() => keepRecent("3" as never)).toThrow(
      new RangeError('keepRecent(n) needs a whole number n >= 1, got "3".'),
    );
    expect(await keepRecent(1)(users(5), ctx)).toEqual([{ role: "user", content: "message 4" }]);
  });
});
