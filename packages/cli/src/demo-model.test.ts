import type {
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";
import { stepCountIs, streamText, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createDemoModel } from "./demo-model.js";
import { evaluateExpression } from "./tools/expression.js";

const calculator: LanguageModelV4FunctionTool = {
  type: "function",
  name: "calculator",
  inputSchema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
};
const currentTime: LanguageModelV4FunctionTool = {
  type: "function",
  name: "get_current_time",
  inputSchema: { type: "object", properties: { timeZone: { type: "string" } } },
};
const tools = [calculator, currentTime];

const question: LanguageModelV4Prompt = [
  { role: "system", content: "You are helpful." },
  { role: "user", content: [{ type: "text", text: "What is 15*3 and 10+5?" }] },
];

function ask(text: string): LanguageModelV4Prompt {
  return [{ role: "user", content: [{ type: "text", text }] }];
}

/** The question, the demo's tool calls, and the given results for them. */
function withResults(...outputs: [expression: string, output: LanguageModelV4ToolResultOutput][]) {
  const prompt: LanguageModelV4Prompt = [
    ...ask(`What is ${outputs.map(([expression]) => expression).join(" and ")}?`),
    {
      role: "assistant",
      content: outputs.map(([expression], index) => ({
        type: "tool-call" as const,
        toolCallId: `demo-1-${index + 1}`,
        toolName: "calculator",
        input: { expression },
      })),
    },
    {
      role: "tool",
      content: outputs.map(([, output], index) => ({
        type: "tool-result" as const,
        toolCallId: `demo-1-${index + 1}`,
        toolName: "calculator",
        output,
      })),
    },
  ];
  return prompt;
}

async function stream(
  options: Partial<LanguageModelV4CallOptions> & { prompt: LanguageModelV4Prompt },
): Promise<LanguageModelV4StreamPart[]> {
  const { stream } = await createDemoModel().doStream(options);
  return readAll(stream);
}

async function readAll(
  stream: ReadableStream<LanguageModelV4StreamPart>,
): Promise<LanguageModelV4StreamPart[]> {
  const parts: LanguageModelV4StreamPart[] = [];
  const reader = stream.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) parts.push(read.value);
  return parts;
}

function textOf(parts: LanguageModelV4StreamPart[]): string {
  return parts.map((part) => (part.type === "text-delta" ? part.delta : "")).join("");
}

function finishOf(parts: LanguageModelV4StreamPart[]) {
  const finish = parts.at(-1);
  if (finish?.type !== "finish") throw new Error("the stream did not end with a finish part");
  return finish;
}

