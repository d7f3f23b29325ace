import "@agent-core/agentic";
import {
  Agent,
  type AgentEvent,
  DuplicateToolError,
  defineTool,
  InvalidConfigError,
  OrchestratorError,
  TimeoutError,
  ToolRegistry,
  type ToolResultMessage,
} from "@agent-core/core";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { jsonSchema, tool } from "ai";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { calculator } from "./fixtures.js";

// AI SDK `tool()`s registered as they are: a ToolSet goes straight into `new Agent({ tools })`.

const weatherInput = jsonSchema<{ city: string }>({
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
  additionalProperties: false,
});

function resultsOf(messages: readonly { role: string }[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
}

describe("a ToolSet in new Agent({ tools })", () => {
  it("offers its tools to the model with their JSON Schemas, and runs them", async () => {
    const provider = scriptedModel([
      [
        script.toolCall("add", { a: 2, b: 3 }, { id: "c1" }),
        script.toolCall("weather", { city: "Oslo" }, { id: "c2" }),
      ],
      [script.text("5, and sunny.")],
    ]);
    const agent = new Agent({
      provider,
      tools: {
        add: tool({
          description: "Adds two numbers",
          inputSchema: z.object({ a: z.number(), b: z.number() }),
          execute: async ({ a, b }) => a + b,
        }),
        weather: tool({
          description: "Weather now",
          inputSchema: weatherInput,
          execute: ({ city }) => `sunny in ${city}`,
        }),
      },
    });
    const heard: AgentEvent[] = [];
    agent.on("*", (event) => heard.push(event));
    const result = await agent.prompt("2+3, and the weather in Oslo?").result();
    expect(result.stopReason).toBe("completed");
    expect(resultsOf(result.messages).map(({ content, status }) => [content, status])).toEqual([
      ["5", "ok"],
      ["sunny in Oslo", "ok"],
    ]);
    expect(provider.doStreamCalls[0]?.tools).toEqual([
      expect.objectContaining({ type: "function", name: "add", description: "Adds two numbers" }),
      {
        type: "function",
        name: "weather",
        description: "Weather now",
        inputSchema: {
          type: "object",
          properties: { city: { type: "string" } },
          required: ["city"],
          additionalProperties: false,
        },
      },
    ]);
    assertEventProtocol(heard);
  });

  it("answers arguments that fail a JSON Schema with an error result naming the field; the model retries", async () => {
    const execute = vi.fn(({ city }: { city: string }) => `sunny in ${city}`);
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("weather", { town: "Oslo" }, { id: "c1" })],
        [script.toolCall("weather", { city: "Oslo" }, { id: "c2" })],
        [script.text("Sunny.")],
      ]),
      tools: { weather: tool({ inputSchema: weatherInput, execute }) },
    });
    const result = await agent.prompt("Weather in Oslo?").result();
    const [refused, answered] = resultsOf(result.messages);
    expect(refused).toMatchObject({ status: "error", isError: true });
    expect(refused?.content).toBe(
      'Invalid arguments for tool "weather": city: is required; town: is not an allowed property.',
    );
    expect(answered).toMatchObject({ status: "ok", content: "sunny in Oslo" });
    expect(execute).toHaveBeenCalledTimes(1);
    expect(result.stopReason).toBe("completed");
  });

  it("mixes agent-core tools and ToolSets in one array, in order", () => {
    const agent = new Agent({
      tools: [calculator, { weather: tool({ inputSchema: weatherInput, execute: () => "sunny" }) }],
    });
    expect(agent.tools.names()).toEqual(["calculator", "weather"]);
  });

  it("refuses a name taken twice, across ToolSets or with an agent-core tool", () => {
    const again = { calculator: tool({ inputSchema: weatherInput, execute: () => 1 }) };
    expect(() => new Agent({ tools: [calculator, again] })).toThrow(DuplicateToolError);
    expect(() => new Agent({ tools: [again, again] })).toThrow(/"calculator" is already registered/);
    expect(() => new ToolRegistry([again]).register(calculator)).toThrow(
      expect.objectContaining({ name: "DuplicateToolError", code: "duplicate_tool" }),
    );
  });

  it("refuses a provider tool at new Agent(), naming it", () => {
    const webSearch = {
      type: "provider" as const,
      id: "openai.web_search" as const,
      args: {},
      inputSchema: z.object({}),
      isProviderExecuted: true as const,
    };
    expect(() => new Agent({ tools: { web_search: webSearch } })).toThrow(InvalidConfigError);
    expect(() => new Agent({ tools: { web_search: webSearch } })).toThrow(/^Tool "web_search": /);
  });

  it("refuses a tool whose getter throws, in an array or given to ToolRegistry, naming it, with the getter's error as cause", () => {
    const failure = new Error("getter");
    const toolSet = Object.defineProperty({}, "broken", {
      enumerable: true,
      get() {
        throw failure;
      },
    });
    for (const make of [() => new Agent({ tools: [toolSet] }), () => new ToolRegistry(toolSet)]) {
      expect(make).toThrow(InvalidConfigError);
      expect(make).toThrow('Tool "broken": could not be read: getter.');
      expect(() => make()).toThrow(expect.objectContaining({ cause: failure }));
    }
  });
});

