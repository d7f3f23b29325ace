import type { DependencyContainer } from "tsyringe";
import type { z } from "zod";
import type { OrchestratorEvent } from "../events/schemas.js";
import type {
  AgentMessage,
  AssistantMessage,
  LlmMessage,
  MessageInput,
  ToolCall,
  ToolResultMessage,
} from "../messages.js";
import type { ModelCallSettings } from "../model/stream-step.js";
import type { ToolRegistry } from "../tools/registry.js";

/** A turn loop. It acts only through `ctx`, and so gets every guarantee of the framework. */
export interface Orchestrator {
  readonly name: string;
  /**
   * The version of its turn loop. A durable runtime records name and version when a run starts
   * and resumes the run only with the same (a changed loop could take another path through the
   * recorded steps). Change it when the loop's decisions change.
   */
  readonly version?: string;
  run(ctx: RunContext): Promise<void>;
  /**
   * Optional: resumes a batch a previous run suspended (it waited for approvals or client results),
   * for a loop that keeps state across the suspension. The run started by `agent.approve()`,
   * `deny()` or `submitToolResult()` calls it instead of `run`, with the batch's calls, which still
   * wait for their results: pass them to `ctx.executeTools()` (the run's first batch takes the
   * decisions made), then go on as `run` would. Without it, the run executes the batch itself and
   * then calls `run`.
   */
  resume?(ctx: RunContext, calls: readonly ToolCall[]): Promise<void>;
}

export type OrchestratorFactory<Options = never> = (options?: Options) => Orchestrator;

export interface Limits {
  /** Model calls per run, follow-up turns included (default 10). */
  maxCycles: number;
  /** How long an aborted tool or orchestrator may take to stop before it is abandoned (default 250 ms). */
  abortGraceMs: number;
}

/**
 * The history of the agent, shared by its runs: read it, append to it; nothing is ever rewritten.
 * `append` refuses a malformed message with an `InvalidHistoryError` before any message of the call
 * is added, and so is one that breaks the transcript rules. The history keeps the objects appended,
 * not copies (as those of `all` are its own): one changed afterwards changes the history, with no
 * check, so append a copy of a message you will go on changing.
 */
export interface MessageLog {
  readonly all: readonly AgentMessage[];
  readonly length: number;
  append(...messages: AgentMessage[]): void;
}

/** Messages queued by the app (`agent.steer`, `agent.followUp`, or the config callbacks). */
export interface MessageSource {
  /** Drains the queue (and asks the config callback); an empty array when nothing waits. */
  take(): Promise<AgentMessage[]>;
}

export interface DecideOptions {
  /** The system prompt for this call (default: the agent's). */
  system?: string;
  /** Which registered tools the model may call (default all; `false` for none). */
  tools?: readonly string[] | false;
  /** Per-call model settings, merged over the agent's `modelSettings`. */
  settings?: ModelCallSettings;
  /** Messages added after the history for this call only (an instruction, a critique); never stored. */
  messages?: readonly LlmMessage[];
}

/** The model's steering decision: answer (respond), or call tools (steer). */
export type Decision =
  | { mode: "respond"; message: AssistantMessage; text: string }
  | { mode: "steer"; message: AssistantMessage; toolCalls: ToolCall[] };

export interface ExecuteToolsOptions {
  /** Check the steering queue after each tool and skip the rest when it has messages (default true). */
  interruptOnSteering?: boolean;
  /**
   * How many calls may run at once (default 1: one at a time, in order). Live events then come in
   * completion order, each call's `tool_call` before its `tool_result`; the history keeps call order.
   */
  concurrency?: number;
  /** Called right before a call's `tool_call` event (e.g. to emit `plan_step_start`). */
  beforeEach?(call: ToolCall): void;
  /** Called right after a call's `tool_result` event. */
  afterEach?(call: ToolCall, result: ToolResultMessage): void;
}

export interface GenerateObjectOptions<T = unknown> {
  /** The system prompt for this call (default: the agent's). */
  system?: string;
  /** Messages added after the history for this call only; they are never stored. */
  messages?: readonly LlmMessage[];
  /** Name and description of the expected object, for providers with structured outputs. */
  name?: string;
  description?: string;
  /** Model calls before giving up (default 2): an invalid reply is sent back with what was wrong. */
  maxAttempts?: number;
  /**
   * How many tool calls the object decides on (a plan's steps). The call's `steering_mode` event
   * then says `steer` with that count; without it, or at 0, `respond`.
   */
  toolCallsOf?(object: T): number;
  settings?: ModelCallSettings;
}

export interface GeneratedObject<T> {
  object: T;
  /** The model's raw reply. */
  text: string;
}

export interface ToolBatchResult {
  /** One result per call, in the order of the calls. */
  results: ToolResultMessage[];
  /** Steering messages that arrived during the batch; they are already in the history. */
  steering: AgentMessage[];
}

/**
 * The services a run hands its orchestrator. Each one keeps the run's guarantees: events get their
 * envelope, the history stays valid, limits and abort hold.
 */
export interface RunContext {
  readonly runId: string;
  /** Aborted by `agent.abort()`, `run.abort()` or the prompt's signal. */
  readonly signal: AbortSignal;
  readonly limits: Readonly<Limits>;
  /** Model calls made so far in this run (they count against `limits.maxCycles`). */
  readonly cycles: number;
  readonly systemPrompt: string;
  readonly tools: ToolRegistry;
  readonly messages: MessageLog;
  readonly steering: MessageSource;
  readonly followUps: MessageSource;
  /** The agent's child container: resolve shared services, or register your own. */
  readonly container: DependencyContainer;
  /**
   * Emits an event; the framework adds `runId`, `seq` and `ts`. Throws `ReservedEventError` for a
   * type only a service emits, `InvalidEventError` for a type nobody registered, an event that
   * fails its type's schema, or a `custom` event whose `data` is not JSON (docs/events.md#custom).
   */
  emit(event: OrchestratorEvent): void;
  /** Opens a turn (emits `turn_start`) and returns its number, from 1. */
  startTurn(): number;
  /** Closes the open turn (emits `turn_end` with the turn's own duration). */
  endTurn(message: AssistantMessage): void;
  /**
   * One model call: checks abort, `maxCycles` and steering first; streams `thinking` and
   * `text_delta`; appends the assistant message; emits `steering_mode`.
   */
  decide(options?: DecideOptions): Promise<Decision>;
  /**
   * Runs tool calls of the history still waiting for their result (`decision.toolCalls`, or the
   * calls of an assistant message the orchestrator appended), each once; any other call (made up,
   * already answered, running in another batch) is refused with an `InvalidHistoryError` before
   * any tool runs. One at a time in the model's order: validates args against each tool's schema,
   * emits `tool_call`/`tool_result`, appends every result, and checks steering after each tool
   * (the rest are `skipped`, then the steering messages enter the history).
   */
  executeTools(calls: readonly ToolCall[], options?: ExecuteToolsOptions): Promise<ToolBatchResult>;
  /**
   * One model call for a structured result (a plan, a verdict): asks for JSON matching `schema`
   * (the provider's JSON mode where it has one), extracts and validates it, and sends an invalid
   * reply back once with what was wrong. Counts as a cycle; streams reasoning as `thinking`; does
   * not touch the history. Throws `StructuredOutputError` when no attempt is valid.
   */
  generateObject<T>(schema: z.ZodType<T>, options?: GenerateObjectOptions<T>): Promise<GeneratedObject<T>>;
  /** Appends messages that steer the run and emits `steering_applied`. */
  applySteering(messages: readonly MessageInput[]): void;
}
