import "@agent-core/agentic";
import { Agent, defineTool } from "@agent-core/core";
import { eventsOf, type FakeReply } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runToEnd, useFakeOpenAI } from "./fixtures.js";

// End to end through a real AI SDK provider over real HTTP: the agent drives
// @ai-sdk/openai-compatible's doStream() against a local OpenAI-compatible SSE server that
// validates histories the way the real API does.

const weather = defineTool({
  name: "weather",
  description: "Current weather for a city",
  inputSchema: z.object({ city: z.string(), unit: z.enum(["C", "F"]).optional() }),
  execute: async ({ city }) => ({ city, tempC: 21 }),
});

const fakeOpenAI = useFakeOpenAI();

const serve = (replies: FakeReply[]) =>
  fakeOpenAI({ reply: (_request, index) => replies[index] ?? { text: "(no more replies)" } });

describe("a real provider over HTTP", () => {
  it("streams tool-call arguments in fragments, runs the tool, then streams the answer", async () => {
    const { model, server } = await serve([
      {
        reasoning: ["The user wants ", "the weather."],
        toolCalls: [{ id: "call_abc", name: "weather", arguments: ['{"ci', 'ty":"Os', 'lo"}'] }],
        usage: { prompt_tokens: 12, completion_tokens: 7 },
      },
      { text: ["Oslo is ", "21°C."], usage: { prompt_tokens: 30, completion_tokens: 4 } },
    ]);
    const agent = new Agent({ systemPrompt: "Be brief.", provider: model, tools: [weather] });
    const { events, result } = await runToEnd(agent, "Weather in Oslo?");

    expect(result).toMatchObject({ stopReason: "completed", text: "Oslo is 21°C." });
    expect(
      eventsOf(events, "thinking")
        .map((e) => e.text)
        .join(""),
    ).toBe("The user wants the weather.");
    expect(eventsOf(events, "tool_call")[0]).toMatchObject({
      toolCallId: "call_abc",
      toolName: "weather",
      args: { city: "Oslo" },
    });
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({
      status: "ok",
      result: { city: "Oslo", tempC: 21 },
    });
    expect(eventsOf(events, "text_delta").map((e) => e.text)).toEqual(["Oslo is ", "21°C."]);
    expect(result.usage).toMatchObject({ inputTokens: 42, outputTokens: 11 });

    // What went over the wire: the tool schema intact, then a history the strict server accepted.
    const [first, second] = server.requests;
    expect(first?.stream).toBe(true);
    expect(first?.tools).toEqual([
      {
        type: "function",
        function: {
          name: "weather",
          description: "Current weather for a city",
          parameters: expect.objectContaining({
            type: "object",
            properties: { city: { type: "string" }, unit: { type: "string", enum: ["C", "F"] } },
            required: ["city"],
          }),
        },
      },
    ]);
    expect(second?.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(second?.messages[2]?.tool_calls).toEqual([
      { id: "call_abc", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } },
    ]);
    expect(second?.messages[3]).toMatchObject({
      role: "tool",
      tool_call_id: "call_abc",
      content: '{"city":"Oslo","tempC":21}',
    });
  });

  it("retries a 429 itself and reports a 500 as a provider error event", async () => {
    const { model, server } = await serve([
      { error: { status: 429, message: "slow down", headers: { "retry-after-ms": "1" } } },
      { text: "fine" },
      { error: { status: 500, message: "boom" } },
      { error: { status: 500, message: "boom" } },
    ]);
    const agent = new Agent({ provider: model, retry: { maxRetries: 1, initialDelayMs: 1 } });
    expect(await agent.prompt("one").result()).toMatchObject({ stopReason: "completed", text: "fine" });
    const failed = agent.prompt("two");
    const result = await failed.result();
    expect(result.stopReason).toBe("error");
    expect(eventsOf(failed.events, "error")[0]).toMatchObject({ code: "provider_error" });
    expect(result.error?.message).toMatch(/^The model call failed \(after 1 retry\): .*boom/);
    expect(server.requests).toHaveLength(4);
  });

  it("an abort mid-stream ends the run promptly and leaves a history the server still accepts", async () => {
    const { model, server } = await serve([
      { text: ["one ", "two ", "three ", "four"], chunkDelayMs: 200 },
      { text: "after abort" },
    ]);
    const agent = new Agent({ provider: model });
    const run = agent.prompt("count slowly");
    const off = agent.on("text_delta", () => {
      off();
      agent.abort();
    });
    const started = Date.now();
    const result = await run.result();
    expect(result.stopReason).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(600);
    const next = await agent.prompt("go on").result();
    expect(next).toMatchObject({ stopReason: "completed", text: "after abort" });
    expect(server.requests[1]?.messages.map((m) => m.role)).toEqual(["system", "user", "user"]);
  });
});
