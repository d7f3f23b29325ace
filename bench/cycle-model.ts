import { setTimeout as sleep } from "node:timers/promises";
import { type ScriptPart, script, scriptedModel } from "@agent-core/testing";
import type { LanguageModelV4, LanguageModelV4Prompt, LanguageModelV4StreamPart } from "@ai-sdk/provider";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/**
 * The benchmark's model, as in the peer study: stateless, it reads only the last prompt message.
 * After the user prompt it calls `add({a:0,b:1})`; after a tool result v < cycles it calls
 * `add({a:v,b:1})`; at v = cycles it answers "done". Its own cost is a few array pushes.
 */
export function cycleModel(cycles: number): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: "bench",
    modelId: "cycle-model",
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error("the benchmark model only streams")),
    doStream: async ({ prompt }) => ({ stream: streamOf(nextParts(prompt, cycles)) }),
  };
}

/** The same stateless model, waiting `latencyMs` before each stream starts, as a remote model would. */
export function slowCycleModel(cycles: number, latencyMs: number): LanguageModelV4 {
  const lean = cycleModel(cycles);
  return {
    ...lean,
    doStream: async (options) => {
      await sleep(latencyMs);
      return lean.doStream(options);
    },
  };
}

/**
 * The same script on the testing kit's scripted model (`ai/test`'s MockLanguageModelV4), as the
 * benchmark is specified: one model per run, since the mock records every call.
 */
export function scriptedCycleModel(cycles: number): LanguageModelV4 {
  const step = (options: { prompt: LanguageModelV4Prompt }): ScriptPart[] => {
    const parts = nextParts(options.prompt, cycles);
    const call = parts.find((part) => part.type === "tool-call");
    return call?.type === "tool-call"
      ? [script.toolCall(call.toolName, call.input, { id: call.toolCallId })]
      : [script.text("done")];
  };
  return scriptedModel(Array.from({ length: cycles + 1 }, () => step));
}

function nextParts(prompt: LanguageModelV4Prompt, cycles: number): LanguageModelV4StreamPart[] {
  const last = prompt[prompt.length - 1];
  let value = 0;
  if (last?.role === "tool") {
    const part = last.content[last.content.length - 1];
    value =
      part?.type === "tool-result" && part.output.type === "text" ? Number(part.output.value) : Number.NaN;
  }
  if (value >= cycles)
    return [
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "done" },
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
    ];
  return [
    { type: "tool-call", toolCallId: `c${value + 1}`, toolName: "add", input: `{"a":${value},"b":1}` },
    { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage },
  ];
}

function streamOf(parts: LanguageModelV4StreamPart[]): ReadableStream<LanguageModelV4StreamPart> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}
