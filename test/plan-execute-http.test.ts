import "@agent-core/plan-execute";
import { calculatorTool } from "@agent-core/cli";
import { Agent } from "@agent-core/core";
import { assertValidTranscript, validateChatMessages } from "@agent-core/testing";
import { expect, it } from "vitest";
import { useFakeOpenAI } from "./fixtures.js";

// Plan-execute over a real provider and real HTTP, against a server that rejects tool messages
// answering no tool call, as the OpenAI API does. The Go version's history (the plan as assistant
// text, then tool results with made-up ids) fails here; ours must not.

const fakeOpenAI = useFakeOpenAI();

it("keeps every request valid for a strict OpenAI-compatible server", async () => {
  const planText = JSON.stringify({
    steps: [
      { id: "a", tool: "calculator", args: { expression: "15*3" } },
      { id: "b", tool: "calculator", args: { expression: "10+5" } },
    ],
  });
  const { model, server } = await fakeOpenAI({
    reply: (request) => {
      if (request.response_format) return { text: ["```json\n", planText, "\n```"] };
      return { text: ["15*3 is 45 ", "and 10+5 is 15."] };
    },
  });
  const agent = new Agent({ provider: model, tools: [calculatorTool], orchestrator: "plan-execute" });

  const first = await agent.prompt("What is 15*3 and 10+5?").result();
  const second = await agent.prompt("Thanks! Say it again.").result();

  expect(first).toMatchObject({ stopReason: "completed", text: "15*3 is 45 and 10+5 is 15." });
  expect(second.stopReason).toBe("completed");
  assertValidTranscript(second.messages);
  expect(server.requests).toHaveLength(4);
  for (const request of server.requests) expect(validateChatMessages(request.messages)).toBeUndefined();

  const synthesis = server.requests[1];
  expect(synthesis?.response_format).toBeUndefined();
  expect(synthesis?.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
  expect(synthesis?.messages[2]?.tool_calls?.map((c) => c.function)).toEqual([
    { name: "calculator", arguments: '{"expression":"15*3"}' },
    { name: "calculator", arguments: '{"expression":"10+5"}' },
  ]);
  expect(synthesis?.messages[3]).toMatchObject({
    role: "tool",
    content: '{"expression":"15*3","result":45}',
  });
});

it("the Go version's history shape is rejected by the same server", () => {
  const goShape = [
    { role: "user", content: "What is 15*3?" },
    { role: "assistant", content: '{"steps":[{"tool":"calculator","args":{"expression":"15*3"}}]}' },
    { role: "tool", tool_call_id: "plan-step-0", content: '{"result":45}' },
  ];
  expect(validateChatMessages(goShape)).toMatch(
    /must be a response to a preceeding message with 'tool_calls'/,
  );
});
