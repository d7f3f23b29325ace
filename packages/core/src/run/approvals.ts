import type { ToolCall } from "../messages.js";
import type { AgentHooks, ToolCallContext } from "./hooks.js";
import type { ApprovalDecision, Suspension, Wait } from "./suspension.js";

/** What a call may not do: `block`ed by `beforeToolCall`, or decided by a person. */
export type Verdict = { block: string } | ApprovalDecision;

/**
 * Asks `beforeToolCall` about every call of a batch before any runs. Calls a person already
 * decided (`decided`, when a suspended batch resumes) are not asked again. If one needs approval,
 * the whole batch waits — returned as a suspension — so no result ever gets ahead of an
 * unanswered call. Stops asking once `ended()` says the run is over.
 */
export async function askBeforeToolCall(
  calls: readonly ToolCall[],
  hook: NonNullable<AgentHooks["beforeToolCall"]>,
  decided: ReadonlyMap<string, ApprovalDecision> | undefined,
  contextOf: (call: ToolCall) => ToolCallContext,
  ended: () => boolean,
): Promise<{ verdicts: Map<string, Verdict>; suspension: Suspension | undefined }> {
  const verdicts = new Map<string, Verdict>();
  const waits = new Map<string, Wait>();
  for (const call of calls) {
    const decision = decided?.get(call.id);
    if (decision) {
      verdicts.set(call.id, decision);
      continue;
    }
    const verdict = await hook(contextOf(call));
    if (ended()) break;
    if (verdict === undefined) continue;
    if ("block" in verdict) verdicts.set(call.id, verdict);
    else
      waits.set(
        call.id,
        verdict.reason ? { kind: "approval", reason: verdict.reason } : { kind: "approval" },
      );
  }
  return { verdicts, suspension: waits.size > 0 && !ended() ? { calls, waits } : undefined };
}
