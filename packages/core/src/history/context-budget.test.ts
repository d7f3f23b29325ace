import { describe, expect, it, vi } from "vitest";
import {
  type AgentMessage,
  type AssistantMessage,
  isToolResultMessage,
  type ToolResultMessage,
  type UserMessage,
} from "../messages.js";
import { validateTranscript } from "../run/transcript.js";
import { type ContextBudgetOptions, contextBudget, estimateTokens } from "./context-budget.js";

const PLACEHOLDER = "[result dropped to fit the context budget]";
const ctx = { signal: new AbortController().signal };

const user = (text: string): UserMessage => ({ role: "user", content: text });
const assistant = (text: string): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text }],
});
const calls = (...ids: string[]): AssistantMessage => ({
  role: "assistant",
  content: ids.map((id) => ({ type: "toolCall" as const, id, name: "search", args: { query: id } })),
});
const result = (id: string, content: string, details?: unknown): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "search",
  content,
  ...(details === undefined ? {} : { details }),
  isError: false,
  status: "ok",
});
const note = (text: string): AgentMessage => ({ role: "note", text });

/** Simple costs to count by hand: a tool result costs its length, any other message 10. */
const simpleCost = (message: AgentMessage): number =>
  isToolResultMessage(message) ? message.content.length : 10;

const budget = (options: ContextBudgetOptions) => contextBudget({ estimate: simpleCost, ...options });

/** Runs a transform and checks what every output must keep: a valid transcript, in input order. */
async function fit(
  transform: ReturnType<typeof contextBudget>,
  input: readonly AgentMessage[],
): Promise<readonly AgentMessage[]> {
  const output = await transform(input, ctx);
  expect(validateTranscript(output)).toEqual([]);
  const positions = output.map((message) => positionIn(input, message));
  expect(positions).not.toContain(-1);
  expect(positions).toEqual([...positions].sort((a, b) => a - b));
  return output;
}

/** Where a message came from: the same object, or the result it shrinks. */
function positionIn(input: readonly AgentMessage[], message: AgentMessage): number {
  const same = input.indexOf(message);
  if (same !== -1 || !isToolResultMessage(message)) return same;
  return input.findIndex((m) => isToolResultMessage(m) && m.toolCallId === message.toolCallId);
}

// Costs (simpleCost): 10 for each of the 7 non-results, 100 for each of the 3 results: 370 in all.
// Units: [0] first user | [1-3] call a | [4-5] call b | [6] text | [7] last user | [8-9] last unit.
const history: readonly AgentMessage[] = [
  user("task"),
  calls("a"),
  result("a", "A".repeat(100), { raw: "a" }),
  note("a looked fine"),
  calls("b"),
  result("b", "B".repeat(100), { raw: "b" }),
  assistant("now the follow-up"),
  user("follow up"),
  calls("c"),
  result("c", "C".repeat(100), { raw: "c" }),
];

