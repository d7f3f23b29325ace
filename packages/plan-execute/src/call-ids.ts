import type { AgentMessage, AssistantMessage } from "@agent-core/core";

// The ids of the calls a plan's steps become: new to the history (the transcript keeper refuses a
// repeat), and telling the run and the turn that made them.

/** The start of the ids of a turn's calls: `p<run tag>_<turn>_`. */
export function callIdPrefix(runId: string, turn: number): string {
  return `p${runTag(runId)}_${turn}_`;
}

/** A step's call id, `<prefix><step id>` (then `_2`, `_3`, …), none of `taken`; added to it. */
export function newCallId(taken: Set<string>, prefix: string, stepId: string): string {
  let id = `${prefix}${stepId}`;
  for (let n = 2; taken.has(id); n++) id = `${prefix}${stepId}_${n}`;
  taken.add(id);
  return id;
}

/**
 * The run's part of its call ids: 8 hex digits of a hash of the whole run id. Its first characters
 * would not do: the runs of one durable workflow are `<id>`, `<id>.2`, … and a runtime's own ids
 * may share a prefix too, so their first plans' calls would get the same ids.
 */
function runTag(runId: string): string {
  // FNV-1a, 32 bits.
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) hash = Math.imul(hash ^ runId.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** Every tool-call id of the history. */
export function callIdsIn(messages: readonly AgentMessage[]): Set<string> {
  const ids = new Set<string>();
  for (const message of messages)
    if (message.role === "assistant")
      for (const part of (message as AssistantMessage).content)
        if (part.type === "toolCall") ids.add(part.id);
  return ids;
}
