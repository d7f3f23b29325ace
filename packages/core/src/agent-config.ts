import type { LanguageModelV4 } from "@ai-sdk/provider";
import type { DependencyContainer } from "tsyringe";
import { checkOwnAgentConfig, checkOwnPromptOptions } from "./config.js";
import { AgentConfigError, unreadableError } from "./config-issues.js";
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
import { hasThenMethod } from "./run/checked-messages.js";
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
 * The agent's own copy of the settings `new Agent()` is given, taken before they are checked: the
 * copy is what is checked and used. A caller's config object changed afterwards (one shared by two
 * agents and changed between them, say) must change neither the agent's settings nor slip a value
 * past the check, and each setting is read once, so a getter cannot show the check one value and
 * the agent another. The config, its groups of settings and a ToolSet are copied; functions, the
 * provider, the tools themselves and the container are the caller's own objects, used as they are.
 * What is no object of settings (a number, an array, a promise) is kept as it is, for the check to
 * refuse.
 */
export function ownConfig(config: AgentConfig): AgentConfig {
  const own = copySettings(config, AGENT_CONFIG);
  if (own === config) return own;
  for (const group of SETTINGS_GROUPS)
    if (own[group] !== undefined) own[group] = ownGroup(own[group], AGENT_CONFIG, group) as never;
  ownTimeouts(own.timeouts, AGENT_CONFIG);
  if (isToolSet(own.tools)) own.tools = copySettings(own.tools, AGENT_CONFIG, "tools");
  return own;
}

const SETTINGS_GROUPS = ["limits", "timeouts", "retry", "stall", "contextBudget", "modelSettings"] as const;

/**
 * Checks an agent's settings as `new Agent()` does, each read once: a getter that throws is an
 * `AgentConfigError` naming the setting, as a bad value is.
 */
export function validateAgentConfig(config: unknown): void {
  checkOwnAgentConfig(ownConfig(config as AgentConfig));
}

/** Checks a prompt's options as `prompt()` does, each read once. */
export function validatePromptOptions(options: unknown): void {
  checkOwnPromptOptions(ownPromptOptions(options as PromptOptions));
}

/** A prompt's own options, as `ownConfig` takes the agent's: copied before they are checked. */
export function ownPromptOptions(options: PromptOptions): PromptOptions {
  const own = copySettings(options, PROMPT_OPTIONS);
  if (own !== options && own.timeouts !== undefined) {
    own.timeouts = ownGroup(own.timeouts, PROMPT_OPTIONS, "timeouts");
    ownTimeouts(own.timeouts, PROMPT_OPTIONS);
  }
  return own;
}

/** Whose settings are copied, as a refusal names them: what and the name of the whole. */
interface SettingsOwner {
  what: string;
  root: string;
}

const AGENT_CONFIG: SettingsOwner = { what: "agent config", root: "config" };
const PROMPT_OPTIONS: SettingsOwner = { what: "prompt options", root: "options" };

/** Gives timeouts (already a copy) a copy of their per-tool limits. */
function ownTimeouts(timeouts: Timeouts | undefined, owner: SettingsOwner): void {
  if (typeof timeouts === "object" && timeouts !== null && timeouts.tools !== undefined)
    timeouts.tools = ownGroup(timeouts.tools, owner, "timeouts.tools");
}

/**
 * A copy of a group of settings (`limits`, `timeouts`, …) without the settings given as
 * `undefined`: such a setting is one left out, and keeps its default or the agent's value when the
 * group is spread over them (`{ ...defaultLimits, ...limits }`), rather than replacing it with
 * nothing — `limits: { maxCycles: undefined }` would lift the cycle limit, a prompt's
 * `timeouts: { totalMs: undefined }` the agent's time limit.
 */
function ownGroup<Group>(group: Group, owner: SettingsOwner, path: string): Group {
  const own = copySettings(group, owner, path);
  if (own !== group)
    for (const [key, value] of Object.entries(own as object))
      if (value === undefined) delete (own as Record<string, unknown>)[key];
  return own;
}

/** A plain object whose values are the tools (an AI SDK ToolSet), not a registry or an array. */
function isToolSet(tools: unknown): tools is AiSdkToolSet {
  return (
    typeof tools === "object" &&
    tools !== null &&
    (Object.getPrototypeOf(tools) === Object.prototype || Object.getPrototypeOf(tools) === null)
  );
}

/**
 * A copy of an object of settings (at `path`; the whole when there is none), each read once;
 * anything else (undefined, a number, an array, a promise) is returned as it is. A setting that
 * cannot be read (a getter or a proxy that throws) is refused by name, as a bad value would be.
 */
function copySettings<Settings>(settings: Settings, owner: SettingsOwner, path?: string): Settings {
  if (typeof settings !== "object" || settings === null || Array.isArray(settings) || hasThenMethod(settings))
    return settings;
  try {
    return { ...settings };
  } catch (cause) {
    const name = [path, unreadableKey(settings)].filter((part) => part !== undefined).join(".") || owner.root;
    throw unreadableError(owner.what, name, cause);
  }
}

/** The key of `settings` that cannot be read, read once more to name it (undefined if it now can be). */
function unreadableKey(settings: object): string | undefined {
  let key: string | undefined;
  try {
    for (key of Object.keys(settings)) (settings as Record<string, unknown>)[key];
    return undefined;
  } catch {
    return key;
  }
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
  // The agent's own copy (ownConfig): the caller's object changed afterwards cannot slip a budget
  // past this check into the agent's model calls.
  const sized = withContextWindow(budget, provider);
  const systemTokens = sized.systemTokens ?? estimateSystemTokens(systemPrompt);
  const total = budgetTokens(sized) as number;
  if (systemTokens >= total)
    throw new AgentConfigError("agent config", [
      {
        path: "contextBudget",
        message: `must leave tokens for the messages beside ${systemPromptCount(sized, systemPrompt, systemTokens)}, got a budget of ${total}`,
      },
    ]);
  return sized;
}

/**
 * What was counted for the system prompt, said in a refusal: the estimate is of a message holding
 * its text, so even no system prompt costs a few tokens, which the refusal must explain.
 */
function systemPromptCount(budget: ContextBudgetOptions, systemPrompt: string, systemTokens: number): string {
  if (budget.systemTokens !== undefined) return `the system prompt's ${systemTokens} (its systemTokens)`;
  const what =
    systemPrompt === ""
      ? "a message's framing and overhead, counted with no system prompt too"
      : "its text, with a message's framing and overhead";
  return `the ${systemTokens} estimated for the system prompt (${what})`;
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
