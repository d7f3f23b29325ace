import type { LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { generateText } from "ai";
import { describe, expect, it } from "vitest";
import { ScriptExhaustedError, script, scriptedModel } from "./scripted-model.js";

async function partsOf(stream: ReadableStream<LanguageModelV4StreamPart>) {
  const parts: LanguageModelV4StreamPart[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return parts;
    parts.push(value);
  }
}
const call = { prompt: [{ role: "user" as const, content: [{ type: "text" as const, text: "hi" }] }] };

describe("scriptedModel", () => {
  it("plays one step per call as v4 stream parts and records the prompts", async () => {
    const model = scriptedModel([
      [script.reasoning("r"), script.text("a", "b"), script.toolCall("t", { x: 1 })],
    ]);
    const parts = await partsOf((await model.doStream(call)).stream);
    expect(parts.map((p) => p.type)).toEqual([
      "stream-start",
      "reasoning-start",
      "reasoning-delta",
      "reasoning-end",
      "text-start",
      "text-delta",
      "text-delta",
      "text-end",
      "tool-input-start",
      "tool-input-delta",
      "tool-input-end",
      "tool-call",
      "finish",
    ]);
    expect(parts.find((p) => p.type === "tool-call")).toMatchObject({
      toolCallId: "call-1-1",
      toolName: "t",
      input: '{"x":1}',
    });
    expect(parts.at(-1)).toMatchObject({ finishReason: { unified: "tool-calls" } });
    expect(model.prompts).toEqual([call.prompt]);
  });

  it("rejects for a throwing step, and says so when the script runs out", async () => {
    const model = scriptedModel([{ throws: new Error("HTTP 500") }]);
    await expect(model.doStream(call)).rejects.toThrow("HTTP 500");
    await expect(model.doStream(call)).rejects.toThrow(
      "Scripted model: no step left for call 2 (the script has 1).",
    );
  });

  it("waits on delays, emits error parts, and lets a hanging step be cancelled", async () => {
    const model = scriptedModel([
      [script.delay(20), script.error("bad"), script.finish("length", { outputTokens: 9 })],
      [script.hang()],
    ]);
    const started = Date.now();
    const parts = await partsOf((await model.doStream(call)).stream);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(parts.map((p) => p.type)).toEqual(["stream-start", "error", "finish"]);
    expect(parts.at(-1)).toMatchObject({
      finishReason: { unified: "length" },
      usage: { outputTokens: { total: 9 } },
    });
    const reader = (await model.doStream(call)).stream.getReader();
    await reader.read();
    const pending = reader.read();
    await reader.cancel();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
  });

  it("rejects a call beyond the script with a ScriptExhaustedError giving the call and the steps", async () => {
    const model = scriptedModel([[script.text("the only step")]]);
    await model.doStream(call);
    const error = await Promise.resolve(model.doGenerate(call)).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ScriptExhaustedError);
    expect(error).toMatchObject({ name: "ScriptExhaustedError", call: 2, steps: 1 });
  });

  it("rejects a call whose signal was aborted before it, as a real provider's fetch does", async () => {
    const model = scriptedModel([[script.text("never played")]]);
    const abortSignal = AbortSignal.abort(new Error("stopped already"));
    await expect(model.doStream({ ...call, abortSignal })).rejects.toThrow("stopped already");
  });

  it("builds a step from the call options", async () => {
    const model = scriptedModel([(options) => [script.text(`${options.prompt.length} messages`)]]);
    const parts = await partsOf((await model.doStream(call)).stream);
    expect(parts.find((p) => p.type === "text-delta")).toMatchObject({ delta: "1 messages" });
  });
});

