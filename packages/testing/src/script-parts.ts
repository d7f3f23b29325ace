import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";

// What a scripted model plays (the parts of a step, built with `script.*`), and which scripts are
// well formed: a malformed one is refused when the model is made, naming its step.

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
      input: typeof args === "string" ? args : argumentsJson(name, args),
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

// A BigInt or a cycle makes JSON.stringify throw its own error, which names neither the helper nor
// the tool.
function argumentsJson(name: string, args: unknown): string {
  try {
    return JSON.stringify(args);
  } catch (error) {
    throw new TypeError(
      `script.toolCall: the arguments of "${name}" cannot be sent as JSON (${error instanceof Error ? error.message : String(error)}).`,
      { cause: error },
    );
  }
}

/**
 * Refuses what is not an object of the known options: a misspelt one would be ignored silently.
 * `owner` starts the message: what the test called.
 */
export function checkKeys(
  options: unknown,
  known: readonly string[],
  subject: string,
  owner = "Scripted model",
): void {
  if (typeof options !== "object" || options === null || Array.isArray(options))
    throw new TypeError(`${owner}: ${subject} must be an object, got ${shownValue(options)}.`);
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined)
    throw new TypeError(`${owner}: ${subject} have no option "${unknown}" (known: ${known.join(", ")}).`);
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
export function checkSteps(steps: unknown): void {
  if (!Array.isArray(steps))
    throw new TypeError(`Scripted model: the script must be an array of steps, got ${shownValue(steps)}.`);
  // Indexed, not forEach: forEach skips a hole (`[, [script.text("a")]]`), which would be played as
  // no step at all.
  for (let index = 0; index < steps.length; index++) {
    const step: unknown = steps[index];
    if (typeof step === "function") continue;
    if (typeof step === "object" && step !== null && "throws" in step) {
      // Another key (a `delayMs`, say) would be ignored: the step only throws.
      const other = Object.keys(step).find((key) => key !== "throws");
      if (other !== undefined)
        throw new TypeError(
          `Scripted model: step ${index + 1} is a { throws } step with another key, "${other}" (it holds throws alone).`,
        );
      continue;
    }
    if (!Array.isArray(step))
      throw new TypeError(
        `Scripted model: step ${index + 1} must be an array of script parts, { throws } or a function, got ${shownValue(step)}.`,
      );
    checkParts(step, `step ${index + 1}`);
  }
}

/** `subject` names the array in the error: "step 2", "what the function of step 2 returned". */
export function checkParts(parts: unknown, subject: string): asserts parts is readonly ScriptPart[] {
  if (!Array.isArray(parts))
    throw new TypeError(
      `Scripted model: ${subject} must be an array of script parts, got ${shownValue(parts)}.`,
    );
  // Indexed, not forEach, which skips a hole: the step's copy would hold `undefined` there.
  for (let index = 0; index < parts.length; index++) {
    const part: unknown = parts[index];
    if (!isScriptPart(part))
      throw new TypeError(
        `Scripted model: part ${index + 1} of ${subject} is not a script part (build it with script.*), got ${shownValue(part)}.`,
      );
    const problem = fieldProblem(part);
    if (problem !== undefined)
      throw new TypeError(
        `Scripted model: part ${index + 1} of ${subject} is a ${part.kind} part whose ${problem}.`,
      );
  }
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
        : `chunks are not all strings (${shownValue(part.chunks)})`;
    case "toolCall":
      if (!isString(part.name)) return `name is not a string (${shownValue(part.name)})`;
      if (!isString(part.input)) return "arguments cannot be sent as JSON";
      return part.id === undefined || isString(part.id)
        ? undefined
        : `id is not a string (${shownValue(part.id)})`;
    case "delay":
      return typeof part.ms === "number" && part.ms >= 0
        ? undefined
        : `ms is not a number >= 0 (${shownValue(part.ms)})`;
    case "finish":
      if (!FINISH_REASONS.has(part.reason))
        return `reason is not one of ${[...FINISH_REASONS].join(", ")} (${shownValue(part.reason)})`;
      return part.usage === undefined || isTokenCounts(part.usage, [])
        ? undefined
        : `usage is not an object of token counts, inputTokens and outputTokens (${shownValue(part.usage)})`;
    case "error":
      return undefined;
  }
}

/**
 * Whether `usage` holds token counts, each a finite number >= 0, under no key but inputTokens and
 * outputTokens, and at least the `required` ones: a misspelt key would be ignored, a NaN or an
 * Infinity reported as the run's usage.
 */
export function isTokenCounts(usage: unknown, required: readonly (keyof StepUsage)[]): boolean {
  if (typeof usage !== "object" || usage === null || Array.isArray(usage)) return false;
  const counts = usage as Record<string, unknown>;
  return (
    required.every((key) => key in counts) &&
    Object.entries(counts).every(
      ([key, tokens]) =>
        (key === "inputTokens" || key === "outputTokens") &&
        typeof tokens === "number" &&
        Number.isFinite(tokens) &&
        tokens >= 0,
    )
  );
}

function isScriptPart(value: unknown): value is ScriptPart {
  return (
    typeof value === "object" && value !== null && PART_KINDS.has((value as { kind?: string }).kind ?? "")
  );
}

export function shownValue(value: unknown): string {
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
