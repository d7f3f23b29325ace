import type {
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";

/** One thing a scripted model step does, in order. Build them with `script.*`. */
export type ScriptPart =
  | { kind: "text"; chunks: string[] }
  | { kind: "reasoning"; chunks: string[] }
  | { kind: "toolCall"; name: string; input: string; id: string | undefined }
  | { kind: "delay"; ms: number }
  | { kind: "error"; error: unknown }
  | { kind: "finish"; reason: FinishReason; usage: Partial<StepUsage> | undefined };

type FinishReason = "stop" | "length" | "tool-calls" | "content-filter" | "error" | "other";

export interface StepUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * A model step: the parts it streams, or `{ throws }` for a `doStream()` that rejects (an HTTP
 * error before any chunk), or a function of the call options for steps that depend on the prompt.
 */
export type ScriptStep =
  | readonly ScriptPart[]
  | { throws: unknown }
  | ((options: LanguageModelV4CallOptions, callIndex: number) => readonly ScriptPart[]);

export const script = {
  /** Streamed text: one `text-delta` per chunk. */
  text: (...chunks: string[]): ScriptPart => ({ kind: "text", chunks }),
  /** Streamed reasoning: one `reasoning-delta` per chunk. */
  reasoning: (...chunks: string[]): ScriptPart => ({ kind: "reasoning", chunks }),
  /** A tool call; `args` is sent as JSON, or as it is when it is a string (to script invalid JSON). */
  toolCall: (name: string, args: unknown = {}, options: { id?: string } = {}): ScriptPart => {
    checkKeys(options, ["id"], "script.toolCall's options");
    return {
      kind: "toolCall",
      name,
      input: typeof args === "string" ? args : JSON.stringify(args),
      id: options.id,
    };
  },
  /** Waits before the next part. The wait ignores the abort signal, like a stuck provider. */
  delay: (ms: number): ScriptPart => {
    if (typeof ms !== "number" || !(ms >= 0))
      throw new RangeError(`script.delay: ms must be a number >= 0, got ${String(ms)}.`);
    return { kind: "delay", ms };
  },
  /** A step that never finishes (until the reader cancels it). */
  hang: (): ScriptPart => ({ kind: "delay", ms: Number.POSITIVE_INFINITY }),
  /** An `error` stream part, as a provider emits for a failure mid-stream. */
  error: (error: unknown): ScriptPart => ({ kind: "error", error }),
  /** Overrides the finish reason and usage (default: tool-calls or stop, 10 in / 5 out). */
  finish: (reason: FinishReason, usage?: Partial<StepUsage>): ScriptPart => ({
    kind: "finish",
    reason,
    usage,
  }),
};

export interface ScriptedModelOptions {
  modelId?: string;
  /** Usage reported by each step unless a `finish` part says otherwise. */
  usage?: StepUsage;
}

/**
 * A v4 language model that plays a script, one step per model call, and records what it was sent
 * (`prompts`, `offeredTools`). It is `ai/test`'s `MockLanguageModelV4`, so it works with the AI SDK
 * too: streamed (`streamText`, `doStream`) or not (`generateText`, `doGenerate`, which gathers the
 * step's parts into one result), each call plays the next step.
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
      const step = this.#steps[index];
      if (step === undefined)
        throw new Error(
          `Scripted model: no step left for call ${index + 1} (the script has ${this.#steps.length}).`,
        );
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

/** Refuses what is not an object of the known options: a misspelt one would be ignored silently. */
function checkKeys(options: unknown, known: readonly string[], subject: string): void {
  if (typeof options !== "object" || options === null || Array.isArray(options))
    throw new TypeError(`Scripted model: ${subject} must be an object, got ${describe(options)}.`);
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined)
    throw new TypeError(
      `Scripted model: ${subject} have no option "${unknown}" (known: ${known.join(", ")}).`,
    );
}

function checkOptions(options: unknown): asserts options is ScriptedModelOptions {
  checkKeys(options, ["modelId", "usage"], "the options");
  const { modelId, usage } = options as Record<string, unknown>;
  if (modelId !== undefined && typeof modelId !== "string")
    throw new TypeError(`Scripted model: modelId must be a string, got ${describe(modelId)}.`);
  const isCount = (tokens: unknown) => typeof tokens === "number" && tokens >= 0;
  if (
    usage !== undefined &&
    !(
      typeof usage === "object" &&
      usage !== null &&
      isCount((usage as StepUsage).inputTokens) &&
      isCount((usage as StepUsage).outputTokens)
    )
  )
    throw new TypeError(
      `Scripted model: usage must be { inputTokens, outputTokens } (numbers >= 0), got ${describe(usage)}.`,
    );
}

