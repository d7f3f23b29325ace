import { ClientToolError, InvalidConfigError } from "../errors.js";
import { ownArgs } from "../tools/own-args.js";
import { ClientToolCalls, type ClientToolOutcome, checkClientToolOutcome } from "./client-tools.js";
import type { ApprovalDecision, PendingDecisions, Suspension } from "./suspension.js";

/** The batch the last run left waiting, and the options of the prompt whose run left it. */
interface Suspended<ResumeOptions> {
  /** The batch, with the decisions made and the client results delivered so far. */
  pending: PendingDecisions;
  /**
   * The time limits and client-tool mode of the prompt whose run left the batch: the run that
   * resumes it keeps them (a server that suspends for client tools keeps suspending).
   */
  resumeOptions: ResumeOptions;
}

/**
 * The tool calls of an agent that wait for an answer from outside its runs: approvals and client
 * results for the batch the last run left waiting, and the client calls the run in progress waits
 * for. Each wait takes one answer; `decide` and `submit` return the resume options once the last
 * wait of the batch is answered, and the agent starts the run that resumes it. The resume options
 * (the agent's prompt options) are only kept and handed back, so `run/` needs not know their type.
 */
export class WaitingCalls<ResumeOptions> {
  /** A batch the last run left waiting for `approve()` / `deny()`, with the decisions so far. */
  #suspended: Suspended<ResumeOptions> | undefined;
  /** Client tool calls waiting for `submitToolResult()`. */
  readonly clientTools = new ClientToolCalls();

  /** The approvals the suspended batch still waits for, in call order. */
  get approvals(): { toolCallId: string; toolName: string; args: unknown; reason?: string }[] {
    const pending = this.#suspended?.pending;
    if (!pending) return [];
    const { calls, waits } = pending.suspension;
    return calls.flatMap((call) => {
      const wait = waits.get(call.id);
      if (wait?.kind !== "approval" || pending.decisions.has(call.id)) return [];
      const { reason } = wait;
      return [
        { toolCallId: call.id, toolName: call.name, args: ownArgs(call.args), ...(reason ? { reason } : {}) },
      ];
    });
  }

  /** The batch's client calls still without a result; with no batch, those the run in progress waits for. */
  get clientCalls(): { toolCallId: string; toolName: string; args: unknown }[] {
    const pending = this.#suspended?.pending;
    if (!pending) return this.clientTools.waiting;
    const { calls, waits } = pending.suspension;
    return calls
      .filter((call) => waits.get(call.id)?.kind === "client" && !pending.results.has(call.id))
      .map((call) => ({ toolCallId: call.id, toolName: call.name, args: ownArgs(call.args) }));
  }

  /**
   * Records a person's decision on a call of the suspended batch. Returns the resume options once
   * every approval is decided, else undefined. Throws `InvalidConfigError` when no such call waits
   * for approval, or it was decided already.
   */
  decide(toolCallId: string, decision: ApprovalDecision): ResumeOptions | undefined {
    // The model reads the reason: anything but text would reach it as "[object Object]" or worse.
    if (decision.reason !== undefined && typeof decision.reason !== "string")
      throw new InvalidConfigError(`A denial's reason must be a string, got ${typeof decision.reason}.`);
    const suspended = this.#suspended;
    if (suspended?.pending.suspension.waits.get(toolCallId)?.kind !== "approval")
      throw new InvalidConfigError(`No tool call "${toolCallId}" is waiting for approval.`);
    const { pending } = suspended;
    const earlier = pending.decisions.get(toolCallId);
    if (earlier !== undefined)
      throw new InvalidConfigError(
        `Tool call "${toolCallId}" was already ${earlier.approved ? "approved" : "denied"}.`,
      );
    pending.decisions.set(toolCallId, decision);
    for (const [id, wait] of pending.suspension.waits)
      if (wait.kind === "approval" && !pending.decisions.has(id)) return undefined;
    return suspended.resumeOptions;
  }

  /**
   * Delivers a client call's outcome: to the run in progress when the suspended batch does not
   * wait for that call (returns undefined), else to the batch, returning the resume options once
   * every client call of the batch has its result. Throws `ClientToolError` when no such call
   * waits, or it has its result already.
   */
  submit(toolCallId: string, outcome: ClientToolOutcome): ResumeOptions | undefined {
    checkClientToolOutcome(toolCallId, outcome);
    const suspended = this.#suspended;
    if (suspended?.pending.suspension.waits.get(toolCallId)?.kind !== "client") {
      this.clientTools.deliver(toolCallId, outcome);
      return undefined;
    }
    const { pending } = suspended;
    if (pending.results.has(toolCallId))
      throw new ClientToolError(`Client tool call "${toolCallId}" already has its result.`);
    pending.results.set(toolCallId, outcome);
    for (const [id, wait] of pending.suspension.waits)
      if (wait.kind === "client" && !pending.results.has(id)) return undefined;
    return suspended.resumeOptions;
  }

  /** Hands the suspended batch, with what was decided and delivered so far, to the run that resumes it. */
  takeBatch(): PendingDecisions | undefined {
    const pending = this.#suspended?.pending;
    this.#suspended = undefined;
    return pending;
  }

  /** Keeps the batch a finished run left waiting (none when `suspension` is undefined). */
  settle(suspension: Suspension | undefined, resumeOptions: ResumeOptions): void {
    this.#suspended = suspension && {
      pending: { suspension, decisions: new Map(suspension.decided), results: new Map() },
      resumeOptions,
    };
  }

  /** Forgets the suspended batch (`agent.reset()`: its calls left the history). */
  dropBatch(): void {
    this.#suspended = undefined;
  }
}
