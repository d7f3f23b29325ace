import type { LanguageModelV4 } from "@ai-sdk/provider";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { NoProviderError } from "../errors.js";
import type { AgentEvent } from "../events/schemas.js";
import { estimateTokens } from "../history/context-budget.js";
import type { AgentMessage, LlmMessage } from "../messages.js";
import { defineTool } from "../tools/define-tool.js";
import { ToolRegistry } from "../tools/registry.js";
import { EventPublisher } from "./event-publisher.js";
import { type ModelCallSpec, ModelRequestBuilder, type ModelRequestSetup } from "./model-request.js";

function modelNamed(modelId: string): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: "test",
    modelId,
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error("not used")),
    doStream: () => Promise.reject(new Error("not used")),
  };
}

const toolNamed = (name: string) =>
  defineTool({ name, description: name, inputSchema: z.object({}), execute: () => name });

const model = modelNamed("main");

function builderWith(overrides: Partial<ModelRequestSetup> = {}) {
  const events: AgentEvent[] = [];
  const publisher = new EventPublisher(
    "run-1",
    { now: () => 0, monotonic: () => 0 },
    { push: (e) => events.push(e), dropped() {} },
    { publish() {} },
    undefined,
  );
  const setup: ModelRequestSetup = {
    runId: "run-1",
    provider: model,
    systemPrompt: "Be kind.",
    tools: new ToolRegistry([toolNamed("a"), toolNamed("b"), toolNamed("c")]),
    hooks: {},
    modelSettings: undefined,
    transformContext: undefined,
    convertToLlm: undefined,
    contextBudget: undefined,
    ...overrides,
  };
  return { builder: new ModelRequestBuilder(setup, new AbortController().signal, publisher), events };
}

const spec = (overrides: Partial<ModelCallSpec> = {}): ModelCallSpec => ({
  system: undefined,
  tools: undefined,
  settings: undefined,
  extraMessages: undefined,
  ...overrides,
});

const user = (text: string): LlmMessage => ({ role: "user", content: text });
const userPart = (text: string) => ({ role: "user", content: [{ type: "text", text }] });
const history: AgentMessage[] = [user("hi"), { role: "note", text: "not for the model" }];

describe("ModelRequestBuilder without a pipeline", () => {
  it("offers every tool by default, the ones listed, or none", () => {
    const { builder } = builderWith();
    expect(builder.needsPipeline).toBe(false);
    const names = (tools: ModelCallSpec["tools"]) =>
      builder.fromHistory(spec({ tools }), history).tools.map((t) => t.name);
    expect(names(undefined)).toEqual(["a", "b", "c"]);
    expect(names(["c", "a"])).toEqual(["a", "c"]);
    expect(names(false)).toEqual([]);
  });

  it("uses the agent's system prompt unless the call gives its own, and leaves app messages out", () => {
    const { builder } = builderWith();
    expect(builder.fromHistory(spec(), history)).toMatchObject({
      model,
      prompt: [{ role: "system", content: "Be kind." }, userPart("hi")],
    });
    expect(builder.fromHistory(spec({ system: "Judge." }), history).prompt).toEqual([
      { role: "system", content: "Judge." },
      userPart("hi"),
    ]);
  });

  it("appends extra messages after the history for that call only", () => {
    const { builder } = builderWith();
    const extra = builder.fromHistory(spec({ extraMessages: [user("Critique it.")] }), history);
    expect(extra.prompt).toEqual([
      { role: "system", content: "Be kind." },
      userPart("hi"),
      userPart("Critique it."),
    ]);
    expect(builder.fromHistory(spec(), history).prompt).toEqual([
      { role: "system", content: "Be kind." },
      userPart("hi"),
    ]);
  });

  it("merges the call's settings over the agent's modelSettings", () => {
    const modelSettings = { temperature: 0.2, maxOutputTokens: 100 };
    const { builder } = builderWith({ modelSettings });
    expect(builder.fromHistory(spec(), history).settings).toBe(modelSettings);
    expect(
      builder.fromHistory(spec({ settings: { temperature: 0.9, topP: 0.5 } }), history).settings,
    ).toEqual({
      temperature: 0.9,
      maxOutputTokens: 100,
      topP: 0.5,
    });
    expect(builderWith().builder.fromHistory(spec({ settings: { seed: 1 } }), history).settings).toEqual({
      seed: 1,
    });
  });

  it("without a provider, throws NoProviderError", () => {
    const { builder } = builderWith({ provider: undefined });
    expect(() => builder.fromHistory(spec(), history)).toThrow(NoProviderError);
  });
});

