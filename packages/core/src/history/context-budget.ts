import { type AgentMessage, isToolResultMessage, type ToolResultMessage } from "../messages.js";
import type { HistoryTransform } from "./pipeline.js";

export interface ContextBudgetOptions {
  /** The budget in tokens. Default: `ratio` of `contextWindow`. */
  maxTokens?: number;
  /** The model's context window in tokens (needed unless maxTokens is given). */
  contextWindow?: number;
  /** Share of the context window to use (default 0.75). */
  ratio?: number;
  /** Tokens the system prompt takes: it is sent with every request but is not in the history. */
  systemTokens?: number;
  /**
   * Token estimator for one message (default `estimateTokens`: ~4 characters per token over its
   * JSON text, plus a small per-message overhead). Replaceable.
   */
  estimate?: (message: AgentMessage) => number;
  /** Told when messages were dropped, e.g. to emit `context_truncated`. */
  onTruncate?: (info: { droppedMessages: number; estimatedTokens: number }) => void;
}

const RESULT_PLACEHOLDER = "[result dropped to fit the context budget]";
const DEFAULT_RATIO = 0.75;
const CHARS_PER_TOKEN = 4;
/** Role markers and separators a provider wraps around each message. */
const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * Keeps the request under a token budget. Over budget, it first replaces the oldest tool results
 * with a short placeholder (the results of the last assistant message's calls stay), then drops the
 * oldest whole units: a user message, or an assistant message with its tool results, together with
 * the app messages that follow it. The first and the last user message, the latest reply with its
 * results and the last unit always stay, so the output is a valid transcript even when it cannot get under the budget.
 * The input is never changed: shrunk results are new objects.
 */
export function contextBudget(options: ContextBudgetOptions): HistoryTransform {
  const budget = resolveBudget(options);
  const estimate = options.estimate ? checkedEstimate(options.estimate) : estimateTokens;
  return (messages) => {
    const costs = messages.map((message) => estimate(message));
    if (sum(costs) <= budget) return messages;
    const draft = newDraft(messages, costs);
    shrinkOldResults(draft, budget, estimate);
    dropOldUnits(draft, budget);
    const { messages: fitted, ...truncation } = finish(draft);
    if (truncation.droppedMessages === 0) return messages;
    options.onTruncate?.(truncation);
    return fitted;
  };
}

/** The default estimator: ~4 characters per token over the message's JSON text, plus an overhead. */
export function estimateTokens(message: AgentMessage): number {
  return Math.ceil(jsonLength(withoutDetails(message)) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS;
}

/** What the system prompt costs: it is not in the history, but it is in every request. */
export function estimateSystemTokens(systemPrompt: string): number {
  return estimateTokens({ role: "user", content: systemPrompt });
}

/** `details` is for the app only: it never reaches the model, and may be huge or not encodable. */
function withoutDetails(message: AgentMessage): AgentMessage {
  if (!isToolResultMessage(message) || !("details" in message)) return message;
  const { details: _details, ...rest } = message;
  return rest;
}

/**
 * An estimator of the app's own, held to its type as the other history hooks are: a count that is no
 * number of tokens (NaN, negative, text) would be summed into a budget it can never meet, and
 * published in a `context_truncated` event its own schema refuses.
 */
function checkedEstimate(estimate: (message: AgentMessage) => number): (message: AgentMessage) => number {
  return (message) => {
    const tokens: unknown = estimate(message);
    if (typeof tokens === "number" && tokens >= 0 && tokens < Number.POSITIVE_INFINITY) return tokens;
    const shown = typeof tokens === "string" ? JSON.stringify(tokens) : String(tokens);
    throw new TypeError(
      `contextBudget's estimate returned an invalid result: expected a finite number of tokens >= 0, got ${shown}.`,
    );
  };
}

/** App kinds may hold what JSON cannot encode (cycles, BigInt); those cost the overhead only. */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value).length;
  } catch {
    return 0;
  }
}

/** The budget before the system prompt is paid for: `maxTokens`, or `ratio` of `contextWindow`. */
export function budgetTokens(options: ContextBudgetOptions): number | undefined {
  const { maxTokens, contextWindow, ratio = DEFAULT_RATIO } = options;
  return maxTokens ?? (contextWindow === undefined ? undefined : contextWindow * ratio);
}

