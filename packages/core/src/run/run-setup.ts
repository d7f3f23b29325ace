import type { LanguageModelV4 } from "@ai-sdk/provider";
import type { DependencyContainer } from "tsyringe";
import type { ContextBudgetOptions } from "../history/context-budget.js";
import type { ConvertToLlm, HistoryTransform } from "../history/pipeline.js";
import type { AbortScope } from "../model/abortable.js";
import type { RetryOptions } from "../model/retry.js";
import type { StepTimeouts } from "../model/step-watchdog.js";
import type { ModelCallSettings } from "../model/stream-step.js";
import type { Limits } from "../orchestrator/contract.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { StallOptions } from "../tools/stall-detector.js";
import type { ToolTimeouts } from "./batch-contract.js";
import type { ClientToolCalls } from "./client-tools.js";
import type { AgentHooks } from "./hooks.js";
import type { MessageInbox } from "./message-queue.js";
import type { Clock, ModelStep, ToolRunner } from "./services.js";

/** Everything a run is made of: what the agent hands it, as data. */
export interface RunSetup {
  runId: string;
  limits: Limits;
  systemPrompt: string;
  provider: LanguageModelV4 | undefined;
  tools: ToolRegistry;
  hooks: AgentHooks;
  transformContext: HistoryTransform | undefined;
  convertToLlm: ConvertToLlm | undefined;
  contextBudget: ContextBudgetOptions | undefined;
  modelSettings: ModelCallSettings | undefined;
  retry: RetryOptions;
  stepTimeouts: StepTimeouts | undefined;
  toolTimeouts: ToolTimeouts;
  /** Tool calls run at once by default (1: sequential). */
  concurrency: number;
  stall: StallOptions | false;
  steering: MessageInbox;
  followUps: MessageInbox;
  /** The agent, whose container (`ctx.container`) is made when first asked for. */
  owner: { readonly container: DependencyContainer };
  abortScope: AbortScope;
  clock: Clock;
  modelStep: ModelStep;
  toolRunner: ToolRunner;
  /** The agent's client tool calls waiting for `submitToolResult()`. */
  clientTools: ClientToolCalls;
  /** Whether client calls wait in the run or suspend it. */
  clientToolMode: "wait" | "suspend";
}
