import type {
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";
import {
  checkKeys,
  checkParts,
  checkSteps,
  isTokenCounts,
  type ScriptPart,
  type ScriptStep,
  type StepUsage,
  shownValue,
} from "./script-parts.js";

export { type ScriptPart, type ScriptStep, type StepUsage, script } from "./script-parts.js";

/**
 * A model call beyond the end of the script: the run made more model calls than the test
 * scripted. In a run, it is the `cause` of the run's provider error.
 */
export class ScriptExhaustedError extends Error {
  /** The call that found no step, counted from 1. */
  readonly call: number;
  /** How many steps the script has. */
  readonly steps: number;

  constructor(call: number, steps: number) {
    super(`Scripted model: no step left for call ${call} (the script has ${steps}).`);
    // Spelt out rather than taken from the class, which a bundler may rename: tests compare it.
    this.name = "ScriptExhaustedError";
    this.call = call;
    this.steps = steps;
  }
}

export interface ScriptedModelOptions {
  modelId?: string;
  /** Usage reported by each step unless a `finish` part says otherwise. */
  usage?: StepUsage;
}

/**
 * A v4 language model that plays a script, one step per model call, and records what it was sent
 * (`prompts`, `offeredTools`). It is `ai/test`'s `MockLanguageModelV4`, so it works with the AI SDK
 * too: streamed (`streamText`, `doStream`) or not (`generateText`, `doGenerate`, which gathers the
 * step's parts into one result), each call plays the next step. A call whose abort signal is
 * already aborted rejects with the signal's reason, as a real provider's `fetch` does.
 * A malformed script (a step that is not a list of `script.*` parts, `{ throws }` or a function,
 * or a part whose fields have the wrong types) is refused with a `TypeError` naming the step; so is a step function's malformed return, when
 * its call comes.
 */
export class ScriptedModel extends MockLanguageModelV4 {
  readonly #steps: readonly ScriptStep[];
  /** Every call, streamed (`doStream`) or not (`doGenerate`), in order. */
  readonly #calls: LanguageModelV4CallOptions[] = [];

  constructor(steps: readonly ScriptStep[], options: ScriptedModelOptions = {}) {
    checkOptions(options);
    const usage = options.usage ?? { inputTokens: 10, outputTokens: 5 };
    checkSteps(steps);
    let callIndex = 0;
    // Both kinds of call play the next step: streamed as it is, or gathered into one result.
    const play = (callOptions: LanguageModelV4CallOptions) => {
      this.#calls.push(callOptions);
      const index = callIndex++;
      // A signal aborted before the call never fires "abort": a real provider's fetch rejects at
      // once with its reason, and so do both kinds of call here (a hanging step would hang).
      callOptions.abortSignal?.throwIfAborted();
      const step = this.#steps[index];
      if (step === undefined) throw new ScriptExhaustedError(index + 1, this.#steps.length);
      if (typeof step === "object" && "throws" in step) throw step.throws;
      const parts = typeof step === "function" ? step(callOptions, index) : step;
      checkParts(parts, `what the function of step ${index + 1} returned`);
      return playStep(parts, index, usage);
    };
    super({
      modelId: options.modelId ?? "scripted-model",
      doStream: async (callOptions) => ({ stream: play(callOptions) }),
      doGenerate: async (callOptions) => generateResult(play(callOptions), callOptions.abortSignal),
    });
    // A copy, steps and parts: the script checked is the one played, whatever the test does to
    // its arrays afterwards.
    this.#steps = steps.map((step) => (Array.isArray(step) ? [...step] : step));
  }

  /** The prompt of every call so far, in order. */
  get prompts(): LanguageModelV4Prompt[] {
    return this.#calls.map((call) => call.prompt);
  }

  /** The tool names offered on every call so far. */
  get offeredTools(): string[][] {
    return this.#calls.map((call) => (call.tools ?? []).map((tool) => tool.name));
  }
}

export function scriptedModel(steps: readonly ScriptStep[], options?: ScriptedModelOptions): ScriptedModel {
  return new ScriptedModel(steps, options);
}

function checkOptions(options: unknown): asserts options is ScriptedModelOptions {
  checkKeys(options, ["modelId", "usage"], "the options");
  const { modelId, usage } = options as Record<string, unknown>;
  if (modelId !== undefined && typeof modelId !== "string")
    throw new TypeError(`Scripted model: modelId must be a string, got ${shownValue(modelId)}.`);
  if (usage !== undefined && !isTokenCounts(usage, ["inputTokens", "outputTokens"]))
    throw new TypeError(
      `Scripted model: usage must be { inputTokens, outputTokens } (finite numbers >= 0, no other key), got ${shownValue(usage)}.`,
    );
}

function playStep(parts: readonly ScriptPart[], stepIndex: number, usage: StepUsage) {
  const queue = expandParts(parts, stepIndex, usage);
  let cancelled = false;
  return new ReadableStream<LanguageModelV4StreamPart>({
    async pull(controller) {
      for (;;) {
        const next = queue.shift();
        if (next === undefined || cancelled) {
          if (!cancelled) controller.close();
          return;
        }
        if ("delayMs" in next) {
          if (next.delayMs === Number.POSITIVE_INFINITY) return new Promise<void>(() => {});
          await new Promise((resolve) => setTimeout(resolve, next.delayMs));
          continue;
        }
        controller.enqueue(next);
        return;
      }
    },
    cancel() {
      cancelled = true;
    },
  });
}

/**
 * A step's stream gathered into a `doGenerate` result, as `generateText` expects it: an `error`
 * part rejects, and an abort cancels the stream (a hanging step included) and rejects.
 */
async function generateResult(
  stream: ReadableStream<LanguageModelV4StreamPart>,
  abortSignal: AbortSignal | undefined,
): Promise<LanguageModelV4GenerateResult> {
  const reader = stream.getReader();
  const cancel = () => void reader.cancel();
  abortSignal?.addEventListener("abort", cancel, { once: true });
  const content: LanguageModelV4Content[] = [];
  const open = new Map<string, { text: string }>();
  let finish: Extract<LanguageModelV4StreamPart, { type: "finish" }> | undefined;
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      const part = next.value;
      if (part.type === "text-start" || part.type === "reasoning-start") {
        const block = {
          type: part.type === "text-start" ? ("text" as const) : ("reasoning" as const),
          text: "",
        };
        content.push(block);
        open.set(part.id, block);
      } else if (part.type === "text-delta" || part.type === "reasoning-delta") {
        const block = open.get(part.id);
        if (block) block.text += part.delta;
      } else if (part.type === "tool-call") content.push(part);
      else if (part.type === "error") throw part.error;
      else if (part.type === "finish") finish = part;
    }
  } finally {
    abortSignal?.removeEventListener("abort", cancel);
  }
  abortSignal?.throwIfAborted();
  if (!finish) throw new Error("Scripted model: the step ended without a finish part.");
  return { content, finishReason: finish.finishReason, usage: finish.usage, warnings: [] };
}

