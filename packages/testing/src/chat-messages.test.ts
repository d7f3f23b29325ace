import { describe, expect, it } from "vitest";
import { validateChatMessages } from "./chat-messages.js";

// The real API's text, verbatim ("preceeding" included).
const TOOL_WITHOUT_CALL =
  "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

describe("validateChatMessages", () => {
  const user = { role: "user", content: "Weather?" };
  const assistantCalling = (...ids: string[]) => ({
    role: "assistant",
    content: null,
    tool_calls: ids.map((id) => ({ id, type: "function", function: { name: "weather", arguments: "{}" } })),
  });
  const toolAnswer = (id: string) => ({ role: "tool", tool_call_id: id, content: "sunny" });

  it("accepts a valid history with tool calls and their answers", () => {
    const history = [
      { role: "system", content: "Be brief." },
      user,
      assistantCalling("call_1", "call_2"),
      toolAnswer("call_2"),
      toolAnswer("call_1"),
      { role: "assistant", content: "Sunny." },
      user,
    ];
    expect(validateChatMessages(history)).toBeUndefined();
  });

  it("rejects a tool message that answers no preceding call", () => {
    expect(validateChatMessages([user, toolAnswer("call_1")])).toBe(TOOL_WITHOUT_CALL);
    expect(validateChatMessages([user, assistantCalling("call_1"), toolAnswer("call_2")])).toBe(
      TOOL_WITHOUT_CALL,
    );
  });

  it("rejects answering the same call twice, or a call of an earlier assistant message", () => {
    const twice = [user, assistantCalling("call_1"), toolAnswer("call_1"), toolAnswer("call_1")];
    expect(validateChatMessages(twice)).toBe(TOOL_WITHOUT_CALL);
    const late = [user, assistantCalling("call_1"), toolAnswer("call_1"), user, toolAnswer("call_1")];
    expect(validateChatMessages(late)).toBe(TOOL_WITHOUT_CALL);
  });

  it("rejects tool calls left without a response, listing their ids", () => {
    const expected =
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
      "'tool_call_id'. The following tool_call_ids did not have response messages: call_x, call_y";
    const interrupted = [user, assistantCalling("call_w", "call_x", "call_y"), toolAnswer("call_w"), user];
    expect(validateChatMessages(interrupted)).toBe(expected);
    expect(
      validateChatMessages([user, assistantCalling("call_w", "call_x", "call_y"), toolAnswer("call_w")]),
    ).toBe(expected);
  });

  it("rejects malformed messages", () => {
    expect(validateChatMessages([])).toMatch(/empty array/);
    expect(validateChatMessages(undefined)).toBe("Missing required parameter: 'messages'.");
    expect(validateChatMessages([{ role: "robot", content: "beep" }])).toBe(
      "Invalid value: 'robot'. Supported values are: 'system', 'user', 'assistant', and 'tool'.",
    );
    expect(validateChatMessages([{ role: "user" }])).toBe(
      "Missing required parameter: 'messages[0].content'.",
    );
    const objectArguments = {
      role: "assistant",
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "weather", arguments: { city: "Rome" } } },
      ],
    };
    expect(validateChatMessages([user, objectArguments, toolAnswer("call_1")])).toBe(
      "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead.",
    );
  });
});