describe("createDemoModel", () => {
  it("identifies itself as the v4 offline demo", () => {
    const model = createDemoModel();
    expect(model).toMatchObject({
      specificationVersion: "v4",
      provider: "agent-core-demo",
      modelId: "offline-demo",
      supportedUrls: {},
    });
  });

  it("calls the calculator once per expression in the question", async () => {
    const parts = await stream({ prompt: question, tools });
    expect(parts.slice(0, 2)).toMatchObject([
      { type: "stream-start", warnings: [] },
      { type: "response-metadata", modelId: "offline-demo" },
    ]);
    const reasoning = parts.flatMap((part) => (part.type === "reasoning-delta" ? [part.delta] : [])).join("");
    expect(reasoning).toBe("The question needs the calculator for 15*3 and 10+5.");
    expect(parts.filter((part) => part.type === "tool-call")).toEqual([
      { type: "tool-call", toolCallId: "demo-1-1", toolName: "calculator", input: '{"expression":"15*3"}' },
      { type: "tool-call", toolCallId: "demo-1-2", toolName: "calculator", input: '{"expression":"10+5"}' },
    ]);
    const finish = finishOf(parts);
    expect(finish.finishReason).toEqual({ unified: "tool-calls", raw: "tool_calls" });
    expect(finish.usage.inputTokens.total).toBeGreaterThan(0);
    expect(finish.usage.outputTokens.total).toBe(
      (finish.usage.outputTokens.text ?? 0) + (finish.usage.outputTokens.reasoning ?? 0),
    );
  });

  it("streams each tool input in fragments that rebuild the call's JSON", async () => {
    const parts = await stream({ prompt: question, tools });
    const inputs = new Map<string, string>();
    for (const part of parts)
      if (part.type === "tool-input-delta") inputs.set(part.id, (inputs.get(part.id) ?? "") + part.delta);
    expect(parts.filter((part) => part.type === "tool-input-delta")).toHaveLength(4);
    expect(Object.fromEntries(inputs)).toEqual({
      "demo-1-1": '{"expression":"15*3"}',
      "demo-1-2": '{"expression":"10+5"}',
    });
    expect(parts.map((part) => part.type).slice(2)).toEqual([
      "reasoning-start",
      ...Array(9).fill("reasoning-delta"),
      "reasoning-end",
      ...["tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-end", "tool-call"],
      ...["tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-end", "tool-call"],
      "finish",
    ]);
  });

  it.each([
    ["What is 15 * 3?", ["15*3"]],
    ["What is (2+3)*4?", ["(2+3)*4"]],
    ["Compute -5+3, then 2*-3.", ["-5+3", "2*-3"]],
    ["Take 3*4. Then 5 apples.", ["3*4"]],
    ["(for example 2^10)", ["2^10"]],
  ])("finds the arithmetic in %j", async (text, expressions) => {
    const parts = await stream({ prompt: ask(text), tools });
    const calls = parts.flatMap((part) => (part.type === "tool-call" ? [JSON.parse(part.input)] : []));
    expect(calls).toEqual(expressions.map((expression) => ({ expression })));
  });

  it("reports the tool results in one streamed sentence", async () => {
    const prompt = withResults(
      ["15*3", { type: "json", value: { expression: "15*3", result: 45 } }],
      ["10+5", { type: "json", value: { expression: "10+5", result: 15 } }],
    );
    const parts = await stream({ prompt, tools });
    expect(textOf(parts)).toBe("[demo] 15*3 = 45 and 10+5 = 15.");
    expect(parts.filter((part) => part.type === "text-delta").length).toBeGreaterThan(3);
    expect(parts.some((part) => part.type === "tool-call")).toBe(false);
    expect(finishOf(parts).finishReason).toEqual({ unified: "stop", raw: "stop" });
  });

  it("reads results sent as JSON text, and reports errors", async () => {
    const prompt = withResults(
      ["2+2", { type: "text", value: '{"expression":"2+2","result":4}' }],
      ["10/0", { type: "error-text", value: "Division by zero" }],
      ["1+", { type: "error-json", value: { message: "Unexpected end of expression" } }],
    );
    expect(textOf(await stream({ prompt, tools }))).toBe(
      "[demo] 2+2 = 4, I could not compute 10/0: Division by zero and I could not compute 1+: Unexpected end of expression.",
    );
  });

  it("calls get_current_time for a time question, and reports the time", async () => {
    const parts = await stream({ prompt: ask("What time is it?"), tools });
    expect(parts.filter((part) => part.type === "tool-call")).toEqual([
      { type: "tool-call", toolCallId: "demo-1-1", toolName: "get_current_time", input: "{}" },
    ]);

    const prompt: LanguageModelV4Prompt = [
      ...ask("What time is it?"),
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "demo-1-1", toolName: "get_current_time", input: {} }],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "demo-1-1",
            toolName: "get_current_time",
            output: {
              type: "json",
              value: { timestamp: 1, datetime: "2026-11-22T04:05:06+01:00", timezone: "Europe/Paris" },
            },
          },
        ],
      },
    ];
    expect(textOf(await stream({ prompt, tools }))).toBe(
      "[demo] The current time is 2026-11-22T04:05:06+01:00 (Europe/Paris).",
    );
  });

  it("uses both tools in one step when asked for both", async () => {
    const parts = await stream({ prompt: ask("What is 6*7, and what is the date today?"), tools });
    expect(
      parts.flatMap((part) => (part.type === "tool-call" ? [[part.toolCallId, part.toolName]] : [])),
    ).toEqual([
      ["demo-1-1", "calculator"],
      ["demo-1-2", "get_current_time"],
    ]);
  });

  it("numbers tool calls by step", async () => {
    const prompt: LanguageModelV4Prompt = [
      ...withResults(["1+1", { type: "json", value: { expression: "1+1", result: 2 } }]),
      { role: "assistant", content: [{ type: "text", text: "[demo] 1+1 = 2." }] },
      ...ask("And 2*3?"),
    ];
    const parts = await stream({ prompt, tools });
    expect(parts.find((part) => part.type === "tool-call")).toMatchObject({ toolCallId: "demo-3-1" });
  });

  it("explains itself in plain text when no tool fits", async () => {
    for (const options of [{ prompt: question }, { prompt: ask("Hello there"), tools }]) {
      const parts = await stream(options);
      expect(textOf(parts)).toMatch(/^\[demo\] I am the offline demo model of agent-core: .* OPENAI_API_KEY/);
      expect(parts.some((part) => part.type === "tool-call" || part.type === "reasoning-start")).toBe(false);
      expect(finishOf(parts).finishReason.unified).toBe("stop");
    }
  });

  it("recalls the user's earlier messages when asked about the conversation", async () => {
    const prompt: LanguageModelV4Prompt = [
      ...withResults(["1+1", { type: "json", value: { expression: "1+1", result: 2 } }]),
      { role: "assistant", content: [{ type: "text", text: "[demo] 1+1 = 2." }] },
      ...ask("Hello"),
      { role: "assistant", content: [{ type: "text", text: "[demo] I am the offline demo model" }] },
      ...ask("What did I ask before?"),
    ];
    expect(textOf(await stream({ prompt, tools }))).toBe(
      '[demo] Before this you asked: "What is 1+1?" and "Hello".',
    );
    expect(textOf(await stream({ prompt: ask("What did I ask before?"), tools }))).toBe(
      "[demo] This is the first thing you asked me in this conversation.",
    );
  });

  it("answers a planner's JSON-mode call with a plan of the tools its prompt lists", async () => {
    const system = "Plan.\nTools:\n- calculator: evaluates\n- get_current_time: the time";
    const planning = (prompt: LanguageModelV4Prompt) =>
      stream({ prompt: [{ role: "system", content: system }, ...prompt], responseFormat: { type: "json" } });
    expect(JSON.parse(textOf(await planning(ask("What is 15*3 and what time is it?"))))).toEqual({
      steps: [
        { id: "s1", tool: "calculator", args: { expression: "15*3" } },
        { id: "s2", tool: "get_current_time", args: {} },
      ],
    });
    expect(JSON.parse(textOf(await planning(withResults(["15*3", { type: "text", value: "45" }]))))).toEqual({
      steps: [],
    });
    // The results of an earlier turn, answered, are the conversation's: the next question is planned.
    const answered: LanguageModelV4Prompt = [
      ...withResults(["15*3", { type: "text", value: "45" }]),
      { role: "assistant", content: [{ type: "text", text: "[demo] 15*3 = 45." }] },
      ...ask("And 10+5?"),
    ];
    expect(JSON.parse(textOf(await planning(answered)))).toEqual({
      steps: [{ id: "s1", tool: "calculator", args: { expression: "10+5" } }],
    });
    // A replanning call ends with the planner's request: after a failure it plans nothing more,
    // after steering what the steering asks.
    const request = ask('A step failed. Progress: - s1 calculator {"expression":"15*3"} → ok: 45');
    const replanning = [...withResults(["15*3", { type: "text", value: "45" }]), ...request];
    expect(JSON.parse(textOf(await planning(replanning)))).toEqual({ steps: [] });
    const steered = [...withResults(["15*3", { type: "text", value: "45" }]), ...ask("Only 2*8"), ...request];
    expect(JSON.parse(textOf(await planning(steered)))).toEqual({
      steps: [{ id: "s1", tool: "calculator", args: { expression: "2*8" } }],
    });
    const unlisted = await stream({
      prompt: [{ role: "system", content: "Plan." }, ...ask("What is 2+2?")],
      responseFormat: { type: "json" },
    });
    expect(JSON.parse(textOf(unlisted))).toEqual({ steps: [] });
  });

  it("returns the same content from doGenerate", async () => {
    const result = await createDemoModel().doGenerate({ prompt: question, tools });
    expect(result.content).toEqual([
      { type: "reasoning", text: "The question needs the calculator for 15*3 and 10+5." },
      { type: "tool-call", toolCallId: "demo-1-1", toolName: "calculator", input: '{"expression":"15*3"}' },
      { type: "tool-call", toolCallId: "demo-1-2", toolName: "calculator", input: '{"expression":"10+5"}' },
    ]);
    expect(result.finishReason.unified).toBe("tool-calls");
    expect(result.warnings).toEqual([]);
    expect(result.usage.outputTokens.total).toBeGreaterThan(0);
  });

  it("stops streaming with the abort reason", async () => {
    const controller = new AbortController();
    const reason = new Error("stopped by the user");
    const { stream } = await createDemoModel({ chunkDelayMs: 5 }).doStream({
      prompt: question,
      tools,
      abortSignal: controller.signal,
    });
    const reader = stream.getReader();
    expect((await reader.read()).value).toMatchObject({ type: "stream-start" });
    expect((await reader.read()).value).toMatchObject({ type: "response-metadata" });
    controller.abort(reason);
    await expect(reader.read()).rejects.toBe(reason);
  });

  it("does not start when already aborted", async () => {
    const reason = new Error("too late");
    const model = createDemoModel();
    const abortSignal = AbortSignal.abort(reason);
    await expect(model.doStream({ prompt: question, tools, abortSignal })).rejects.toBe(reason);
    await expect(model.doGenerate({ prompt: question, tools, abortSignal })).rejects.toBe(reason);
  });

  it("waits chunkDelayMs between parts", async () => {
    const { stream } = await createDemoModel({ chunkDelayMs: 20 }).doStream({ prompt: ask("Hi"), tools: [] });
    const reader = stream.getReader();
    const started = Date.now();
    for (let i = 0; i < 3; i++) await reader.read();
    // The first part comes at once, then one delay before each of the next two (minus timer slack).
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    await reader.cancel();
  });

  it("drives a full tool loop through the AI SDK's streamText", async () => {
    const result = streamText({
      model: createDemoModel(),
      prompt: "What is 15*3 and 10+5? And what is 10/0?",
      tools: {
        calculator: tool({
          description: "Evaluates an arithmetic expression.",
          inputSchema: z.object({ expression: z.string() }),
          execute: async ({ expression }) => ({ expression, result: evaluateExpression(expression) }),
        }),
        get_current_time: tool({
          description: "Returns the current time.",
          inputSchema: z.object({ timeZone: z.string().optional() }),
          execute: async () => ({ datetime: "2026-11-22T03:05:06Z", timezone: "UTC" }),
        }),
      },
      stopWhen: stepCountIs(3),
    });
    // The AI SDK sends a thrown error to the model as `error.toString()`, hence the class name.
    expect(await result.text).toBe(
      "[demo] 15*3 = 45, 10+5 = 15 and I could not compute 10/0: ExpressionError: Division by zero.",
    );
    const steps = await result.steps;
    expect(steps.map((step) => step.finishReason)).toEqual(["tool-calls", "stop"]);
    expect(steps[0]?.toolCalls.map((call) => call.input)).toEqual([
      { expression: "15*3" },
      { expression: "10+5" },
      { expression: "10/0" },
    ]);
  });
});