function expandParts(
  parts: readonly ScriptPart[],
  stepIndex: number,
  defaultUsage: StepUsage,
): (LanguageModelV4StreamPart | { delayMs: number })[] {
  const out: (LanguageModelV4StreamPart | { delayMs: number })[] = [{ type: "stream-start", warnings: [] }];
  let toolCalls = 0;
  let finish: Extract<ScriptPart, { kind: "finish" }> | undefined;
  parts.forEach((part, partIndex) => {
    const id = `${part.kind}-${stepIndex}-${partIndex}`;
    switch (part.kind) {
      case "text":
        out.push({ type: "text-start", id });
        for (const delta of part.chunks) out.push({ type: "text-delta", id, delta });
        out.push({ type: "text-end", id });
        return;
      case "reasoning":
        out.push({ type: "reasoning-start", id });
        for (const delta of part.chunks) out.push({ type: "reasoning-delta", id, delta });
        out.push({ type: "reasoning-end", id });
        return;
      case "toolCall": {
        const toolCallId = part.id ?? `call-${stepIndex + 1}-${++toolCalls}`;
        out.push({ type: "tool-input-start", id: toolCallId, toolName: part.name });
        out.push({ type: "tool-input-delta", id: toolCallId, delta: part.input });
        out.push({ type: "tool-input-end", id: toolCallId });
        out.push({ type: "tool-call", toolCallId, toolName: part.name, input: part.input });
        return;
      }
      case "delay":
        out.push({ delayMs: part.ms });
        return;
      case "error":
        out.push({ type: "error", error: part.error });
        return;
      case "finish":
        finish = part;
        return;
    }
  });
  const reason = finish?.reason ?? (parts.some((p) => p.kind === "toolCall") ? "tool-calls" : "stop");
  const usage = { ...defaultUsage, ...finish?.usage };
  out.push({ type: "finish", finishReason: { unified: reason, raw: reason }, usage: toV4Usage(usage) });
  return out;
}

function toV4Usage(usage: StepUsage): LanguageModelV4Usage {
  return {
    inputTokens: { total: usage.inputTokens, noCache: usage.inputTokens, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: usage.outputTokens, text: usage.outputTokens, reasoning: 0 },
  };
}
