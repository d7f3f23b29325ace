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

/**
 * Deeper than any real tool call nests, and far from the some 4,000 levels at which writing the
 * arguments out again (`JSON.stringify`: the next request, an event, a saved history) overflows
 * the stack. `JSON.parse` reads any depth, so without this bound one such call would fail every
 * later model call of the conversation.
 */
const MAX_ARGS_DEPTH = 1000;

/**
 * Tool arguments arrive as JSON text; text that is not JSON is kept as it is for the executor to
 * reject. JSON nested more than `MAX_ARGS_DEPTH` levels fails the call (not retryable, as
 * `malformedPart`): it would reach the history, where it could not be sent again.
 */
export function parseArgs(input: string): unknown {
  // JSON text starts with `{` in practice; only other text can be blank (and trimming allocates).
  if (input.charCodeAt(0) !== 123 && input.trim() === "") return {};
  let args: unknown;
  try {
    args = JSON.parse(input);
  } catch {
    return input;
  }
  // A level takes two characters: shorter text cannot nest too deep, and is not scanned.
  if (input.length > 2 * MAX_ARGS_DEPTH && nestsDeeperThan(input, MAX_ARGS_DEPTH))
    throw new ProviderError(
      `The model streamed a malformed "tool-call" part: its \`input\` nests more than ${MAX_ARGS_DEPTH} levels deep.`,
    );
  return args;
}

/** Whether valid JSON text opens more than `maxDepth` objects and arrays within each other. */
function nestsDeeperThan(json: string, maxDepth: number): boolean {
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i);
    if (code === QUOTE) {
      // Skip the string; a backslash escapes the character after it. The text is valid JSON, so
      // every string is closed.
      for (i++; json.charCodeAt(i) !== QUOTE; i++) if (json.charCodeAt(i) === BACKSLASH) i++;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return false;
}

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;

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
 * and so is a number no count can be (NaN, negative, past 2^53 - 1, infinite), which would spoil
 * the run's totals: two finite counts as large as 1e308 add up to Infinity.
 */
function tokens(count: number | undefined, field: string): number | undefined {
  if (typeof count === "number") return isCount(count) ? count : badCount(count, field);
  if (count == null) return undefined;
  throw malformedPart("finish", `usage.${field}`, count, "a number");
}

function isCount(count: number): boolean {
  return count >= 0 && count <= Number.MAX_SAFE_INTEGER;
}

function badCount(count: number, field: string): never {
  throw new ProviderError(
    `The model streamed a malformed "finish" part: its \`usage.${field}\` must be a count from 0 to 2^53 - 1 but is ${count}.`,
  );
}

/** A reply whose `finish` part says "error": cut short, it is no answer (not retryable, as `malformedPart`). */
export function failedReply(raw: unknown): ProviderError {
  const said = typeof raw === "string" ? ` (raw: ${JSON.stringify(raw)})` : "";
  return new ProviderError(
    `The model's reply ended with finish reason "error"${said}: a reply cut short by an error is no answer.`,
  );
}