describe("scriptedModel with generateText (doGenerate)", () => {
  it("plays the next step, gathered into one result, and records its prompt", async () => {
    const model = scriptedModel([
      [script.text("streamed")],
      [script.reasoning("Let me ", "see."), script.text("Hello, ", "world."), script.toolCall("t", { x: 1 })],
      [script.text("late"), script.error("mid-stream failure")],
    ]);
    await model.doStream(call);
    const result = await generateText({ model, prompt: "hi", maxRetries: 0 });
    expect(result.reasoningText).toBe("Let me see.");
    expect(result.text).toBe("Hello, world.");
    expect(result.toolCalls).toMatchObject([{ toolCallId: "call-2-1", toolName: "t", input: { x: 1 } }]);
    expect(result.finishReason).toBe("tool-calls");
    expect(result.usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
    await expect(generateText({ model, prompt: "hi", maxRetries: 0 })).rejects.toThrow("mid-stream failure");
    expect(model.prompts).toHaveLength(3);
  });

  it("ends a hanging step when the call is aborted", async () => {
    const model = scriptedModel([[script.text("…"), script.hang()]]);
    const controller = new AbortController();
    const generating = generateText({ model, prompt: "hi", abortSignal: controller.signal, maxRetries: 0 });
    setTimeout(() => controller.abort(new Error("stop")), 10);
    await expect(generating).rejects.toThrow("stop");
  });

  it("ends a hanging step when the call's signal was aborted before it", async () => {
    const model = scriptedModel([[script.hang()]]);
    const abortSignal = AbortSignal.abort(new Error("stopped already"));
    await expect(model.doGenerate({ ...call, abortSignal })).rejects.toThrow("stopped already");
  });
});

describe("a malformed script", () => {
  it("is refused with a TypeError naming the step and what it holds", () => {
    expect(() => scriptedModel([script.text("hi")] as never)).toThrow(
      new TypeError(
        "Scripted model: step 1 must be an array of script parts, { throws } or a function, got a single text part (wrap a step's parts in [ ]).",
      ),
    );
    expect(() => scriptedModel([[script.text("a")], [{ kind: "txt" }]] as never)).toThrow(
      new TypeError(
        'Scripted model: part 1 of step 2 is not a script part (build it with script.*), got {"kind":"txt"}.',
      ),
    );
    expect(() => scriptedModel("abc" as never)).toThrow(
      new TypeError("Scripted model: the script must be an array of steps, got string abc."),
    );
    // A hole (a doubled comma) is a step the check must see: skipped, it ran out at its call.
    // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
    expect(() => scriptedModel([, [script.text("a")]] as never)).toThrow(
      new TypeError(
        "Scripted model: step 1 must be an array of script parts, { throws } or a function, got undefined.",
      ),
    );
    // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
    expect(() => scriptedModel([[script.text("a"), , script.text("b")]] as never)).toThrow(
      new TypeError(
        "Scripted model: part 2 of step 1 is not a script part (build it with script.*), got undefined.",
      ),
    );
    expect(() => script.delay(Number.NaN)).toThrow(
      new RangeError("script.delay: ms must be a number >= 0, got NaN."),
    );
  });

  it("is refused with a TypeError naming the step when { throws } holds another key", () => {
    expect(() => scriptedModel([[script.text("a")], { throws: 1, delayMs: 2 } as never])).toThrow(
      new TypeError(
        'Scripted model: step 2 is a { throws } step with another key, "delayMs" (it holds throws alone).',
      ),
    );
  });

  it("is refused with a TypeError naming the step when a part's fields have the wrong types", () => {
    expect(() => scriptedModel([[{ kind: "text" }]] as never)).toThrow(
      new TypeError(
        "Scripted model: part 1 of step 1 is a text part whose chunks are not all strings (undefined).",
      ),
    );
    expect(() => scriptedModel([[script.text("a")], [script.toolCall(42 as never)]])).toThrow(
      new TypeError(
        "Scripted model: part 1 of step 2 is a toolCall part whose name is not a string (number 42).",
      ),
    );
    expect(() => scriptedModel([[script.toolCall("t", () => 1)]])).toThrow(
      new TypeError(
        "Scripted model: part 1 of step 1 is a toolCall part whose arguments cannot be sent as JSON.",
      ),
    );
    expect(() => script.toolCall("t", { big: 1n })).toThrow(
      new TypeError(
        'script.toolCall: the arguments of "t" cannot be sent as JSON (Do not know how to serialize a BigInt).',
      ),
    );
    for (const usage of [
      { tokens: 5 },
      { inputTokens: -1 },
      { outputTokens: Number.NaN },
      { inputTokens: Number.POSITIVE_INFINITY },
    ])
      expect(() => scriptedModel([[script.finish("stop", usage as never)]]), JSON.stringify(usage)).toThrow(
        /step 1 is a finish part whose usage is not an object of token counts, inputTokens and outputTokens/,
      );
    expect(() => scriptedModel([[script.finish("done" as never)]])).toThrow(
      /step 1 is a finish part whose reason/,
    );
    const cyclic: Record<string, unknown> = { kind: "txt" };
    cyclic.self = cyclic;
    expect(() => scriptedModel([[cyclic]] as never)).toThrow(
      new TypeError(
        "Scripted model: part 1 of step 1 is not a script part (build it with script.*), got an object JSON cannot show.",
      ),
    );
  });

  it("is refused with a TypeError naming an unknown or malformed option", () => {
    expect(() => scriptedModel([], { modelID: "m" } as never)).toThrow(
      new TypeError('Scripted model: the options have no option "modelID" (known: modelId, usage).'),
    );
    expect(() => scriptedModel([], null as never)).toThrow(
      new TypeError("Scripted model: the options must be an object, got null."),
    );
    for (const usage of [
      5,
      { inputTokens: 1 },
      { inputTokens: Number.POSITIVE_INFINITY, outputTokens: 1 },
      { inputTokens: 1, outputTokens: 1, cachedTokens: 1 },
    ])
      expect(() => scriptedModel([], { usage } as never), JSON.stringify(usage)).toThrow(
        /^Scripted model: usage must be \{ inputTokens, outputTokens \} \(finite numbers >= 0, no other key\), got /,
      );
    expect(() => script.toolCall("t", {}, { ids: "x" } as never)).toThrow(
      new TypeError(`Scripted model: script.toolCall's options have no option "ids" (known: id).`),
    );
  });

  it("cannot be slipped in after the check, by changing the script's arrays", async () => {
    const steps: unknown[][] = [[script.text("hi")]];
    const model = scriptedModel(steps as never);
    steps.push([{ kind: "txt" }]);
    steps[0]?.push(5);
    expect(await partsOf((await model.doStream(call)).stream)).toContainEqual(
      expect.objectContaining({ type: "finish" }),
    );
    await expect(model.doStream(call)).rejects.toThrow("no step left for call 2 (the script has 1)");
  });

  it("from a step function is refused at its call, with a TypeError", async () => {
    const model = scriptedModel([() => script.text("hi") as never]);
    await expect(model.doStream(call)).rejects.toThrow(
      new TypeError(
        "Scripted model: what the function of step 1 returned must be an array of script parts, got a single text part (wrap a step's parts in [ ]).",
      ),
    );
  });
});