describe("contextBudget", () => {
  it("returns the history unchanged under the budget", async () => {
    const onTruncate = vi.fn();
    expect(await fit(budget({ maxTokens: 370, onTruncate }), history)).toBe(history);
    expect(onTruncate).not.toHaveBeenCalled();
  });

  it("shrinks the oldest tool result first, and only as many as needed", async () => {
    const onTruncate = vi.fn();
    const output = await fit(budget({ maxTokens: 369, onTruncate }), history);
    expect(output).toHaveLength(history.length);
    expect(output[2]).toEqual({ ...result("a", PLACEHOLDER) });
    expect(output[2]).not.toHaveProperty("details");
    expect(output[5]).toBe(history[5]);
    expect(onTruncate).toHaveBeenCalledExactlyOnceWith({ droppedMessages: 1, estimatedTokens: 370 - 58 });
  });

  it("subtracts systemTokens from the budget", async () => {
    const output = await fit(budget({ maxTokens: 370, systemTokens: 1 }), history);
    expect((output[2] as ToolResultMessage).content).toBe(PLACEHOLDER);
    expect(output[5]).toBe(history[5]);
  });

  it("then drops the oldest whole unit, with its results and app messages", async () => {
    const onTruncate = vi.fn();
    // Shrinking a and b leaves 254; dropping the unit of call a (10 + 42 + 10) gets to 192.
    const output = await fit(budget({ maxTokens: 253, onTruncate }), history);
    expect(output.map((m) => positionIn(history, m))).toEqual([0, 4, 5, 6, 7, 8, 9]);
    expect((output[2] as ToolResultMessage).content).toBe(PLACEHOLDER);
    // Three messages removed (result a counts once) and result b emptied.
    expect(onTruncate).toHaveBeenCalledExactlyOnceWith({ droppedMessages: 4, estimatedTokens: 192 });
  });

  it("never shrinks the results of the last assistant message's calls", async () => {
    const output = await fit(budget({ maxTokens: 253 }), history);
    expect(output.at(-1)).toBe(history[9]);
  });

  it("counts app messages at the estimator's cost and drops them with their unit", async () => {
    const estimate = (message: AgentMessage) => (message.role === "note" ? 500 : simpleCost(message));
    const output = await fit(contextBudget({ maxTokens: 400, estimate }), history);
    expect(output.map((m) => positionIn(history, m))).toEqual([0, 4, 5, 6, 7, 8, 9]);
  });

  it("keeps the first user message, the last user message and the last unit when nothing else fits", async () => {
    const onTruncate = vi.fn();
    const output = await fit(budget({ maxTokens: 1, onTruncate }), history);
    expect(output).toEqual([history[0], history[7], history[8], history[9]]);
    expect(onTruncate).toHaveBeenCalledExactlyOnceWith({ droppedMessages: 6, estimatedTokens: 130 });
  });

  it("keeps the latest reply with its results when a steering message ends the history", async () => {
    const input = [
      user("task"),
      calls("a"),
      result("a", "A".repeat(100)),
      calls("b"),
      result("b", "B".repeat(100)),
      user("use 16 instead"),
    ];
    const output = await fit(budget({ maxTokens: 1 }), input);
    expect(output).toEqual([input[0], input[3], input[4], input[5]]);
  });

  it("returns the task and the last unit when the task is the only user message", async () => {
    const input = [user("task"), calls("a"), result("a", "A".repeat(100)), assistant("done")];
    expect(await fit(budget({ maxTokens: 1 }), input)).toEqual([input[0], input[3]]);
  });

  it("drops app messages before the task as the oldest unit", async () => {
    const input = [note("pinned"), user("task"), assistant("one"), assistant("two")];
    expect(await fit(budget({ maxTokens: 30 }), input)).toEqual(input.slice(1));
  });

  it("leaves a result shorter than the placeholder as it is, and does not count it", async () => {
    const onTruncate = vi.fn();
    const input = [
      user("task"),
      calls("a"),
      result("a", "1"),
      calls("b"),
      result("b", "2"),
      assistant("done"),
    ];
    const output = await fit(budget({ maxTokens: 20, onTruncate }), input);
    expect(output).toEqual([input[0], input[5]]);
    expect(onTruncate).toHaveBeenCalledExactlyOnceWith({ droppedMessages: 4, estimatedTokens: 20 });
  });

  it("returns a history it cannot shrink as it is, without reporting", async () => {
    const onTruncate = vi.fn();
    const input = [user("a very long task")];
    expect(await fit(budget({ maxTokens: 1, onTruncate }), input)).toBe(input);
    expect(onTruncate).not.toHaveBeenCalled();
  });

  it("uses 0.75 of the context window by default, or the given ratio; maxTokens wins", async () => {
    const input = Array.from({ length: 10 }, (_, i) => user(`message ${i}`));
    const estimate = () => 100;
    const kept = async (options: ContextBudgetOptions) =>
      (await fit(contextBudget({ estimate, ...options }), input)).map((m) => input.indexOf(m as UserMessage));
    expect(await kept({ contextWindow: 1000 })).toEqual([0, 4, 5, 6, 7, 8, 9]);
    expect(await kept({ contextWindow: 1000, ratio: 0.5 })).toEqual([0, 6, 7, 8, 9]);
    expect(await kept({ contextWindow: 1000, maxTokens: 300 })).toEqual([0, 8, 9]);
  });

  it("never changes its input and gives the same answer each call", async () => {
    const before = structuredClone(history);
    const onTruncate = vi.fn();
    const transform = budget({ maxTokens: 253, onTruncate });
    const first = await fit(transform, history);
    const second = await fit(transform, history);
    expect(history).toEqual(before);
    expect(second).toEqual(first);
    expect(onTruncate).toHaveBeenCalledTimes(2);
  });

  it.each<[string, ContextBudgetOptions]>([
    ["no budget", {}],
    ["maxTokens 0", { maxTokens: 0 }],
    ["negative maxTokens", { maxTokens: -5 }],
    ["NaN maxTokens", { maxTokens: Number.NaN }],
    ["contextWindow 0", { contextWindow: 0 }],
    ["infinite contextWindow", { contextWindow: Number.POSITIVE_INFINITY }],
    ["ratio 0", { contextWindow: 1000, ratio: 0 }],
    ["ratio above 1", { contextWindow: 1000, ratio: 1.5 }],
    ["negative systemTokens", { maxTokens: 100, systemTokens: -1 }],
    ["systemTokens filling the budget", { maxTokens: 100, systemTokens: 100 }],
  ])("rejects %s with a RangeError", (_, options) => {
    expect(() => contextBudget(options)).toThrow(RangeError);
  });

  it("accepts a ratio of 1", () => {
    expect(() => contextBudget({ contextWindow: 1000, ratio: 1 })).not.toThrow();
  });
});