function resolveBudget(options: ContextBudgetOptions): number {
  const { maxTokens, contextWindow, ratio = DEFAULT_RATIO, systemTokens = 0 } = options;
  if (maxTokens !== undefined) assertPositive(maxTokens, "maxTokens");
  if (contextWindow !== undefined) assertPositive(contextWindow, "contextWindow");
  if (!(ratio > 0 && ratio <= 1))
    throw new RangeError(`contextBudget: ratio must be in (0, 1], got ${ratio}.`);
  if (!(Number.isFinite(systemTokens) && systemTokens >= 0))
    throw new RangeError(`contextBudget: systemTokens must be a number >= 0, got ${systemTokens}.`);
  const total = budgetTokens(options);
  if (total === undefined) throw new RangeError("contextBudget needs maxTokens or contextWindow.");
  if (systemTokens >= total)
    throw new RangeError(
      `contextBudget: systemTokens (${systemTokens}) leaves no room in a budget of ${total} tokens.`,
    );
  return total - systemTokens;
}

function assertPositive(value: number, name: string): void {
  if (!(Number.isFinite(value) && value > 0))
    throw new RangeError(`contextBudget: ${name} must be a number > 0, got ${value}.`);
}

/** The history being fitted: its messages (some shrunk), their costs, and which ones stay. */
interface Draft {
  messages: AgentMessage[];
  costs: number[];
  kept: boolean[];
  shrunk: boolean[];
  total: number;
}

function newDraft(messages: readonly AgentMessage[], costs: number[]): Draft {
  return {
    messages: [...messages],
    costs,
    kept: messages.map(() => true),
    shrunk: messages.map(() => false),
    total: sum(costs),
  };
}

/** Shrinks tool results oldest first, up to the last assistant message, whose results the model needs. */
function shrinkOldResults(draft: Draft, budget: number, estimate: (message: AgentMessage) => number): void {
  const end = draft.messages.findLastIndex((message) => message.role === "assistant");
  for (let index = 0; index < end && draft.total > budget; index++) {
    const message = draft.messages[index] as AgentMessage;
    if (!isToolResultMessage(message)) continue;
    const replacement = placeholderFor(message);
    const cost = estimate(replacement);
    const saved = (draft.costs[index] as number) - cost;
    // A result already as short as the placeholder stays as it is, and is not reported.
    if (saved <= 0) continue;
    draft.messages[index] = replacement;
    draft.costs[index] = cost;
    draft.shrunk[index] = true;
    draft.total -= saved;
  }
}

function placeholderFor(message: ToolResultMessage): ToolResultMessage {
  const { details: _details, ...rest } = message;
  return { ...rest, content: RESULT_PLACEHOLDER };
}

function dropOldUnits(draft: Draft, budget: number): void {
  for (const unit of droppableUnits(draft.messages)) {
    if (draft.total <= budget) return;
    for (let index = unit.start; index < unit.end; index++) {
      draft.kept[index] = false;
      draft.total -= draft.costs[index] as number;
    }
  }
}

/** A run of messages that stay or go together: `start` inclusive, `end` exclusive. */
interface Unit {
  start: number;
  end: number;
}

/**
 * The units that may go, oldest first: all but the first and last user message's, the latest
 * reply's and the last. The latest reply stays even when a user message follows it (a steering or
 * follow-up message): the model needs its calls' results to go on.
 */
function droppableUnits(messages: readonly AgentMessage[]): Unit[] {
  const firstUser = messages.findIndex((message) => message.role === "user");
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  const latestReply = messages.findLastIndex((message) => message.role === "assistant");
  return splitIntoUnits(messages)
    .slice(0, -1)
    .filter((unit) => unit.start !== firstUser && unit.start !== lastUser && unit.start !== latestReply);
}

/**
 * Each user or assistant message starts a unit; tool results and app kinds join the unit before
 * them, so a call never loses its results. App messages before any of them form a unit of their own.
 */
function splitIntoUnits(messages: readonly AgentMessage[]): Unit[] {
  const units: Unit[] = [];
  let start = 0;
  for (let index = 1; index <= messages.length; index++) {
    if (index < messages.length && !startsUnit(messages[index] as AgentMessage)) continue;
    units.push({ start, end: index });
    start = index;
  }
  return units;
}

function startsUnit(message: AgentMessage): boolean {
  return message.role === "user" || message.role === "assistant";
}

interface Fitted {
  messages: AgentMessage[];
  /** Messages removed plus tool results emptied (a result emptied, then removed, counts once). */
  droppedMessages: number;
  estimatedTokens: number;
}

function finish(draft: Draft): Fitted {
  const fitted: Fitted = { messages: [], droppedMessages: 0, estimatedTokens: 0 };
  draft.messages.forEach((message, index) => {
    if (!draft.kept[index]) {
      fitted.droppedMessages++;
      return;
    }
    if (draft.shrunk[index]) fitted.droppedMessages++;
    fitted.messages.push(message);
    fitted.estimatedTokens += draft.costs[index] as number;
  });
  return fitted;
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}