describe("ModelRequestBuilder through the pipeline", () => {
  it("runs transformContext on a copy, then convertToLlm, and never touches the history", async () => {
    const stored: AgentMessage[] = [user("old"), user("new"), { role: "note", text: "n" }];
    const transformContext = vi.fn((messages: readonly AgentMessage[]) => messages.slice(1));
    const convertToLlm = vi.fn((messages: readonly AgentMessage[]) =>
      messages.map((m) => (m.role === "note" ? user(`[note] ${m.text}`) : (m as LlmMessage))),
    );
    const { builder } = builderWith({ transformContext, convertToLlm });
    expect(builder.needsPipeline).toBe(true);
    const request = await builder.throughPipeline(spec({ extraMessages: [user("extra")] }), stored, 1);
    expect(transformContext.mock.calls[0]?.[0]).not.toBe(stored);
    // With the run's signal, so a transform that calls a model can stop with the run.
    expect(transformContext).toHaveBeenCalledWith(expect.any(Array), { signal: expect.any(AbortSignal) });
    expect(convertToLlm).toHaveBeenCalledWith([user("new"), { role: "note", text: "n" }]);
    expect(request.prompt).toEqual([
      { role: "system", content: "Be kind." },
      userPart("new"),
      userPart("[note] n"),
      userPart("extra"),
    ]);
    expect(stored).toHaveLength(3);
  });

  it("cuts the request to the context budget and publishes context_truncated", async () => {
    const long = (n: number) => user(`${n}:${"x".repeat(400)}`);
    const { builder, events } = builderWith({ contextBudget: { maxTokens: 300, systemTokens: 0 } });
    const request = await builder.throughPipeline(spec(), [long(1), long(2), long(3), long(4)], 1);
    // 112 tokens each: the first and the last user message stay, and only they fit.
    expect(request.prompt).toEqual([
      { role: "system", content: "Be kind." },
      userPart(long(1).content as string),
      userPart(long(4).content as string),
    ]);
    expect(events).toEqual([
      { type: "context_truncated", droppedMessages: 2, estimatedTokens: 224, runId: "run-1", seq: 0, ts: 0 },
    ]);
  });

  it("without systemTokens, counts the system prompt as the estimate of a user message of its text", async () => {
    const messages = [user("first"), user("middle"), user("last")];
    const historyTokens = messages.reduce((total, m) => total + estimateTokens(m), 0);
    const systemTokens = estimateTokens({ role: "user", content: "Be kind." });
    const fits = builderWith({ contextBudget: { maxTokens: historyTokens + systemTokens } });
    await fits.builder.throughPipeline(spec(), messages, 1);
    expect(fits.events).toEqual([]);
    const oneShort = builderWith({ contextBudget: { maxTokens: historyTokens + systemTokens - 1 } });
    await oneShort.builder.throughPipeline(spec(), messages, 1);
    expect(oneShort.events.map((e) => e.type)).toEqual(["context_truncated"]);
  });

  it("lets prepareStep replace the system prompt, the model, the tools and the messages", async () => {
    const other = modelNamed("other");
    const prepareStep = vi.fn(() => ({
      system: "Be brief.",
      model: other,
      tools: ["b"],
      messages: [user("replaced")],
    }));
    const { builder } = builderWith({ hooks: { prepareStep } });
    const request = await builder.throughPipeline(spec({ tools: ["a", "b"] }), history, 3);
    expect(prepareStep).toHaveBeenCalledWith({
      runId: "run-1",
      step: 3,
      messages: [user("hi")],
      tools: ["a", "b"],
      system: "Be kind.",
      model,
    });
    expect(request.model).toBe(other);
    expect(request.tools.map((t) => t.name)).toEqual(["b"]);
    expect(request.prompt).toEqual([{ role: "system", content: "Be brief." }, userPart("replaced")]);
  });

  it("keeps what prepareStep does not override", async () => {
    const { builder } = builderWith({ hooks: { prepareStep: () => undefined } });
    const request = await builder.throughPipeline(spec({ system: "Judge.", tools: false }), history, 1);
    expect(request).toMatchObject({
      model,
      tools: [],
      prompt: [{ role: "system", content: "Judge." }, userPart("hi")],
    });
  });

  it("without a provider, rejects with NoProviderError", async () => {
    const { builder } = builderWith({ provider: undefined, transformContext: (m) => m });
    await expect(builder.throughPipeline(spec(), history, 1)).rejects.toThrow(NoProviderError);
  });
});
