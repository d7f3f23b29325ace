import {
  type AssistantMessage,
  type DecideOptions,
  type Orchestrator,
  type RunContext,
  runTurns,
  validateOptions,
} from "@agent-core/core";
import { z } from "zod";
import { buildSystemPrompt, type PromptSituation } from "./prompts.js";

export interface AgenticOptions {
  /** Name reported by the orchestrator (default "agentic"). */
  name?: string;
  /** Replaces the default tool-use instruction of a turn's first model call. */
  steeringInstruction?: string;
}

const nonBlank = { error: "a non-blank string" };

// Each message is the field's domain: `validateOptions` reports "must be <domain>, got <value>".
// A key it does not know is refused, naming the known ones, as `new Agent()` refuses a setting it
// does not know: a misspelt option would otherwise silently not apply.
const optionsSchema = z.strictObject({
  name: z
    .string(nonBlank)
    .refine((name) => name.trim() !== "", nonBlank)
    .optional(),
  steeringInstruction: z.string({ error: "a string" }).optional(),
});

/**
 * The default turn loop. Each model call is a steering decision: respond with text, or steer with
 * tool calls. Tools run one at a time in the model's order; steering messages interrupt between
 * tools (the rest are skipped) and before every model call; follow-ups open a new turn when the
 * agent would stop. Limits, abort and the transcript guarantees come from `ctx`.
 */
export class AgenticOrchestrator implements Orchestrator {
  readonly name: string;
  readonly version = "1";
  readonly #steeringInstruction: string | undefined;

  /** Throws an `AgentConfigError` naming each bad option, rather than run with a changed one. */
  constructor(options: AgenticOptions = {}) {
    validateOptions(optionsSchema, options, "agentic options");
    this.name = options.name ?? "agentic";
    this.#steeringInstruction = options.steeringInstruction;
  }

  run(ctx: RunContext): Promise<void> {
    // Built once per run: the same options every call (the prompt builder then reuses its message).
    const prompts: Record<PromptSituation, DecideOptions> = {
      initial: { system: this.#system(ctx, "initial") },
      afterTools: { system: this.#system(ctx, "afterTools") },
    };
    return runTurns(ctx, () => this.#turn(ctx, prompts));
  }

  /** One turn: decide, run the tools, decide again, until the model responds; returns its answer. */
  async #turn(ctx: RunContext, prompts: Record<PromptSituation, DecideOptions>): Promise<AssistantMessage> {
    let situation: PromptSituation = "initial";
    for (;;) {
      const decision = await ctx.decide(prompts[situation]);
      if (decision.mode === "respond") {
        // Steering that arrived while the answer streamed is honoured before the turn ends.
        const steering = await ctx.steering.take();
        if (steering.length === 0) return decision.message;
        ctx.applySteering(steering);
        situation = "initial";
        continue;
      }
      const batch = await ctx.executeTools(decision.toolCalls);
      situation = batch.steering.length > 0 ? "initial" : "afterTools";
    }
  }

  #system(ctx: RunContext, situation: PromptSituation): string {
    return buildSystemPrompt(ctx.systemPrompt, situation, {
      hasTools: ctx.tools.size > 0,
      steeringInstruction: this.#steeringInstruction,
    });
  }
}

export function agentic(options: AgenticOptions = {}): AgenticOrchestrator {
  return new AgenticOrchestrator(options);
}