const PART_KINDS: ReadonlySet<string> = new Set<ScriptPart["kind"]>([
  "text",
  "reasoning",
  "toolCall",
  "delay",
  "error",
  "finish",
]);

// A script is data a test writes by hand: a slip (a part not wrapped in its step's array) would
// otherwise surface, at the model call, as "parts.forEach is not a function".
function checkSteps(steps: unknown): void {
  if (!Array.isArray(steps))
    throw new TypeError(`Scripted model: the script must be an array of steps, got ${describe(steps)}.`);
  steps.forEach((step: unknown, index) => {
    if (typeof step === "function" || (typeof step === "object" && step !== null && "throws" in step)) return;
    if (!Array.isArray(step))
      throw new TypeError(
        `Scripted model: step ${index + 1} must be an array of script parts, { throws } or a function, got ${describe(step)}.`,
      );
    checkParts(step, `step ${index + 1}`);
  });
}

/** `subject` names the array in the error: "step 2", "what the function of step 2 returned". */
function checkParts(parts: unknown, subject: string): asserts parts is readonly ScriptPart[] {
  if (!Array.isArray(parts))
    throw new TypeError(
      `Scripted model: ${subject} must be an array of script parts, got ${describe(parts)}.`,
    );
  parts.forEach((part: unknown, index) => {
    if (!isScriptPart(part))
      throw new TypeError(
        `Scripted model: part ${index + 1} of ${subject} is not a script part (build it with script.*), got ${describe(part)}.`,
      );
    const problem = fieldProblem(part);
    if (problem !== undefined)
      throw new TypeError(
        `Scripted model: part ${index + 1} of ${subject} is a ${part.kind} part whose ${problem}.`,
      );
  });
}

const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>([
  "stop",
  "length",
  "tool-calls",
  "content-filter",
  "error",
  "other",
]);

/**
 * What is wrong with a part's fields, if anything: a part made by hand, or by a `script.*` helper
 * given the wrong types, would otherwise fail only at its call, with a message naming no step.
 */
function fieldProblem(part: ScriptPart): string | undefined {
  const isString = (value: unknown) => typeof value === "string";
  switch (part.kind) {
    case "text":
    case "reasoning":
      return Array.isArray(part.chunks) && part.chunks.every(isString)
        ? undefined
        : `chunks are not all strings (${describe(part.chunks)})`;
    case "toolCall":
      if (!isString(part.name)) return `name is not a string (${describe(part.name)})`;
      if (!isString(part.input)) return "arguments cannot be sent as JSON";
      return part.id === undefined || isString(part.id)
        ? undefined
        : `id is not a string (${describe(part.id)})`;
    case "delay":
      return typeof part.ms === "number" && part.ms >= 0
        ? undefined
        : `ms is not a number >= 0 (${describe(part.ms)})`;
    case "finish":
      if (!FINISH_REASONS.has(part.reason))
        return `reason is not one of ${[...FINISH_REASONS].join(", ")} (${describe(part.reason)})`;
      return part.usage === undefined ||
        (typeof part.usage === "object" &&
          part.usage !== null &&
          Object.values(part.usage).every((tokens) => typeof tokens === "number"))
        ? undefined
        : `usage is not an object of token counts (${describe(part.usage)})`;
    case "error":
      return undefined;
  }
}

function isScriptPart(value: unknown): value is ScriptPart {
  return (
    typeof value === "object" && value !== null && PART_KINDS.has((value as { kind?: string }).kind ?? "")
  );
}

function describe(value: unknown): string {
  if (isScriptPart(value)) return `a single ${value.kind} part (wrap a step's parts in [ ])`;
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value !== "object") return `${typeof value} ${String(value)}`;
  try {
    return JSON.stringify(value);
  } catch {
    // A cycle or a BigInt: JSON cannot show it, and the refusal must not turn into JSON's error.
    return "an object JSON cannot show";
  }
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
  // A signal aborted before the call never fires "abort" again: without this, a hanging step hung.
  if (abortSignal?.aborted) cancel();
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
