import type { ToolCall } from "../messages.js";

/** An approval decision, from `agent.approve()` / `deny()`. */
export interface ApprovalDecision {
  approved: boolean;
  reason?: string;
}

/** Why a call waits: today, for a person's approval. */
export interface Wait {
  kind: "approval";
  /** The reason `beforeToolCall` gave. */
  reason?: string;
}

/**
 * A run that stopped to wait for decisions on some of its tool calls: what it returns instead of
 * an ending. The calls stay open in the history; the next run of the agent resumes the batch with
 * the decisions made meanwhile (undecided calls are denied when the conversation goes on).
 */
export interface Suspension {
  /** Every call of the waiting batch, in call order. */
  calls: readonly ToolCall[];
  /** The calls that wait, by id. */
  waits: ReadonlyMap<string, Wait>;
}

/** A suspension and the decisions made on it so far. */
export interface PendingDecisions {
  suspension: Suspension;
  decisions: Map<string, ApprovalDecision>;
}

/** The decisions a resumed batch runs with: every wait gets one (undecided ones are denied). */
export function decisionsForResume(pending: PendingDecisions): Map<string, ApprovalDecision> {
  const decisions = new Map(pending.decisions);
  for (const id of pending.suspension.waits.keys())
    if (!decisions.has(id))
      decisions.set(id, { approved: false, reason: "not approved before the conversation went on" });
  return decisions;
}
