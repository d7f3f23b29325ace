import type { LanguageModelV4Usage } from "@ai-sdk/provider";
import { ProviderError } from "../errors.js";
import { type Usage, usageOf } from "../messages.js";

/**
 * A part that breaks the v4 types (a delta, an id or a token count of another type) would reach
 * the answer ("undefined…") or a history that can no longer be reloaded: the call fails instead.
 * Not retryable: asking again is no fix for a provider that sends such parts.
 */
export function malformedPart(
  type: string,
  field: string,
  value: unknown,
  expected = "a string",
): ProviderError {
  const found = value === undefined ? "missing" : value === null ? "null" : `of type ${typeof value}`;
  return new ProviderError(
    `The model streamed a malformed "${type}" part: its \`${field}\` must be ${expected} but is ${found}.`,
  );
}

/** Tool arguments arrive as JSON text; text that is not JSON is kept as it is for the executor to reject. */
export function parseArgs(input: string): unknown {
  // JSON text starts with `{` in practice; only other text can be blank (and trimming allocates).
  if (input.charCodeAt(0) !== 123 && input.trim() === "") return {};
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}

/**
 * `finish` ends a v4 stream: a part after it that would still change the reply (text, reasoning, a
 * tool call, the model id, a second `finish`) shows a broken stream, whose real reply cannot be
 * known, so the call fails rather than keep either one. Parts that change nothing stay ignored
 * (`raw` above all, which the AI SDK never puts into a result). Not retryable, as `malformedPart`.
 */
export function partAfterFinish(type: string): ProviderError {
  return new ProviderError(`The model streamed a "${type}" part after its "finish" part.`);
}

/** The v4 spec requires `finishReason` with its `unified` reason; the step reports that one. */
export function unifiedFinishReason(finishReason: unknown): string {
  if (typeof finishReason !== "object" || finishReason === null)
    throw malformedPart("finish", "finishReason", finishReason, "an object");
  const { unified } = finishReason as { unified?: unknown };
  if (typeof unified !== "string") throw malformedPart("finish", "finishReason.unified", unified);
  return unified;
}

export function toUsage(usage: LanguageModelV4Usage): Usage {
  const input = usageGroup(usageGroup(usage, "usage").inputTokens, "usage.inputTokens");
  const output = usageGroup(usage.outputTokens, "usage.outputTokens");
  const inputTokens = tokens(input.total, "inputTokens.total") ?? 0;
  const outputTokens = tokens(output.total, "outputTokens.total") ?? 0;
  return usageOf(
    inputTokens,
    outputTokens,
    inputTokens + outputTokens,
    tokens(output.reasoning, "outputTokens.reasoning"),
    tokens(input.cacheRead, "inputTokens.cacheRead"),
  );
}

/** The v4 spec requires `usage` and its two groups of counts; only the counts may be left out. */
function usageGroup<T>(group: T, field: string): T {
  if (typeof group === "object" && group !== null) return group;
  throw malformedPart("finish", field, group, "an object");
}

/**
 * A count the provider left out (undefined, or null from JSON) is unknown; text ("12") is malformed,
 * and so is a number no count can be (NaN, negative, infinite), which would spoil the run's totals.
 */
function tokens(count: number | undefined, field: string): number | undefined {
  if (typeof count === "number") return isCount(count) ? count : badCount(count, field);
  if (count == null) return undefined;
  throw malformedPart("finish", `usage.${field}`, count, "a number");
}

function isCount(count: number): boolean {
  return count >= 0 && count < Number.POSITIVE_INFINITY;
}

function badCount(count: number, field: string): never {
  throw new ProviderError(
    `The model streamed a malformed "finish" part: its \`usage.${field}\` must be a count >= 0 but is ${count}.`,
  );
}
