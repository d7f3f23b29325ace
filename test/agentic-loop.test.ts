import { agentic } from "@agent-core/agentic";
import {
  Agent,
  type AgentMessage,
  defineTool,
  type LlmMessage,
  type ToolResultMessage,
  toolCallsOf,
} from "@agent-core/core";
import { assertEventProtocol, eventsOf, eventTypes, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { calculator, runToEnd, sleep } from "./fixtures.js";

describe("respond and steer (Go core tests)", () => {
  it("answers directly: turn_start, steering_mode respond, streamed text, turn_end (TestAgentRespondMode)", async () => {
    const model = scriptedModel([[script.text("Hel", "lo", "!")]]);
    const { events, result } = await runToEnd(new Agent({ provider: model }), "hi");
    expect(eventTypes(events)).toEqual([
      "agent_start",
      "turn_start",
      "text_delta",
      "text_delta",
      "text_delta",
      "steering_mode",
      "turn_end",
      "agent_end",
    ]);
    expect(eventsOf(events, "steering_mode")[0]).toMatchObject({ mode: "respond", queueSize: 0 });
    expect(result).toMatchObject({ stopReason: "completed", text: "Hello!" });
    expect(eventsOf(events, "turn_end")[0]?.message.content).toEqual([{ type: "text", text: "Hello!" }]);
  });

  it("forwards each streamed chunk as it is, spaces included (no word splitting)", async () => {
    const chunks = ["Two  spaces", " and\na newline ", "end"];
    const { events } = await runToEnd(
      new Agent({ provider: scriptedModel([[script.text(...chunks)]]) }),
      "x",
    );
    expect(eventsOf(events, "text_delta").map((e) => [e.text, e.index])).toEqual([
      [chunks[0], 0],
      [chunks[1], 1],
      [chunks[2], 2],
    ]);
  });

  it("runs one tool and answers (TestAgentToolExecution)", async () => {
    const model = scriptedModel([
      [script.toolCall("calculator", { a: 2, b: 2 }, { id: "call_1" })],
      [script.text("The answer is 4")],
    ]);
    const { events, result } = await runToEnd(new Agent({ provider: model, tools: [calculator] }), "2+2?");
    expect(eventsOf(events, "tool_call")).toHaveLength(1);
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({
      toolCallId: "call_1",
      toolName: "calculator",
      status: "ok",
      result: { result: 4 },
    });
    expect(result.text).toBe("The answer is 4");
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
  });

  it("runs several calls one at a time in the model's order (TestAgentSequentialToolCalls, with order)", async () => {
    const started: string[] = [];
    const slowFirst = defineTool({
      name: "work",
      description: "w",
      inputSchema: z.object({ id: z.string(), ms: z.number() }),
      execute: async ({ id, ms }) => {
        started.push(`start ${id}`);
        await sleep(ms);
        started.push(`end ${id}`);
        return id;
      },
    });
    const model = scriptedModel([
      [
        script.toolCall("work", { id: "c1", ms: 20 }, { id: "c1" }),
        script.toolCall("work", { id: "c2", ms: 0 }, { id: "c2" }),
      ],
      [script.text("Done")],
    ]);
    const { events, result } = await runToEnd(new Agent({ provider: model, tools: [slowFirst] }), "go");
    expect(started).toEqual(["start c1", "end c1", "start c2", "end c2"]);
    expect(eventTypes(events).filter((t) => t.startsWith("tool_"))).toEqual([
      "tool_call",
      "tool_result",
      "tool_call",
      "tool_result",
    ]);
    expect(eventsOf(events, "tool_call").map((e) => e.toolCallId)).toEqual(["c1", "c2"]);
    expect(eventsOf(events, "steering_mode")[0]).toMatchObject({ mode: "steer", queueSize: 2 });
    expect(
      result.messages.filter((m) => m.role === "toolResult").map((m) => (m as ToolResultMessage).toolCallId),
    ).toEqual(["c1", "c2"]);
  });

  it("streams reasoning as thinking and keeps the model's text beside tool calls in the history", async () => {
    const model = scriptedModel([
      [
        script.reasoning("Need ", "the sum."),
        script.text("Let me add."),
        script.toolCall("calculator", { a: 1, b: 2 }),
      ],
      [script.text("3")],
    ]);
    const { events, result } = await runToEnd(new Agent({ provider: model, tools: [calculator] }), "1+2");
    expect(eventsOf(events, "thinking").map((e) => e.text)).toEqual(["Need ", "the sum."]);
    const first = result.messages[1];
    expect(first).toMatchObject({
      role: "assistant",
      stopReason: "toolUse",
      content: [
        { type: "thinking", text: "Need the sum." },
        { type: "text", text: "Let me add." },
        { type: "toolCall", name: "calculator", args: { a: 1, b: 2 } },
      ],
    });
    // The second call sees the reasoning, the text and the call as the v4 assistant message.
    const secondPrompt = model.prompts[1] ?? [];
    expect(secondPrompt.find((m) => m.role === "assistant")?.content.map((p) => p.type)).toEqual([
      "reasoning",
      "text",
      "tool-call",
    ]);
  });

  it("sends every tool with its full schema in registration order", async () => {
    const lookup = defineTool({
      name: "lookup",
      description: "Looks things up",
      inputSchema: z.object({ filter: z.object({ kind: z.enum(["a", "b"]), ids: z.array(z.number()) }) }),
      execute: () => null,
    });
    const model = scriptedModel([[script.text("ok")]]);
    await runToEnd(new Agent({ provider: model, tools: [lookup, calculator] }), "hi");
    const tools = model.doStreamCalls[0]?.tools ?? [];
    expect(tools.map((t) => t.name)).toEqual(["lookup", "calculator"]);
    expect(tools[0]).toMatchObject({
      type: "function",
      description: "Looks things up",
      inputSchema: {
        properties: {
          filter: {
            properties: { kind: { enum: ["a", "b"] }, ids: { type: "array", items: { type: "number" } } },
          },
        },
      },
    });
  });

  it("sums usage over the run's model calls and records the model id", async () => {
    const model = scriptedModel(
      [
        [script.toolCall("calculator", { a: 1, b: 1 })],
        [script.text("2"), script.finish("stop", { inputTokens: 30, outputTokens: 7 })],
      ],
      { modelId: "scripted-x" },
    );
    const { events, result } = await runToEnd(new Agent({ provider: model, tools: [calculator] }), "1+1");
    expect(result.usage).toMatchObject({ inputTokens: 40, outputTokens: 12, totalTokens: 52 });
    expect(eventsOf(events, "agent_end")[0]?.usage).toEqual(result.usage);
    expect(result.messages[1]).toMatchObject({ model: "scripted-x" });
  });
});

describe("tool errors the model sees on its next call", () => {
  const lastToolResult = (prompt: readonly { role: string; content: unknown }[]) => {
    const tool = prompt.findLast((m) => m.role === "tool");
    return (tool?.content as { output: { type: string; value: string } }[] | undefined)?.at(-1)?.output;
  };

  it("an unknown tool gives an error result naming it and the tools there are", async () => {
    const model = scriptedModel([[script.toolCall("nope", {})], [script.text("sorry")]]);
    const { events } = await runToEnd(new Agent({ provider: model, tools: [calculator] }), "x");
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({
      status: "error",
      error: 'Unknown tool "nope". Available tools: calculator.',
    });
    expect(lastToolResult(model.prompts[1] ?? [])).toEqual({
      type: "error-text",
      value: 'Unknown tool "nope". Available tools: calculator.',
    });
  });

  it("arguments that fail the schema are rejected before the tool runs, with the zod issue", async () => {
    let ran = false;
    const strict = defineTool({
      name: "strict",
      description: "s",
      inputSchema: z.object({ n: z.number() }),
      execute: () => {
        ran = true;
      },
    });
    const model = scriptedModel([[script.toolCall("strict", { n: "five" })], [script.text("ok")]]);
    const { events } = await runToEnd(new Agent({ provider: model, tools: [strict] }), "x");
    expect(ran).toBe(false);
    const error = eventsOf(events, "tool_result")[0]?.error ?? "";
    expect(error).toMatch(/^Invalid arguments for tool "strict": n: /);
    expect(lastToolResult(model.prompts[1] ?? [])?.value).toBe(error);
  });

  it("arguments that are not JSON are reported as such", async () => {
    const model = scriptedModel([[script.toolCall("calculator", '{"a": 1,')], [script.text("ok")]]);
    const { events } = await runToEnd(new Agent({ provider: model, tools: [calculator] }), "x");
    expect(eventsOf(events, "tool_result")[0]?.error).toMatch(/The arguments were not valid JSON: \{"a": 1,/);
  });

  it("a tool that throws gives its message as an error result, and the run goes on", async () => {
    const failing = defineTool({
      name: "failing",
      description: "f",
      inputSchema: z.object({}),
      execute: async () => {
        throw new Error("disk full");
      },
    });
    const model = scriptedModel([[script.toolCall("failing")], [script.text("It failed: disk full")]]);
    const { events, result } = await runToEnd(new Agent({ provider: model, tools: [failing] }), "x");
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({ status: "error", error: "disk full" });
    expect(result.messages[2]).toMatchObject({
      role: "toolResult",
      isError: true,
      status: "error",
      content: "disk full",
    });
    expect(result.stopReason).toBe("completed");
  });
});

describe("steering", () => {
  it("interrupts between tools: the rest are skipped, then the steering message enters the history", async () => {
    const agent = new Agent({
      tools: [
        defineTool({
          name: "calculator",
          description: "c",
          inputSchema: z.object({ a: z.number(), b: z.number() }),
          execute: ({ a, b }) => {
            if (a === 1) agent.steer("Actually, use 16 instead of 15");
            return a + b;
          },
        }),
      ],
      provider: scriptedModel([
        [
          script.toolCall("calculator", { a: 1, b: 1 }, { id: "c1" }),
          script.toolCall("calculator", { a: 2, b: 2 }, { id: "c2" }),
          script.toolCall("calculator", { a: 3, b: 3 }, { id: "c3" }),
        ],
        [script.text("Using 16.")],
      ]),
    });
    const { events, result } = await runToEnd(agent, "go");
    expect(eventsOf(events, "tool_result").map((e) => [e.toolCallId, e.status, e.error])).toEqual([
      ["c1", "ok", undefined],
      ["c2", "skipped", "skipped (steering interrupt)"],
      ["c3", "skipped", "skipped (steering interrupt)"],
    ]);
    expect(eventsOf(events, "tool_call").map((e) => e.toolCallId)).toEqual(["c1", "c2", "c3"]);
    expect(eventsOf(events, "steering_applied")[0]?.messages).toEqual([
      expect.objectContaining({ role: "user", content: "Actually, use 16 instead of 15" }),
    ]);
    expect(result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "toolResult",
      "user",
      "assistant",
    ]);
    expect(result.messages[3]).toMatchObject({
      isError: true,
      status: "skipped",
      content: "skipped (steering interrupt)",
    });
    expect(result.text).toBe("Using 16.");
  });

  it("is checked before the first model call", async () => {
    const model = scriptedModel([[script.text("ok")]]);
    const agent = new Agent({ provider: model });
    agent.steer("Answer in French");
    const { events } = await runToEnd(agent, "Hello");
    expect(eventTypes(events).slice(0, 3)).toEqual(["agent_start", "turn_start", "steering_applied"]);
    const prompt = model.prompts[0] ?? [];
    expect(
      prompt.filter((m) => m.role === "user").map((m) => (m.content[0] as { text: string }).text),
    ).toEqual(["Hello", "Answer in French"]);
  });

  it("arriving while the answer streams, it is honoured before the turn ends", async () => {
    let agent: Agent | undefined;
    const model = scriptedModel([
      () => {
        agent?.steer("Shorter please");
        return [script.text("A long answer")];
      },
      [script.text("Short.")],
    ]);
    agent = new Agent({ provider: model });
    const { events, result } = await runToEnd(agent, "Explain");
    expect(eventsOf(events, "turn_end")).toHaveLength(1);
    expect(result.text).toBe("Short.");
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("takes messages from an async getSteeringMessages callback beside the queue", async () => {
    const pending = ["from callback"];
    const model = scriptedModel([
      [script.toolCall("calculator", { a: 1, b: 1 }), script.toolCall("calculator", { a: 2, b: 2 })],
      [script.text("ok")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [calculator],
      getSteeringMessages: async ({ messages }) => {
        // Only once a tool result exists, so the interrupt lands between the two calls.
        if (!messages.some((m) => m.role === "toolResult")) return [];
        return pending.splice(0);
      },
    });
    const { events } = await runToEnd(agent, "go");
    expect(eventsOf(events, "tool_result").map((e) => e.status)).toEqual(["ok", "skipped"]);
    expect(eventsOf(events, "steering_applied")[0]?.messages[0]).toMatchObject({ content: "from callback" });
  });
});

describe("follow-ups", () => {
  it("open a new turn with its own duration when the agent would stop", async () => {
    const model = scriptedModel([[script.delay(30), script.text("45 and 15")], [script.text("9 and 3")]]);
    const agent = new Agent({ provider: model });
    agent.followUp("Now divide both by 5");
    const { events, result } = await runToEnd(agent, "15*3 and 10+5?");
    expect(eventsOf(events, "turn_start").map((e) => e.turn)).toEqual([1, 2]);
    const [first, second] = eventsOf(events, "turn_end");
    expect(first?.message.content).toEqual([{ type: "text", text: "45 and 15" }]);
    expect(second?.message.content).toEqual([{ type: "text", text: "9 and 3" }]);
    expect(first?.durationMs).toBeGreaterThanOrEqual(25);
    expect(second?.durationMs).toBeLessThan(first?.durationMs ?? 0);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("come from an async getFollowUpMessages callback too, and the loop stops when it returns none", async () => {
    const queue = ["and again"];
    const model = scriptedModel([[script.text("one")], [script.text("two")]]);
    const agent = new Agent({ provider: model, getFollowUpMessages: async () => queue.splice(0) });
    const { result } = await runToEnd(agent, "start");
    expect(result.text).toBe("two");
    expect(model.doStreamCalls).toHaveLength(2);
  });

  it("are used after tools as well (the follow-up prompt sees the tool results)", async () => {
    const model = scriptedModel([
      [script.toolCall("calculator", { a: 1, b: 2 })],
      [script.text("3")],
      [script.text("6")],
    ]);
    const agent = new Agent({ provider: model, tools: [calculator] });
    agent.followUp("double it");
    const { result } = await runToEnd(agent, "1+2");
    const roles = (model.prompts[2] ?? []).map((m) => m.role);
    expect(roles).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
    expect(result.text).toBe("6");
  });
});

describe("system prompts (steeringInstruction as in Go)", () => {
  const systemOf = (prompt: readonly { role: string; content: unknown }[] | undefined) =>
    prompt?.find((m) => m.role === "system")?.content as string;

  it("adds the default tool instruction on the first call and the after-tools one later", async () => {
    const model = scriptedModel([[script.toolCall("calculator", { a: 1, b: 2 })], [script.text("3")]]);
    await runToEnd(
      new Agent({ systemPrompt: "You are terse.", provider: model, tools: [calculator] }),
      "1+2",
    );
    expect(systemOf(model.prompts[0])).toMatch(
      /^You are terse\.\n\nWhen the request can be answered with the available tools/,
    );
    expect(systemOf(model.prompts[1])).toMatch(/^You are terse\.\n\nYou have just received tool results\./);
  });

  it("replaces the first call's instruction with steeringInstruction", async () => {
    const model = scriptedModel([[script.text("ok")]]);
    const agent = new Agent({
      systemPrompt: "Base.",
      provider: model,
      tools: [calculator],
      orchestrator: agentic({ steeringInstruction: "Always use tools." }),
    });
    await runToEnd(agent, "hi");
    expect(systemOf(model.prompts[0])).toBe("Base.\n\nAlways use tools.");
  });

  it("uses the default system prompt and no tool instruction when there are no tools", async () => {
    const model = scriptedModel([[script.text("ok")]]);
    await runToEnd(new Agent({ provider: model }), "hi");
    expect(systemOf(model.prompts[0])).toBe("You are a helpful AI assistant.");
  });
});

describe("history pipeline", () => {
  it("keeps custom messages in the history but never sends them to the model", async () => {
    const model = scriptedModel([[script.text("one")], [script.text("two")]]);
    const agent = new Agent({ provider: model });
    await runToEnd(agent, "first");
    const note: AgentMessage = { role: "notification", text: "deploy finished" };
    const run = agent.prompt([note, "second"]);
    const result = await run.result();
    expect(result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "notification",
      "user",
      "assistant",
    ]);
    expect(model.prompts[1]?.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
  });

  it("runs transformContext then convertToLlm before each call, without changing the stored history", async () => {
    const model = scriptedModel([[script.text("a")], [script.text("b")]]);
    const agent = new Agent({
      provider: model,
      transformContext: async (messages) => messages.slice(-1),
      convertToLlm: (messages) =>
        messages.map((m) =>
          m.role === "notification" ? { role: "user", content: `[note] ${m.text}` } : (m as LlmMessage),
        ),
    });
    await runToEnd(agent, "first");
    await agent.prompt([{ role: "notification", text: "hello" }]).result();
    expect(model.prompts[1]?.slice(1)).toEqual([
      { role: "user", content: [{ type: "text", text: "[note] hello" }] },
    ]);
    expect(agent.messages).toHaveLength(4);
  });
});

describe("custom orchestrators and the transcript guarantee", () => {
  it("accepts an orchestrator instance", async () => {
    const agent = new Agent({
      orchestrator: {
        name: "echo",
        async run(ctx) {
          ctx.startTurn();
          const last = ctx.messages.all.at(-1) as { content: string };
          ctx.emit({ type: "text_delta", text: last.content, index: 0 });
          const message = {
            role: "assistant" as const,
            content: [{ type: "text" as const, text: last.content }],
          };
          ctx.messages.append(message);
          ctx.endTurn(message);
        },
      },
    });
    const { result } = await runToEnd(agent, "ping");
    expect(result.text).toBe("ping");
  });

  it("answers tool calls an orchestrator left without result, and reports its crash as an error", async () => {
    const agent = new Agent({
      orchestrator: {
        name: "careless",
        async run(ctx) {
          ctx.startTurn();
          ctx.messages.append({
            role: "assistant",
            content: [{ type: "toolCall", id: "t1", name: "calculator", args: {} }],
          });
          throw new TypeError("oops");
        },
      },
    });
    const { events, result } = await runToEnd(agent, "x");
    expect(result.stopReason).toBe("error");
    expect(result.error).toMatchObject({
      code: "orchestrator_error",
      message: 'Orchestrator "careless" failed: oops',
    });
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({ toolCallId: "t1", status: "error" });
    expect(eventsOf(events, "error")[0]).toMatchObject({ code: "orchestrator_error" });
    expect(toolCallsOf(result.messages[1] as never)).toHaveLength(1);
  });

  it("refuses events whose ordering the framework owns, naming the service to use", async () => {
    const agent = new Agent({
      orchestrator: {
        name: "forger",
        async run(ctx) {
          ctx.emit({ type: "tool_call", toolCallId: "x", toolName: "t", args: {} });
        },
      },
    });
    const { events, result } = await runToEnd(agent, "x");
    expect(result.error).toMatchObject({
      code: "reserved_event",
      message: 'Orchestrators cannot emit "tool_call" events: they come from ctx.executeTools(calls).',
    });
    expect(eventsOf(events, "tool_call")).toEqual([]);
  });

  it("ignores emits from an orchestrator that keeps going after its run ended", async () => {
    let late: (() => void) | undefined;
    const agent = new Agent({
      limits: { abortGraceMs: 10 },
      orchestrator: {
        name: "stubborn",
        run: (ctx) =>
          new Promise<void>((resolve) => {
            late = () => {
              ctx.emit({ type: "thinking", text: "still here" });
              resolve();
            };
          }),
      },
    });
    const run = agent.prompt("x");
    setTimeout(() => run.abort(), 5);
    const result = await run.result();
    late?.();
    expect(result.stopReason).toBe("aborted");
    expect(eventsOf(run.events, "thinking")).toHaveLength(0);
    assertEventProtocol(run.events);
  });
});
