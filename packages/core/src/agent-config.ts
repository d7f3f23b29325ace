import type { LanguageModelV4 } from "@ai-sdk/provider";
import type { DependencyContainer } from "tsyringe";
import { AgentConfigError } from "./config-issues.js";
import { InvalidConfigError } from "./errors.js";
import type { AgentEvent } from "./events/schemas.js";
import { budgetTokens, type ContextBudgetOptions, estimateSystemTokens } from "./history/context-budget.js";
import { knownContextWindow } from "./history/context-windows.js";
import type { ConvertToLlm, HistoryTransform } from "./history/pipeline.js";
import type { AgentMessage, MessageInput } from "./messages.js";
import type { RetryOptions } from "./model/retry.js";
import type { StepTimeouts } from "./model/step-watchdog.js";
import type { ModelCallSettings } from "./model/stream-step.js";
import type { Logger } from "./observe/logger.js";
import type { Limits, Orchestrator } from "./orchestrator/contract.js";
import type { ToolTimeouts } from "./run/batch-contract.js";
import type { AgentHooks } from "./run/hooks.js";
import type { AiSdkToolSet } from "./tools/ai-sdk-tools.js";
import type { ToolInput, ToolRegistry } from "./tools/registry.js";
import type { StallOptions } from "./tools/stall-detector.js";

/** Context handed to the steering and follow-up callbacks. */
export interface QueueCallbackContext {
  runId: string;
  messages: readonly AgentMessage[];
}

export type MessageCallback = (
  context: QueueCallbackContext,
) => readonly MessageInput[] | undefined | Promise<readonly MessageInput[] | undefined>;

/** Time limits, per agent or per prompt. A model or total timeout ends the run as `timeout`; a tool
 * timeout gives that call `status: "timeout"` and the run goes on. */
export interface Timeouts extends StepTimeouts, ToolTimeouts {
  /** The whole run. */
  totalMs?: number;
}

export interface AgentConfig extends AgentHooks {
  systemPrompt?: string;
  /**
   * The history to start from, such as `agent.messages` of an earlier agent saved as JSON: a valid
   * transcript (`validateTranscript`), every tool call answered.
   */
  messages?: readonly AgentMessage[];
  /** Any AI SDK language model (specification v4, as every ai@7 provider returns). */
  provider?: LanguageModelV4;
  /**
   * Tools made with `defineTool()`, AI SDK `ToolSet`s (`{ name: tool({ … }) }`, see
   * docs/interop.md), or an array mixing both; or a registry of them.
   */
  tools?: ToolRegistry | AiSdkToolSet | readonly ToolInput[];
  /** An orchestrator, or the name of a registered one; default: the registered default ("agentic"). */
  orchestrator?: Orchestrator | string;
  limits?: Partial<Limits>;
  /** Rewrites the history before each model call (see `keepRecent`, `keepFirstAndRecent`). */
  transformContext?: HistoryTransform;
  /** Turns agent messages into model messages; the default drops custom message kinds. */
  convertToLlm?: ConvertToLlm;
  /** Asked at every steering boundary, beside the `steer()` queue. */
  getSteeringMessages?: MessageCallback;
  /** Asked when the run would stop, beside the `followUp()` queue. */
  getFollowUpMessages?: MessageCallback;
  /** Settings for every model call (temperature, maxOutputTokens, providerOptions, …). */
  modelSettings?: ModelCallSettings;
  retry?: Partial<RetryOptions>;
  /** The parent of this agent's container (default: the root container holding the plug-ins). */
  container?: DependencyContainer;
  /** Where listener errors go (default: the logger, at `error`). */
  onListenerError?: (error: unknown, event: AgentEvent) => void;
  /**
   * Where the agent's log lines go, each with the run's `runId` (a pino logger fits). Default: the
   * `LOGGER` service of the agent's container, silent unless a runtime registered one.
   */
  logger?: Logger;
  timeouts?: Timeouts;
  /**
   * How client tool calls (`execution: "client"`) wait for their results: `"wait"` (default) keeps
   * the run going until `submitToolResult()` or `timeouts.clientToolMs`; `"suspend"` ends the run as
   * `awaiting_client_tool` and resumes it once every call has its result.
   */
  clientTools?: "wait" | "suspend";
  /** How the tool calls of one model reply run (default "sequential", one at a time in order). */
  toolExecution?: "sequential" | "parallel";
  /** Calls running at once in parallel execution (default 8). */
  maxConcurrency?: number;
  /** Stall detection: thresholds, or `false` to turn it off (default on: 2 same calls, 3 same results). */
  stall?: StallOptions | false;
  /** Keeps every request under a token budget, dropping the oldest tool results first. */
  contextBudget?: ContextBudgetOptions;
}

export interface PromptOptions {
  /** Aborts this run. */
  signal?: AbortSignal;
  /** Time limits for this run, over the agent's. */
  timeouts?: Timeouts;
  /** How this run's client tool calls wait, over the agent's `clientTools`. */
  clientTools?: "wait" | "suspend";
}

export const defaultLimits: Readonly<Limits> = Object.freeze({ maxCycles: 10, abortGraceMs: 250 });

/**
 * The agent's own copy of the settings `new Agent()` checked: a caller's config object changed
 * afterwards (one shared by two agents and changed between them, say) must change neither the
 * agent's settings nor slip a value past the check. The data settings are copied; functions,
 * the provider, the tools and the container are the caller's own objects, used as they are.
 */
export function ownConfig(config: AgentConfig): AgentConfig {
  const own = { ...config };
  const { timeouts, stall, modelSettings } = config;
  if (timeouts !== undefined)
    own.timeouts =
      timeouts.tools === undefined ? { ...timeouts } : { ...timeouts, tools: { ...timeouts.tools } };
  if (stall) own.stall = { ...stall };
  if (modelSettings !== undefined) own.modelSettings = { ...modelSettings };
  return own;
}

/**
 * The agent's budget as its runs use it: without `maxTokens` or `contextWindow`, a share of the
 * model's known window. The agent's system prompt must leave some of it for the messages: checked
 * here, where a bad setting is refused, rather than failing every model call.
 */
export function resolveContextBudget(
  budget: ContextBudgetOptions | undefined,
  provider: LanguageModelV4 | undefined,
  systemPrompt: string,
): ContextBudgetOptions | undefined {
  if (budget === undefined) return undefined;
  // A copy, as ownConfig() takes of the other settings: the caller's object changed afterwards must
  // not slip a budget past this check into the agent's model calls.
  const sized = withContextWindow({ ...budget }, provider);
  const systemTokens = sized.systemTokens ?? estimateSystemTokens(systemPrompt);
  const total = budgetTokens(sized) as number;
  if (systemTokens >= total)
    throw new AgentConfigError("agent config", [
      {
        path: "contextBudget",
        message: `must leave tokens for the messages beside the system prompt's ${systemTokens}, got a budget of ${total}`,
      },
    ]);
  return sized;
}

function withContextWindow(
  budget: ContextBudgetOptions,
  provider: LanguageModelV4 | undefined,
): ContextBudgetOptions {
  if (budget.maxTokens !== undefined || budget.contextWindow !== undefined) return budget;
  const contextWindow = provider ? knownContextWindow(provider.modelId) : undefined;
  if (contextWindow === undefined)
    throw new InvalidConfigError(
      `contextBudget needs contextWindow or maxTokens: the context window of model "${provider?.modelId ?? "(none)"}" is not known.`,
    );
  return { ...budget, contextWindow };
}
