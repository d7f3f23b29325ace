import {
  type Orchestrator,
  type RunContext,
  runTurns,
  type ToolCall,
  validateOptions,
} from "@agent-core/core";
import { z } from "zod";
import { callIdsIn } from "./call-ids.js";
import { PlanRun, type Wave, type WaveBook } from "./plan-run.js";

export { PlanError } from "./plan-run.js";

export interface PlanExecuteOptions {
  /** How often the remaining plan may be revised per turn, after a failed step or steering: a whole number >= 0 (default 2). */
  maxReplans?: number;
  /** How many independent steps may run at once: a whole number >= 1 (default 4). */
  maxConcurrency?: number;
  /** Name reported by the orchestrator: a non-blank string (default "plan-execute"). */
  name?: string;
}

/** Each message is the field's domain: `validateOptions` reports "must be <domain>, got <value>". */
const wholeAtLeast = (minimum: number) => {
  const domain = { error: `a whole number >= ${minimum}` };
  return z.int(domain).gte(minimum, domain).optional();
};
const nonBlank = { error: "a non-blank string" };

// A key it does not know is refused, naming the known ones, as `new Agent()` refuses a setting it
// does not know: a misspelt option would otherwise silently not apply.
const optionsSchema = z.strictObject({
  maxReplans: wholeAtLeast(0),
  maxConcurrency: wholeAtLeast(1),
  name: z
    .string(nonBlank)
    .refine((name) => name.trim() !== "", nonBlank)
    .optional(),
});

/**
 * Plan, then execute, then answer. One model call makes a structured plan of tool steps (checked
 * against the tools, sent back once when it does not fit); the steps run through the same tool
 * executor as the agentic loop, independent ones at once; a failed step or the user's steering
 * revises the rest of the plan (at most `maxReplans` times per turn); one last call streams the
 * answer. Each wave of steps is recorded as an assistant message of tool calls with their results,
 * the shape every strict provider accepts.
 */
export class PlanExecuteOrchestrator implements Orchestrator {
  readonly name: string;
  readonly version = "3";
  readonly #maxReplans: number;
  readonly #maxConcurrency: number;
  /** The waves whose batch runs or waits, by the id of their first call. */
  readonly #held = new Map<string, Wave>();

  /** Throws an `AgentConfigError` naming each bad option, rather than run with a changed one. */
  constructor(options: PlanExecuteOptions = {}) {
    validateOptions(optionsSchema, options, "plan-execute options");
    this.name = options.name ?? "plan-execute";
    this.#maxReplans = options.maxReplans ?? 2;
    this.#maxConcurrency = options.maxConcurrency ?? 4;
  }

  async run(ctx: RunContext): Promise<void> {
    this.#forgetSuspensionsOf(ctx);
    await runTurns(ctx, (turn) => this.#planRun(ctx, turn).answer());
  }

  /** A wave that waited for approvals or client results goes on, with the rest of its plan. */
  async resume(ctx: RunContext, calls: readonly ToolCall[]): Promise<void> {
    const first = calls[0]?.id;
    const wave = first === undefined ? undefined : this.#held.get(first);
    if (first === undefined || wave === undefined) {
      // Not a wave this orchestrator knows (one of another orchestrator): run it, then plan anew.
      await ctx.executeTools(calls, { interruptOnSteering: false });
      return this.run(ctx);
    }
    this.#held.delete(first);
    let resumed = false;
    await runTurns(ctx, (turn) => {
      if (resumed) return this.#planRun(ctx, turn).answer();
      resumed = true;
      return wave.run.resume(ctx, turn, wave);
    });
  }

  #planRun(ctx: RunContext, turn: number): PlanRun {
    return new PlanRun(ctx, turn, this.#maxReplans, this.#maxConcurrency, this.#waves);
  }

  /**
   * Every wave is held while its batch runs: a batch that suspends ends its run before the
   * orchestrator hears of it, and the run that resumes it may start right then.
   */
  readonly #waves: WaveBook = {
    hold: (wave) => this.#held.set(wave.calls[0]?.id as string, wave),
    drop: (wave) => this.#held.delete(wave.calls[0]?.id as string),
  };

  /**
   * A run that does not resume a wave of this agent ends its wait (a new prompt went on past it):
   * the wave's plan is dropped. Waves are told apart by their calls, which only this agent's history has.
   */
  #forgetSuspensionsOf(ctx: RunContext): void {
    if (this.#held.size === 0) return;
    const ids = callIdsIn(ctx.messages.all);
    for (const id of this.#held.keys()) if (ids.has(id)) this.#held.delete(id);
  }
}

export function planExecute(options: PlanExecuteOptions = {}): PlanExecuteOrchestrator {
  return new PlanExecuteOrchestrator(options);
}
