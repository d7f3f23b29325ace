import type { ToolCall } from "../messages.js";
import type { ClientToolOutcome } from "./client-tools.js";

/** An approval decision, from `agent.approve()` / `deny()`. */
export interface ApprovalDecision {
  approved: boolean;
  reason?: string;
}

/**
 * Why a call waits: for a person's approval (the reason `beforeToolCall` gave), or for the result
 * of a client tool (`clientTools: "suspend"`).
 */
export type Wait = { kind: "approval"; reason?: string } | { kind: "client" };

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
  /**
   * Approvals decided before the batch suspended (a resumed batch that now waits for client
   * calls): the next resume keeps them, so nobody is asked twice.
   */
  decided?: ReadonlyMap<string, ApprovalDecision>;
}

/** A suspension and what was decided or delivered for it so far. */
export interface PendingDecisions {
  suspension: Suspension;
  decisions: Map<string, ApprovalDecision>;
  /** Client tool results delivered by `agent.submitToolResult()`, by call id. */
  results: Map<string, ClientToolOutcome>;
}

/** What a resumed batch runs with: a decision for every approval, an outcome for every client call. */
export interface Resumed {
  decisions: ReadonlyMap<string, ApprovalDecision>;
  results: ReadonlyMap<string, ClientToolOutcome>;
}

/**
 * Every wait gets its answer: undecided approvals are denied, unanswered client calls fail. When
 * the conversation goes on (a new prompt resumes the batch), every call of the batch still without
 * a result fails too: a client call the approvals held back must not suspend the batch again, or
 * the new prompt would never reach the history.
 */
export function resumeWith(pending: PendingDecisions, conversationGoesOn = false): Resumed {
  const decisions = new Map(pending.decisions);
  const results = new Map(pending.results);
  for (const [id, wait] of pending.suspension.waits)
    if (wait.kind === "approval" && !decisions.has(id))
      decisions.set(id, { approved: false, reason: "not approved before the conversation went on" });
    else if (wait.kind === "client" && !results.has(id)) results.set(id, NO_RESULT);
  // A server tool's call ignores its entry; a client tool's takes it as its outcome.
  if (conversationGoesOn)
    for (const call of pending.suspension.calls) if (!results.has(call.id)) results.set(call.id, NO_RESULT);
  return { decisions, results };
}

const NO_RESULT: ClientToolOutcome = { error: "no result arrived before the conversation went on" };

/** The kind of ending a suspension makes. */
export function awaitingOf(suspension: Suspension): "awaiting_approval" | "awaiting_client_tool" {
  for (const wait of suspension.waits.values()) if (wait.kind === "approval") return "awaiting_approval";
  return "awaiting_client_tool";
}
