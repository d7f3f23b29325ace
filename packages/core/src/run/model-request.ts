import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { InvalidConfigError, InvalidHistoryError, NoProviderError } from "../errors.js";
import {
  budgetTokens,
  type ContextBudgetOptions,
  contextBudget,
  estimateSystemTokens,
} from "../history/context-budget.js";
import { type ConvertToLlm, defaultConvertToLlm, type HistoryTransform } from "../history/pipeline.js";
import type { AgentMessage, LlmMessage } from "../messages.js";
import { PromptBuilder, toModelPrompt } from "../model/prompt.js";
import type { ModelCallSettings } from "../model/stream-step.js";
import type { DecideOptions } from "../orchestrator/contract.js";
import type { ToolRegistry } from "../tools/registry.js";
import { checkedMessages, refusedPromise } from "./checked-messages.js";
import type { EventPublisher } from "./event-publisher.js";
import type { AgentHooks } from "./hooks.js";
import { validateTranscript } from "./transcript.js";

/** What a `decide` or `generateObject` call asks for, before the pipeline builds the prompt. */
export interface ModelCallSpec {
  system: string | undefined;
  /** Which registered tools the model may call (default all; `false` for none). */
  tools: DecideOptions["tools"];
  settings: ModelCallSettings | undefined;
  /** Messages for this call only, after the history. */
  extraMessages: readonly LlmMessage[] | undefined;
}

/** The model, prompt, tools and settings of one call. */
export interface ModelRequest {
  model: LanguageModelV4;
  prompt: LanguageModelV4Prompt;
  tools: readonly LanguageModelV4FunctionTool[];
  settings: ModelCallSettings | undefined;
}

export interface ModelRequestSetup {
  readonly runId: string;
  readonly provider: LanguageModelV4 | undefined;
  readonly systemPrompt: string;
  readonly tools: ToolRegistry;
  readonly hooks: AgentHooks;
  readonly modelSettings: ModelCallSettings | undefined;
  readonly transformContext: HistoryTransform | undefined;
  readonly convertToLlm: ConvertToLlm | undefined;
  readonly contextBudget: ContextBudgetOptions | undefined;
}

/**
 * Builds each model call's request from the history: `transformContext → context budget →
 * convertToLlm → prepareStep`, then the v4 prompt. Without any of those steps the prompt is built
 * synchronously and incrementally (only messages added since the last call are converted).
 */
export class ModelRequestBuilder {
  readonly #setup: ModelRequestSetup;
  readonly #signal: AbortSignal;
  readonly #prompts = new PromptBuilder();
  readonly #events: EventPublisher;
  /**
   * The context budget of each system prompt the calls send: an orchestrator adds its own
   * instructions to the agent's (agentic, after tool results), and the request carries them.
   */
  readonly #budgets = new Map<string, HistoryTransform>();
  /** True when any pipeline step or `prepareStep` is configured: the request needs async work. */
  readonly needsPipeline: boolean;

  constructor(setup: ModelRequestSetup, signal: AbortSignal, events: EventPublisher) {
    this.#setup = setup;
    this.#signal = signal;
    this.#events = events;
    this.needsPipeline = Boolean(
      setup.hooks.prepareStep || setup.transformContext || setup.convertToLlm || setup.contextBudget,
    );
  }