describe("estimateTokens", () => {
  it("counts about 4 characters per token, plus a small overhead", () => {
    const tokens = estimateTokens(user("x".repeat(4000)));
    expect(tokens).toBeGreaterThan(1000);
    expect(tokens).toBeLessThan(1030);
  });

  it("ignores a tool result's details, which never reach the model", () => {
    expect(estimateTokens(result("a", "ok", { rows: "x".repeat(10_000) }))).toBe(
      estimateTokens(result("a", "ok")),
    );
  });

  it("does not throw on an app message JSON cannot encode", () => {
    const cyclic: AgentMessage = { role: "note" };
    cyclic.self = cyclic;
    expect(estimateTokens(cyclic)).toBeGreaterThan(0);
    expect(estimateTokens({ role: "note", count: 1n })).toBeGreaterThan(0);
  });

  it("lets a long tool result dominate a realistic history, and shrinks just that one", async () => {
    const file = "export const line = 1;\n".repeat(2000);
    const input: AgentMessage[] = [
      { role: "user", content: "Find where `line` is defined and explain it.", timestamp: 1 },
      {
        role: "assistant",
        content: [
          { type: "thinking", text: "I should read the file first." },
          { type: "toolCall", id: "read-1", name: "read_file", args: { path: "src/line.ts" } },
        ],
        stopReason: "toolUse",
        usage: { inputTokens: 120, outputTokens: 30, totalTokens: 150 },
      },
      {
        role: "toolResult",
        toolCallId: "read-1",
        toolName: "read_file",
        content: file,
        details: { bytes: file.length },
        isError: false,
        status: "ok",
      },
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "grep-1", name: "grep", args: { pattern: "line" } }],
      },
      {
        role: "toolResult",
        toolCallId: "grep-1",
        toolName: "grep",
        content: "src/line.ts:1",
        isError: false,
        status: "ok",
      },
    ];
    const costs = input.map(estimateTokens);
    expect(costs[2]).toBeGreaterThan(10 * Math.max(...costs.filter((_, i) => i !== 2)));

    const onTruncate = vi.fn();
    const output = await fit(contextBudget({ contextWindow: 8000, onTruncate }), input);
    expect(output.filter((_, i) => i !== 2)).toEqual(input.filter((_, i) => i !== 2));
    expect((output[2] as ToolResultMessage).content).toBe(PLACEHOLDER);
    const estimatedTokens = output.map(estimateTokens).reduce((a, b) => a + b, 0);
    expect(estimatedTokens).toBeLessThan(6000);
    expect(onTruncate).toHaveBeenCalledExactlyOnceWith({ droppedMessages: 1, estimatedTokens });
  });
});
