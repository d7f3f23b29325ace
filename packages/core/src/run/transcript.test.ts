import { describe, expect, it } from "vitest";
import type { AgentMessage, ToolResultMessage } from "../messages.js";
import { validateTranscript } from "./transcript.js";

const calls = (...ids: string[]): AgentMessage => ({
  role: "assistant",
  content: ids.map((id) => ({ type: "toolCall" as const, id, name: "t", args: {} })),
});
const result = (id: string): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "t",
  content: "",
  isError: false,
  status: "ok",
});
const user: AgentMessage = { role: "user", content: "hi" };

describe("validateTranscript", () => {
  it("accepts results in call order, with app messages between", () => {
    expect(
      validateTranscript([user, calls("a", "b"), result("a"), { role: "note" }, result("b"), user]),
    ).toEqual([]);
  });

  it("reports a call without result, an orphan result, wrong order and a reused id", () => {
    expect(validateTranscript([user, calls("a", "b"), result("a"), user])[0]).toMatch(/"b" have no result/);
    expect(validateTranscript([user, result("x")])[0]).toMatch(/"x" answers no pending tool call/);
    expect(validateTranscript([calls("a", "b"), result("b"), result("a")])[0]).toMatch(/out of call order/);
    expect(validateTranscript([calls("a"), result("a"), calls("a"), result("a")])[0]).toMatch(/used twice/);
    expect(validateTranscript([calls("a")])[0]).toMatch(/"a" have no result/);
  });

  it("reports an assistant message whose content is no list of parts, without throwing", () => {
    const assistant = (content: unknown) => ({ role: "assistant", content }) as AgentMessage;
    expect(validateTranscript([user, assistant(null)])).toEqual([
      "message 1: the assistant message's content is not a list of parts (null)",
    ]);
    expect(validateTranscript([user, assistant([null])])).toEqual([
      "message 1: part 0 of the assistant message is no content part (null)",
    ]);
  });

  it("reports the calls a user message interrupts, and the results after it as answering nothing", () => {
    expect(validateTranscript([calls("a"), user, result("a")])).toEqual([
      'message 0: tool call(s) "a" have no result before the next message',
      'message 2: tool result "a" answers no pending tool call',
    ]);
  });
});