  /** The context budget for calls sending `system`, if one is set: what it leaves for the messages. */
  #budgetFor(system: string): HistoryTransform | undefined {
    const options = this.#setup.contextBudget;
    if (options === undefined) return undefined;
    let budget = this.#budgets.get(system);
    if (budget === undefined) {
      const systemTokens = options.systemTokens ?? estimateSystemTokens(system);
      // new Agent() checked the agent's own prompt; what an orchestrator adds to it is known only
      // now. Said as a setting to change, not as contextBudget()'s RangeError about `systemTokens`,
      // an option the app may never have set.
      const total = budgetTokens(options) as number;
      if (systemTokens >= total)
        throw new InvalidConfigError(
          `contextBudget must leave tokens for the messages beside the system prompt this call sends (${systemTokens} tokens, with what the orchestrator adds to the agent's), got a budget of ${total}.`,
        );
      budget = contextBudget({
        ...options,
        systemTokens,
        onTruncate: (info) => this.#events.publish({ type: "context_truncated", ...info }),
      });
      this.#budgets.set(system, budget);
    }
    return budget;
  }

  /** The request straight from the history (no pipeline step configured). */
  fromHistory(spec: ModelCallSpec, history: readonly AgentMessage[]): ModelRequest {
    const system = spec.system ?? this.#setup.systemPrompt;
    return this.#request(
      spec,
      this.#provider(),
      this.#prompts.buildFromHistory(system, history),
      this.tools(spec.tools),
    );
  }

  /** The request through the pipeline and `prepareStep`. */
  async throughPipeline(
    spec: ModelCallSpec,
    history: readonly AgentMessage[],
    step: number,
  ): Promise<ModelRequest> {
    const { transformContext, convertToLlm = defaultConvertToLlm, hooks } = this.#setup;
    const signal = this.#signal;
    let kept: readonly AgentMessage[] = transformContext
      ? checkedMessages(
          await transformContext([...history], { signal }),
          history,
          "transformContext returned an invalid result",
          false,
        )
      : history;
    const budget = this.#budgetFor(spec.system ?? this.#setup.systemPrompt);
    if (budget) kept = await budget(kept, { signal });
    // A copy, as transformContext gets, when `kept` is the history itself: an app's hook that
    // changes its argument in place (a reminder pushed on) would otherwise change it for good.
    const messages = checkedMessages<LlmMessage>(
      convertToLlm(kept === history && this.#setup.convertToLlm ? [...kept] : kept),
      kept,
      "convertToLlm returned an invalid result",
      true,
    );
    let model = this.#provider();
    let system = spec.system ?? this.#setup.systemPrompt;
    let tools = this.tools(spec.tools);
    if (!hooks.prepareStep)
      return this.#request(spec, model, this.#prompts.build(system, sent(messages)), tools);
    const prepared = await hooks.prepareStep({
      runId: this.#setup.runId,
      step,
      messages,
      tools: tools.map((tool) => tool.name),
      system,
      model,
    });
    const problem = preparedProblem(prepared, this.#setup.tools);
    if (problem !== undefined) throw new TypeError(`prepareStep returned an invalid result: ${problem}.`);
    if (prepared?.messages)
      checkedMessages(
        prepared.messages,
        messages,
        "prepareStep returned an invalid result",
        true,
        "messages",
      );
    system = prepared?.system ?? system;
    model = prepared?.model ?? model;
    if (prepared?.tools) tools = this.tools(prepared.tools);
    return this.#request(
      spec,
      model,
      this.#prompts.build(system, sent(prepared?.messages ?? messages)),
      tools,
    );
  }

  /** The registered tools the model is offered. */
  tools(selection: DecideOptions["tools"]): readonly LanguageModelV4FunctionTool[] {
    if (selection === false) return [];
    const all = this.#setup.tools.toModelTools();
    if (selection === undefined) return all;
    return all.filter((tool) => selection.includes(tool.name));
  }

  #request(
    spec: ModelCallSpec,
    model: LanguageModelV4,
    prompt: LanguageModelV4Prompt,
    tools: readonly LanguageModelV4FunctionTool[],
  ): ModelRequest {
    const withExtra =
      spec.extraMessages && spec.extraMessages.length > 0
        ? prompt.concat(toModelPrompt(undefined, spec.extraMessages))
        : prompt;
    // Only the system prompt (an empty history, `prompt([])`, or none of its messages one the model
    // reads): a strict provider refuses the request, and the reply would start the history.
    if (withExtra.length === (withExtra[0]?.role === "system" ? 1 : 0))
      throw new InvalidHistoryError(
        "the model call has no message to answer: the history (after transformContext, convertToLlm and prepareStep) has none the model reads; give prompt() a message.",
      );
    const defaults = this.#setup.modelSettings;
    const settings = spec.settings ? { ...defaults, ...spec.settings } : defaults;
    return { model, prompt: withExtra, tools, settings };
  }

  #provider(): LanguageModelV4 {
    const provider = this.#setup.provider;
    if (provider === undefined) throw new NoProviderError();
    return provider;
  }
}

/**
 * The messages a pipeline or `prepareStep` hands the model, checked as a strict provider would:
 * a transform that parted a tool call from its result fails the call here, saying so, instead of
 * reaching the provider.
 */
function sent(messages: readonly LlmMessage[]): readonly LlmMessage[] {
  const problems = validateTranscript(messages);
  if (problems.length > 0)
    throw new InvalidHistoryError(
      `the messages for the model (after transformContext, convertToLlm and prepareStep) break the tool-call rules: ${problems.join("; ")}`,
    );
  return messages;
}

function preparedProblem(prepared: unknown, registry: ToolRegistry): string | undefined {
  if (prepared === undefined || prepared === null) return undefined;
  if (typeof prepared !== "object") return `expected an object, got ${typeof prepared}`;
  const { messages, tools, system, model } = prepared as Record<string, unknown>;
  if (system !== undefined && typeof system !== "string")
    return `system must be a string, got ${typeof system}`;
  if (model !== undefined && typeof (model as { doStream?: unknown } | null)?.doStream !== "function")
    return "model must be an AI SDK LanguageModel (an object with a doStream method)";
  if (messages !== undefined && !Array.isArray(messages))
    return `messages must be an array${refusedPromise(messages) ? " (of messages, not a promise of them)" : ""}`;
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return "tools must be an array of tool names";
  const unknown = tools.find((name) => typeof name !== "string" || registry.get(name) === undefined);
  return unknown === undefined ? undefined : `tools names no registered tool: ${String(unknown)}`;
}
