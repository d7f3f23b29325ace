import { show } from "../config-issues.js";
import { type AgentMessage, isLlmMessage, type LlmMessage } from "../messages.js";

export interface TransformContext {
  signal: AbortSignal;
}

/**
 * Rewrites the agent-level history before each model call (trim, summarise, inject notes).
 * It gets a copy it may keep or rebuild; the stored history is never changed by it.
 */
export type HistoryTransform = (
  messages: readonly AgentMessage[],
  context: TransformContext,
) => readonly AgentMessage[] | Promise<readonly AgentMessage[]>;

/** Turns agent messages into messages the model understands; the default drops custom kinds. */
export type ConvertToLlm = (messages: readonly AgentMessage[]) => LlmMessage[];

export const defaultConvertToLlm: ConvertToLlm = (messages) => messages.filter(isLlmMessage);

/** Applies transforms left to right. */
export function chainTransforms(...transforms: HistoryTransform[]): HistoryTransform {
  return async (messages, context) => {
    let current = messages;
    for (const transform of transforms) current = await transform(current, context);
    return current;
  };
}

/**
 * Keeps the last `n` messages. A cut that would fall between a tool call and its results moves
 * earlier to keep the assistant message that made the calls, so the result may hold a few more.
 * `n` is a whole number >= 1; any other throws a `RangeError` here, not at the first model call.
 */
export function keepRecent(n: number): HistoryTransform {
  assertCount(n, "keepRecent");
  return (messages) =>
    messages.length <= n ? messages : messages.slice(pairSafeStart(messages, messages.length - n));
}

/**
 * Keeps the first message (usually the task) and the last `n`, never separating a call from its
 * results. `n` is a whole number >= 1, as for `keepRecent`.
 */
export function keepFirstAndRecent(n: number): HistoryTransform {
  assertCount(n, "keepFirstAndRecent");
  return (messages) => {
    if (messages.length <= n + 1) return messages;
    const start = pairSafeStart(messages, messages.length - n);
    return start <= 1 ? messages : [messages[0] as AgentMessage, ...messages.slice(start)];
  };
}

/** Moves a cut index back past tool results, onto the assistant message whose calls they answer. */
function pairSafeStart(messages: readonly AgentMessage[], start: number): number {
  let index = start;
  while (index > 0 && messages[index]?.role === "toolResult") index--;
  return index;
}

/** At least one: with none, the model would get no recent message at all (only the first, or nothing). */
function assertCount(n: number, name: string): void {
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`${name}(n) needs a whole number n >= 1, got ${show(n)}.`);
}
