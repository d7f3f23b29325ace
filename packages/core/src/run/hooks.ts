import type { LanguageModelV4 } from "@ai-sdk/provider";
import { show } from "../config-issues.js";
import type { AgentMessage, LlmMessage, ToolCall, ToolResultMessage } from "../messages.js";
import type { Tool, ToolCallContext } from "../tools/define-tool.js";

/** `block`: do not run it (status `denied`); `requireApproval`: end the run until `agent.approve`/`deny`. */
export type BeforeToolCallResult = undefined | { block: string } | { requireApproval: true; reason?: string };

/** Fields of the result to replace. */
export type ToolResultOverride = Partial<
  Pick<ToolResultMessage, "content" | "details" | "isError" | "status">
>;

export interface PrepareStepContext {
  runId: string;
  /** The model call about to be made, from 1. */
  step: number;
  /** The messages the model is about to get (after `transformContext` and `convertToLlm`). */
  messages: readonly LlmMessage[];
  /** The tools it is about to be offered. */
  tools: readonly string[];
  system: string;
  model: LanguageModelV4;
}

export interface PrepareStepResult {
  messages?: readonly LlmMessage[];
  tools?: readonly string[];
  system?: string;
  model?: LanguageModelV4;
}

export interface ShouldStopContext {
  runId: string;
  /** Model calls made so far. */
  step: number;
  messages: readonly AgentMessage[];
}

export interface RepairToolCallContext {
  call: ToolCall;
  tool: Tool;
  /** What was wrong with the arguments. */
  error: string;
}

type MaybePromise<T> = T | Promise<T>;

/** Points where the app can step into any orchestrator's run. */
export interface AgentHooks {
  /** Before each tool call: let it run, block it, or ask for approval. */
  beforeToolCall?(context: ToolCallContext): MaybePromise<BeforeToolCallResult | undefined>;
  /** After each tool call: replace fields of its result (what the model will see). */
  afterToolCall?(
    context: ToolCallContext & { result: ToolResultMessage },
  ): MaybePromise<ToolResultOverride | undefined>;
  /** Before each model call: change the messages, the tools, the system prompt or the model. */
  prepareStep?(context: PrepareStepContext): MaybePromise<PrepareStepResult | undefined>;
  /** Before each model call after the first: `true` ends the run, as completed. */
  shouldStop?(context: ShouldStopContext): MaybePromise<boolean>;
  /** Arguments that are not valid JSON: return fixed ones, or undefined to give up (arguments that fail the schema get an error result instead). */
  repairToolCall?(context: RepairToolCallContext): MaybePromise<unknown>;
}

/**
 * Whether `shouldStop`'s answer ends the run, checked as `needsApproval`'s is: a truthy "no" (or an
 * object, a promise of a promise) must not end it, nor a falsy one be ignored. Nothing returned (a
 * forgotten `return false`) goes on, as nothing from `needsApproval` asks for no approval.
 */
function stopRequested(verdict: unknown): boolean {
  if (verdict === undefined) return false;
  if (typeof verdict !== "boolean")
    throw new TypeError(`shouldStop returned an invalid result: expected a boolean, got ${show(verdict)}.`);
  return verdict;
}

/**
 * Asks the app's `shouldStop` whether the run stops before its next model call, with a copy of the
 * history (a hook that changes its argument must not change the run's); see `stopRequested`.
 * Without the hook, `false` at once: the model call waits for nothing.
 */
export function askedToStop(
  { hooks, runId }: { hooks: AgentHooks; runId: string },
  step: number,
  history: readonly AgentMessage[],
): false | Promise<boolean> {
  if (!hooks.shouldStop) return false;
  return Promise.resolve(hooks.shouldStop({ runId, step, messages: [...history] })).then(stopRequested);
}