describe("an AI SDK tool's abortSignal", () => {
  /** A tool that waits for its abortSignal and rejects with its reason, and reports the signal. */
  function waiting(onSignal: (signal: AbortSignal) => void) {
    return tool({
      inputSchema: weatherInput,
      execute: (_input, { abortSignal }) =>
        new Promise<string>((_resolve, reject) => {
          if (abortSignal === undefined) return reject(new Error("no abortSignal"));
          onSignal(abortSignal);
          abortSignal.addEventListener("abort", () => reject(abortSignal.reason));
        }),
    });
  }

  it("is aborted when the run is aborted", async () => {
    let seen: AbortSignal | undefined;
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("weather", { city: "Oslo" })]]),
      tools: { weather: waiting((signal) => (seen = signal)) },
    });
    const run = agent.prompt("Weather?");
    agent.on("tool_call", () => setTimeout(() => run.abort("stop"), 10));
    const result = await run.result();
    expect(result.stopReason).toBe("aborted");
    expect(seen?.aborted).toBe(true);
  });

  it("is aborted when the tool's time is up, and the call ends as timeout", async () => {
    let seen: AbortSignal | undefined;
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("weather", { city: "Oslo" })], [script.text("Too slow.")]]),
      tools: { weather: waiting((signal) => (seen = signal)) },
      timeouts: { toolMs: 20 },
    });
    const result = await agent.prompt("Weather?").result();
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(TimeoutError);
    expect(resultsOf(result.messages)[0]).toMatchObject({ status: "timeout" });
    expect(result.stopReason).toBe("completed");
  });
});

describe("an AI SDK tool's needsApproval", () => {
  it("true: the run waits for approval, and the tool runs once approved", async () => {
    const execute = vi.fn(() => "paid");
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("pay", { city: "Oslo" }, { id: "c1" })],
        [script.text("Paid.")],
      ]),
      tools: { pay: tool({ inputSchema: weatherInput, execute, needsApproval: true }) },
    });
    const first = await agent.prompt("Pay").result();
    expect(first.stopReason).toBe("awaiting_approval");
    expect(agent.pendingApprovals).toEqual([{ toolCallId: "c1", toolName: "pay", args: { city: "Oslo" } }]);
    expect(execute).not.toHaveBeenCalled();
    const approved = await agent.approve("c1")?.result();
    expect(approved?.stopReason).toBe("completed");
    expect(execute).toHaveBeenCalledTimes(1);
    expect(resultsOf(approved?.messages ?? [])[0]).toMatchObject({ status: "ok", content: "paid" });
  });

  it("a function: asked with the input, it decides call by call; denied calls do not run", async () => {
    const execute = vi.fn(({ city }: { city: string }) => `booked ${city}`);
    const needsApproval = vi.fn(async ({ city }: { city: string }, _options: unknown) => city === "Paris");
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("book", { city: "Oslo" }, { id: "c1" }),
          script.toolCall("book", { city: "Paris" }, { id: "c2" }),
        ],
        [script.text("Booked Oslo.")],
      ]),
      tools: { book: tool({ inputSchema: weatherInput, execute, needsApproval }) },
    });
    const first = await agent.prompt("Book both").result();
    expect(first.stopReason).toBe("awaiting_approval");
    expect(agent.pendingApprovals.map((call) => call.toolCallId)).toEqual(["c2"]);
    expect(needsApproval.mock.calls[0]?.[1]).toMatchObject({ toolCallId: "c1", context: {} });
    const resumed = await agent.deny("c2", "too far")?.result();
    expect(resultsOf(resumed?.messages ?? []).map(({ content, status }) => [content, status])).toEqual([
      ["booked Oslo", "ok"],
      ["denied: too far", "denied"],
    ]);
    expect(execute).toHaveBeenCalledTimes(1);
  });
});

describe("an AI SDK tool's needsApproval that throws", () => {
  it("ends the run as a hook that throws: orchestrator_error, no call of the reply runs", async () => {
    const ran = vi.fn();
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("pay", {}, { id: "p1" }), script.toolCall("log", {}, { id: "l1" })],
        [script.text("never")],
      ]),
      tools: {
        pay: tool({
          inputSchema: z.object({}),
          needsApproval: () => {
            throw new Error("no rule for this");
          },
          execute: ran,
        }),
        log: tool({ inputSchema: z.object({}), execute: ran }),
      },
    });
    const statuses: string[] = [];
    agent.on("tool_result", (event) => statuses.push(`${event.toolName} ${event.status}`));
    const result = await agent.prompt("pay").result();
    expect(result.stopReason).toBe("error");
    expect(result.error).toBeInstanceOf(OrchestratorError);
    expect(result.error).toMatchObject({
      code: "orchestrator_error",
      message: 'Orchestrator "agentic" failed: no rule for this',
    });
    expect(statuses).toEqual(["pay error", "log error"]);
    expect(ran).not.toHaveBeenCalled();
  });
});

describe("an AI SDK tool without execute", () => {
  it("is a client tool: the run waits for submitToolResult()", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("confirm", { question: "Delete?" }, { id: "c1" })],
        [script.text("Deleted.")],
      ]),
      tools: {
        confirm: tool({ inputSchema: z.object({ question: z.string() }), outputSchema: z.boolean() }),
      },
    });
    agent.on("tool_call", (event) => {
      if (event.execution === "client")
        queueMicrotask(() => agent.submitToolResult(event.toolCallId, { result: true }));
    });
    const result = await agent.prompt("Delete it").result();
    expect(result.stopReason).toBe("completed");
    expect(resultsOf(result.messages)[0]).toMatchObject({ status: "ok", content: "true" });
  });
});

describe("what agent-core tools keep", () => {
  it("an agent-core tool takes needsApproval too", async () => {
    const pay = defineTool({
      name: "pay",
      description: "Pays",
      inputSchema: z.object({ amount: z.number() }),
      needsApproval: ({ amount }) => amount > 100,
      execute: ({ amount }) => `paid ${amount}`,
    });
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("pay", { amount: 500 }, { id: "c1" })], [script.text("ok")]]),
      tools: [pay],
    });
    expect((await agent.prompt("Pay 500").result()).stopReason).toBe("awaiting_approval");
  });
});
