import { describe, expect, it } from "vitest";
import type { AgentMessage, LlmMessage } from "../messages.js";
import { PromptBuilder, toModelPrompt } from "./prompt.js";

const history: LlmMessage[] = [
  { role: "user", content: "What is 2+2 and 3+3?" },
  {
    role: "assistant",
    content: [
      { type: "thinking", text: "two sums" },
      { type: "text", text: "Let me compute." },
      { type: "toolCall", id: "a", name: "calculator", args: { expression: "2+2" } },
      { type: "toolCall", id: "b", name: "calculator", args: { expression: "3+3" } },
    ],
  },
  {
    role: "toolResult",
    toolCallId: "a",
    toolName: "calculator",
    content: '{"result":4}',
    isError: false,
    status: "ok",
  },
  {
    role: "toolResult",
    toolCallId: "b",
    toolName: "calculator",
    content: "boom",
    isError: true,
    status: "error",
  },
];

describe("toModelPrompt", () => {
  it("converts to the v4 prompt: system first, parts mapped, consecutive results in one tool message", () => {
    expect(toModelPrompt("Be brief.", history)).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "What is 2+2 and 3+3?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "two sums" },
          { type: "text", text: "Let me compute." },
          { type: "tool-call", toolCallId: "a", toolName: "calculator", input: { expression: "2+2" } },
          { type: "tool-call", toolCallId: "b", toolName: "calculator", input: { expression: "3+3" } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "a",
            toolName: "calculator",
            output: { type: "text", value: '{"result":4}' },
          },
          {
            type: "tool-result",
            toolCallId: "b",
            toolName: "calculator",
            output: { type: "error-text", value: "boom" },
          },
        ],
      },
    ]);
  });

  it("leaves out empty text parts of an assistant message, keeping the order of the rest", () => {
    const prompt = toModelPrompt(undefined, [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "" },
          { type: "thinking", text: "plan" },
          { type: "text", text: "" },
          { type: "toolCall", id: "a", name: "calculator", args: {} },
        ],
      },
    ]);
    expect(prompt[1]).toEqual({
      role: "assistant",
      content: [
        { type: "reasoning", text: "plan" },
        { type: "tool-call", toolCallId: "a", toolName: "calculator", input: {} },
      ],
    });
  });

  it("leaves out an assistant message with nothing left to send (no blocks, or only empty text)", () => {
    const prompt = toModelPrompt(undefined, [
      { role: "user", content: "hi" },
      { role: "assistant", content: [] },
      { role: "user", content: "still there?" },
      { role: "assistant", content: [{ type: "text", text: "" }] },
      { role: "assistant", content: [{ type: "text", text: "yes" }] },
    ]);
    expect(prompt).toEqual([
      { role: "user", content: [{ type: "text", text: "hi" }] },
      { role: "user", content: [{ type: "text", text: "still there?" }] },
      { role: "assistant", content: [{ type: "text", text: "yes" }] },
    ]);
  });

  it("omits an empty system prompt", () => {
    expect(toModelPrompt("", history.slice(0, 1))[0]?.role).toBe("user");
  });
});

describe("PromptBuilder", () => {
  it("builds incrementally the same prompt as a one-shot conversion, without changing earlier prompts", () => {
    const builder = new PromptBuilder();
    const grown: AgentMessage[] = [];
    const prompts = [];
    for (const message of [...history, { role: "note" }, { role: "user", content: "thanks" } as const]) {
      grown.push(message);
      prompts.push(structuredClone(builder.buildFromHistory("S", grown)));
    }
    const llmOnly = grown.filter((m): m is LlmMessage => m.role !== "note");
    expect(prompts.at(-1)).toEqual(toModelPrompt("S", llmOnly));
    // The prompt handed out after the first result still has one result: the merge copied it.
    const afterFirst = builder.buildFromHistory("S", grown);
    expect(prompts[2]?.at(-1)).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "a",
          toolName: "calculator",
          output: { type: "text", value: '{"result":4}' },
        },
      ],
    });
    expect(afterFirst).not.toBe(builder.buildFromHistory("S", grown));
  });

  it("hands out arrays later calls never change, each with its own call's system message", () => {
    const builder = new PromptBuilder();
    const grown: AgentMessage[] = [history[0] as LlmMessage];
    const first = builder.buildFromHistory("A", grown);
    grown.push(history[1] as LlmMessage);
    const second = builder.buildFromHistory("B", grown);
    const withoutSystem = builder.buildFromHistory(undefined, grown);
    const again = builder.buildFromHistory("B", grown);
    expect(first.map((m) => m.role)).toEqual(["system", "user"]);
    expect(first[0]).toEqual({ role: "system", content: "A" });
    expect(second.map((m) => m.role)).toEqual(["system", "user", "assistant"]);
    expect(second[0]).toEqual({ role: "system", content: "B" });
    expect(withoutSystem.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(again).not.toBe(second);
    expect(again).toEqual(second);
    // The same system text reuses its message object.
    expect(again[0]).toBe(second[0]);
  });

  it("rebuilds when a custom pipeline returns messages that do not extend the previous ones", () => {
    const builder = new PromptBuilder();
    builder.build(undefined, history);
    const trimmed = history.slice(2, 3);
    const rebuilt = builder.build(undefined, [history[0] as LlmMessage, ...trimmed]);
    expect(rebuilt).toHaveLength(2);
    expect(rebuilt[1]?.role).toBe("tool");
    expect(builder.build(undefined, history)).toEqual(toModelPrompt(undefined, history));
  });
});

describe("PromptBuilder.build, what the measured survivors showed untested", () => {
  const [question, reply, result] = history as [LlmMessage, LlmMessage, LlmMessage];

  it("converts only the new tail of messages that extend the previous ones", () => {
    const builder = new PromptBuilder();
    const before = builder.build("S", [question]);
    const after = builder.build("S", [question, reply]);
    expect(after).toEqual(toModelPrompt("S", [question, reply]));
    // Converted once: the later prompts hold the same message objects.
    expect(after[1]).toBe(before[1]);
    expect(builder.build("S", [question, reply])[2]).toBe(after[2]);
  });

  it("starts again when the new messages do not begin with the previous ones", () => {
    const builder = new PromptBuilder();
    builder.build(undefined, [reply]);
    expect(builder.build(undefined, [question, result])).toEqual(
      toModelPrompt(undefined, [question, result]),
    );
  });

  it("sees messages added since to the array it was given", () => {
    const builder = new PromptBuilder();
    const messages = [question];
    builder.build(undefined, messages);
    messages.push(reply);
    expect(builder.build(undefined, messages)).toEqual(toModelPrompt(undefined, [question, reply]));
  });
});

describe("toModelPrompt, parts", () => {
  it("converts the text parts of a user message", () => {
    const parts = [
      { type: "text" as const, text: "a" },
      { type: "text" as const, text: "b" },
    ];
    expect(toModelPrompt(undefined, [{ role: "user", content: parts }])).toEqual([
      { role: "user", content: parts },
    ]);
  });

  it("leaves out only empty text parts: an empty thinking block stays", () => {
    const message: LlmMessage = {
      role: "assistant",
      content: [
        { type: "thinking", text: "" },
        { type: "text", text: "" },
        { type: "text", text: "ok" },
      ],
    };
    expect(toModelPrompt(undefined, [message])).toEqual([
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "" },
          { type: "text", text: "ok" },
        ],
      },
    ]);
  });
});
