import { show } from "../config-issues.js";
import type { ToolCall, ToolResultMessage } from "../messages.js";
import type { Tool, ToolCallContext } from "../tools/define-tool.js";
import { toolResult } from "../tools/execute-tool.js";
import { parseArgs } from "../tools/parse-args.js";
import type { AgentHooks, BeforeToolCallResult } from "./hooks.js";
import type { ApprovalDecision, Suspension, Wait } from "./suspension.js";

/** What a call may not do: `block`ed by `beforeToolCall`, or decided by a person. */
export type Verdict = { block: string } | ApprovalDecision;

/** Whether the verdict keeps its call from running: blocked by `beforeToolCall`, or denied. */
export function refuses(verdict: Verdict | undefined): boolean {
  return verdict !== undefined && ("block" in verdict || !verdict.approved);
}

/** The result a call blocked or denied gets without running; undefined when its verdict lets it run. */
export function refusedResult(call: ToolCall, verdict: Verdict | undefined): ToolResultMessage | undefined {
  if (verdict === undefined) return undefined;
  if ("block" in verdict) return toolResult(call, "denied", `blocked: ${verdict.block}`);
  if (!verdict.approved)
    return toolResult(call, "denied", `denied${verdict.reason ? `: ${verdict.reason}` : " by the user"}`);
  return undefined;
}

/**
 * Asks `beforeToolCall` (when set) and each tool's `needsApproval` about every call of a batch
 * before any runs. Calls a person already decided (`decided`, when a suspended batch resumes) are
 * not asked again. If one needs approval, the whole batch waits — returned as a suspension — so no
 * result ever gets ahead of an unanswered call. Stops asking once `ended()` says the run is over.
 */
export async function askBeforeToolCall(
  calls: readonly ToolCall[],
  hook: AgentHooks["beforeToolCall"],
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
    const context = contextOf(call);
    // The hook speaks first: its block or its reason wins; the tool's own rule applies when it lets the call through.
    const verdict =
      checkedVerdict(await hook?.(context)) ?? ((await toolNeedsApproval(context)) ? APPROVAL : undefined);
    if (ended()) break;
    if (verdict === undefined) continue;
    if ("block" in verdict) verdicts.set(call.id, verdict);
    else
      waits.set(
        call.id,
        verdict.reason ? { kind: "approval", reason: verdict.reason } : { kind: "approval" },
      );
  }
  const suspension = decided === undefined ? { calls, waits } : { calls, waits, decided };
  return { verdicts, suspension: waits.size > 0 && !ended() ? suspension : undefined };
}

/** Whether some call of the batch may need approval: else the batch skips asking altogether. */
export function mayNeedApproval(
  calls: readonly ToolCall[],
  hook: AgentHooks["beforeToolCall"],
  toolOf: (call: ToolCall) => Tool | undefined,
): boolean {
  return hook !== undefined || calls.some((call) => Boolean(toolOf(call)?.needsApproval));
}

const APPROVAL: BeforeToolCallResult = { requireApproval: true };

/**
 * What `beforeToolCall` returned, checked as `prepareStep`'s and `afterToolCall`'s results are: an
 * object with neither a `block` nor `requireApproval: true` would otherwise hold the batch for an
 * approval nobody asked for.
 */
function checkedVerdict(verdict: unknown): BeforeToolCallResult {
  if (verdict === undefined || verdict === null) return undefined;
  const { block, requireApproval, reason } = (typeof verdict === "object" ? verdict : {}) as Record<
    string,
    unknown
  >;
  let problem: string | undefined;
  if (typeof verdict !== "object") problem = `expected an object or undefined, got ${typeof verdict}`;
  else if (block !== undefined) {
    if (typeof block !== "string") problem = `block must be a string (the reason), got ${typeof block}`;
  } else if (requireApproval !== true) problem = "expected { block: string } or { requireApproval: true }";
  else if (reason !== undefined && typeof reason !== "string")
    problem = `reason must be a string, got ${typeof reason}`;
  if (problem !== undefined) throw new TypeError(`beforeToolCall returned an invalid result: ${problem}.`);
  return verdict as BeforeToolCallResult;
}

/** The tool's `needsApproval`; a function is asked only about arguments that pass the schema. */
async function toolNeedsApproval(context: ToolCallContext): Promise<boolean> {
  const { tool, call } = context;
  // A call of a tool the registry does not know is answered with an error, never run.
  if (tool === undefined) return false;
  const { needsApproval } = tool;
  if (typeof needsApproval !== "function") return needsApproval === true;
  const parsed = await parseArgs(tool.inputSchema, call.args);
  if (!parsed.success) return false;
  const needed: unknown = await needsApproval(parsed.data, context);
  // Checked as beforeToolCall's verdict is: a truthy "no" must not decide an approval. Nothing
  // returned is "no", as the AI SDK reads it, so that its tools behave here as they do there.
  if (needed === undefined) return false;
  if (typeof needed !== "boolean")
    throw new TypeError(
      `Tool "${tool.name}": needsApproval returned an invalid result: expected a boolean, got ${show(needed)}.`,
    );
  return needed;
}
