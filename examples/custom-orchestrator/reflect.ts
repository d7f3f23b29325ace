import {
  type AssistantMessage,
  type Orchestrator,
  type RunContext,
  runTurns,
  StructuredOutputError,
  validateOptions,
} from "@agent-core/core";
import { z } from "zod";

export interface ReflectOptions {
  /** Critiques per turn at most, each followed by a revision unless the critic accepts (default 2). */
  rounds?: number;
  /** What the critic checks (default `DEFAULT_CRITIC_PROMPT`); the reply format is always added. */
  criticPrompt?: string;
}

// Each check states the option's domain: a bad option fails at once, named in the error
// ("Invalid reflect options: rounds must be a whole number >= 0, got 1.5.").
const wholeNumber = { error: "a whole number >= 0" };
const nonBlank = { error: "a non-blank string" };
const optionsSchema = z.object({
  rounds: z.int(wholeNumber).gte(0, wholeNumber).optional(),
  criticPrompt: z.string(nonBlank).trim().min(1, nonBlank).optional(),
});

/** The critic's verdict on the latest answer. */
export const critiqueSchema = z.object({
  verdict: z.enum(["accept", "revise"]),
  issues: z.array(z.string()),
});
export type Critique = z.infer<typeof critiqueSchema>;

export const DEFAULT_CRITIC_PROMPT = [
  "You review the assistant's latest answer to the user's request in the conversation above.",
  "Check that it is correct (compare it with any tool results), complete, and answers what was asked.",
  'Reply "accept" when it needs no change; otherwise reply "revise" and list each concrete issue.',
].join(" ");

// generateObject asks for JSON through the provider's JSON mode; the prompt says the shape too, for
// providers (and local models) that have no such mode.
const REPLY_FORMAT =
  'Reply with one JSON object and nothing else: {"verdict": "accept" | "revise", "issues": ["…"]}';

// A transient last message for the critic's call: the history ends with the answer under review, and
// several providers refuse (or treat as a prefill) a prompt that ends with an assistant message.
const REVIEW_REQUEST = "Review the assistant's latest answer above. Reply with the JSON verdict only.";

/**
 * Answer, critique, revise. Each turn drafts an answer with the tool loop (decide, run the tools,
 * decide again); then a critic (a structured `generateObject` call that sees the whole history)
 * either accepts it or lists issues, and the model writes an improved answer without tools, at
 * most `rounds` times. Steering during the review means the request changed: the answer is drafted
 * again, with tools. Every model call goes through `ctx`, so limits, abort, steering and the
 * transcript guarantees hold without any code here.
 *
 * Events of its own: `custom` "reflect.critique" `{ round, verdict, issues }` after each critique,
 * "reflect.revised" `{ round }` after each revision, and "reflect.critique_failed" `{ round, error }`
 * when the critic gives no valid verdict (the answer is then kept: a review is an improvement, not
 * a condition of answering).
 */
export class ReflectOrchestrator implements Orchestrator {
  readonly name = "reflect";
  readonly #rounds: number;
  readonly #criticPrompt: string;

  constructor(options: ReflectOptions = {}) {
    validateOptions(optionsSchema, options, "reflect options");
    this.#rounds = options.rounds ?? 2;
    this.#criticPrompt = options.criticPrompt ?? DEFAULT_CRITIC_PROMPT;
  }

  async run(ctx: RunContext): Promise<void> {
    await runTurns(ctx, () => this.#turn(ctx));
  }

  async #turn(ctx: RunContext): Promise<AssistantMessage> {
    for (;;) {
      const answer = await this.#review(ctx, await this.#draft(ctx));
      if (answer !== undefined) return answer;
    }
  }

  /** The tool loop, as in agentic: executeTools honours steering between tools, the next decide sees it. */
  async #draft(ctx: RunContext): Promise<AssistantMessage> {
    for (;;) {
      const decision = await ctx.decide();
      if (decision.mode === "respond") return decision.message;
      await ctx.executeTools(decision.toolCalls);
    }
  }

  /**
   * Critiques and revises the draft; returns the final answer, or undefined when steering arrived
   * (it is in the history then, and the turn drafts again). Steering is checked before each model
   * call of the review and after the last one, so it never lands unnoticed behind a revision.
   */
  async #review(ctx: RunContext, draft: AssistantMessage): Promise<AssistantMessage | undefined> {
    let answer = draft;
    for (let round = 1; round <= this.#rounds; round++) {
      if (await this.#steered(ctx)) return undefined;
      const critique = await this.#critique(ctx, round);
      if (critique?.verdict !== "revise") break;
      if (await this.#steered(ctx)) return undefined;
      answer = await this.#revise(ctx, round, critique.issues);
    }
    return (await this.#steered(ctx)) ? undefined : answer;
  }

  async #steered(ctx: RunContext): Promise<boolean> {
    const steering = await ctx.steering.take();
    if (steering.length === 0) return false;
    ctx.applySteering(steering);
    return true;
  }

  /** The critic's verdict, or undefined when it gave no valid one. Nothing of it enters the history. */
  async #critique(ctx: RunContext, round: number): Promise<Critique | undefined> {
    try {
      const { object } = await ctx.generateObject(critiqueSchema, {
        system: criticSystemPrompt(this.#criticPrompt, ctx.systemPrompt),
        messages: [{ role: "user", content: REVIEW_REQUEST }],
        name: "critique",
        description: "A verdict on the assistant's latest answer, with the issues to fix.",
      });
      ctx.emit({ type: "custom", name: "reflect.critique", data: { round, ...object } });
      return object;
    } catch (error) {
      if (!(error instanceof StructuredOutputError)) throw error;
      ctx.emit({ type: "custom", name: "reflect.critique_failed", data: { round, error: error.message } });
      return undefined;
    }
  }

  /**
   * The improved answer, appended right after the previous one: consecutive assistant messages are
   * a valid history (no tool call waits for a result), and the model reads the latest as the answer.
   */
  async #revise(ctx: RunContext, round: number, issues: readonly string[]): Promise<AssistantMessage> {
    const decision = await ctx.decide({ tools: false, system: revisionPrompt(ctx.systemPrompt, issues) });
    ctx.emit({ type: "custom", name: "reflect.revised", data: { round } });
    return decision.message;
  }
}

/** The critic knows the assistant's instructions, so it can judge whether the answer follows them. */
function criticSystemPrompt(criticPrompt: string, systemPrompt: string): string {
  const parts = [criticPrompt, REPLY_FORMAT];
  if (systemPrompt.trim() !== "")
    parts.push(`The assistant under review was given these instructions:\n${systemPrompt}`);
  return parts.join("\n\n");
}

function revisionPrompt(systemPrompt: string, issues: readonly string[]): string {
  const findings =
    issues.length > 0
      ? ["A reviewer found these issues in your last answer:", ...issues.map((issue) => `- ${issue}`)]
      : ["A reviewer asked for a better version of your last answer."];
  const request = [
    ...findings,
    "Write an improved answer to the user's request: the whole answer, without mentioning the review.",
  ].join("\n");
  return systemPrompt.trim() === "" ? request : `${systemPrompt}\n\n${request}`;
}

export function reflect(options: ReflectOptions = {}): ReflectOrchestrator {
  return new ReflectOrchestrator(options);
}
