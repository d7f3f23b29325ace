// What a model call is handed by an orchestrator and what comes back from the model step,
// checked where the run first reads them, so that a wrong value is named where it came from.

import { unknownOptionProblem } from "../config-issues.js";
import { ProviderError } from "../errors.js";
import type { AgentMessage, Usage } from "../messages.js";
import type { ModelStepResult } from "../model/stream-step.js";
import type { ToolRegistry } from "../tools/registry.js";
import { messagesProblem } from "./checked-messages.js";
import { validateTranscript } from "./transcript.js";

/**
 * What the model step (`MODEL_STEP`, a runtime's replay or recording) resolved with, checked as far
 * as the run reads it: a malformed one fails the call with a `ProviderError` that says so, not with
 * a `TypeError` from deep inside the run. The blocks themselves are checked as the history takes them.
 */
export function checkedStep(step: ModelStepResult): ModelStepResult {
  const value = step as Partial<Record<keyof ModelStepResult, unknown>> | null;
  let wrong: string | undefined;
  if (typeof value !== "object" || value === null) wrong = value === null ? "null" : `a ${typeof value}`;
  else if (!Array.isArray(value.content)) wrong = "an object without a `content` array";
  else if (!Array.isArray(value.toolCalls)) wrong = "an object without a `toolCalls` array";
  else if (typeof value.finishReason !== "string") wrong = "an object without a `finishReason` string";
  else if (!isUsage(value.usage)) wrong = "an object without a `usage` of token counts";
  if (wrong === undefined) return step;
  throw new ProviderError(
    `The model step (the MODEL_STEP service) resolved with ${wrong}, not a ModelStepResult.`,
  );
}

/**
 * What `ctx.decide()` and `ctx.generateObject()` were given, checked as `prepareStep`'s result is:
 * a wrong value would otherwise be ignored (a tool name nobody registered, a system prompt that is
 * no string) or fail deep inside the prompt builder. `tools` is checked against `registry` when
 * given (decide's); the messages as the pipeline's are, and each of their calls must have its
 * result among them.
 */
function callOptionsProblem(options: unknown, registry: ToolRegistry | undefined): string | undefined {
  if (typeof options !== "object" || options === null)
    return `expected an object of options, got ${options === null ? "null" : typeof options}`;
  const { system, tools, settings, messages } = options as Record<string, unknown>;
  if (system !== undefined && typeof system !== "string")
    return `system must be a string, got ${typeof system}`;
  if (settings !== undefined && (typeof settings !== "object" || settings === null))
    return "settings must be an object of model settings";
  if (registry !== undefined && tools !== undefined && tools !== false) {
    if (!Array.isArray(tools)) return "tools must be false or an array of tool names";
    const unknown = tools.find((name) => typeof name !== "string" || registry.get(name) === undefined);
    if (unknown !== undefined) return `tools names no registered tool: ${String(unknown)}`;
  }
  if (messages === undefined) return undefined;
  const problem = messagesProblem(messages, NO_MESSAGES, true, "messages");
  if (problem !== undefined) return problem;
  // They follow a history whose calls all have their results (the call answers any left first), so
  // they must keep that rule among themselves: a call without its result, or a result of no call,
  // would reach the model, which a strict provider refuses.
  const [unpaired] = validateTranscript(messages as AgentMessage[]);
  return unpaired === undefined
    ? undefined
    : `messages must give each tool call its result, and each result its call: ${unpaired}`;
}

const NO_MESSAGES: readonly AgentMessage[] = [];

/**
 * `ctx.generateObject()`'s options: those `callOptionsProblem` checks, and those only it takes: a
 * `toolCallsOf` that is no function would otherwise fail after the model call (a cycle spent), and
 * a `name` or `description` that is no string would reach the provider's request. A `maxAttempts`
 * of any number is taken (below 1 or NaN still makes attempts); one that is no number is refused.
 */
export function generateObjectOptionsProblem(options: unknown): string | undefined {
  return (
    callOptionsProblem(options, undefined) ??
    unknownOption(options as object, GENERATE_OBJECT_OPTIONS) ??
    optionOfWrongType(options as Record<string, unknown>, STRUCTURED_OPTION_TYPES)
  );
}

/** `ctx.decide()`'s options: those `callOptionsProblem` checks, its tools against `registry`, no other. */
export function decideOptionsProblem(options: unknown, registry: ToolRegistry): string | undefined {
  return callOptionsProblem(options, registry) ?? unknownOption(options as object, DECIDE_OPTIONS);
}

const DECIDE_OPTIONS = ["system", "tools", "settings", "messages"] as const;
const GENERATE_OBJECT_OPTIONS = [
  "system",
  "messages",
  "name",
  "description",
  "maxAttempts",
  "settings",
  "toolCallsOf",
] as const;

const STRUCTURED_OPTION_TYPES = optionTypes({
  name: "string",
  description: "string",
  maxAttempts: "number",
  toolCallsOf: "function",
});

/**
 * What `ctx.executeTools()` was given as options, checked before any tool runs: a hook that is no
 * function would otherwise fail in the middle of the batch (after a tool with side effects ran),
 * with a message about the batch's internals. A `concurrency` of any number is taken (below 1 or
 * NaN runs the calls one at a time); one that is no number is refused.
 */
export function batchOptionsProblem(options: unknown): string | undefined {
  if (typeof options !== "object" || options === null)
    return `expected an object of options, got ${options === null ? "null" : typeof options}`;
  return (
    unknownOption(options, BATCH_OPTIONS) ??
    optionOfWrongType(options as Record<string, unknown>, BATCH_OPTION_TYPES)
  );
}

const BATCH_OPTIONS = ["concurrency", "interruptOnSteering", "beforeEach", "afterEach"] as const;

const BATCH_OPTION_TYPES = optionTypes({
  concurrency: "number",
  interruptOnSteering: "boolean",
  beforeEach: "function",
  afterEach: "function",
});

type OptionType = "string" | "number" | "boolean" | "function";

/** The table as a list, made once: the checks run on every batch. */
function optionTypes(
  types: Readonly<Record<string, OptionType>>,
): readonly (readonly [string, OptionType])[] {
  return Object.entries(types);
}

/**
 * The first key of `options` that is none of `known`, said as a problem: a misspelt option
 * (`concurency: 4`) would silently not apply, as a misspelt setting of the agent's would.
 */
function unknownOption(options: object, known: readonly string[]): string | undefined {
  const issue = unknownOptionProblem(options, known);
  return issue === undefined ? undefined : `${issue.path} ${issue.message}`;
}

/** The first option given whose `typeof` is not the one `types` names for it, said as a problem. */
function optionOfWrongType(
  options: Record<string, unknown>,
  types: readonly (readonly [string, OptionType])[],
): string | undefined {
  for (const [name, type] of types) {
    const value = options[name];
    if (value !== undefined && typeof value !== type) return `${name} must be a ${type}, got ${typeof value}`;
  }
  return undefined;
}

/** Token counts the run adds up: the three totals are numbers, the two details numbers when given. */
function isUsage(usage: unknown): boolean {
  if (typeof usage !== "object" || usage === null) return false;
  const { inputTokens, outputTokens, totalTokens, reasoningTokens, cachedInputTokens } = usage as Usage;
  return (
    isCount(inputTokens) &&
    isCount(outputTokens) &&
    isCount(totalTokens) &&
    (reasoningTokens === undefined || isCount(reasoningTokens)) &&
    (cachedInputTokens === undefined || isCount(cachedInputTokens))
  );
}

function isCount(value: unknown): boolean {
  return typeof value === "number" && value >= 0 && value < Number.POSITIVE_INFINITY;
}
