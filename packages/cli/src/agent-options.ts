import {
  Agent,
  type AgentConfig,
  type AgentMessage,
  defaultLimits,
  LONGEST_TIMER_MS,
} from "@agent-core/core";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { isHttpUrl } from "./provider.js";
import { createDemoAgentTools } from "./tools/demo-tools.js";
import { UsageError } from "./usage-error.js";

export const SYSTEM_PROMPT =
  "You are a helpful assistant. Use the calculator for arithmetic and get_current_time for the date or time.";

/**
 * The model limits of `run`, `chat` and `mcp` unless their options say otherwise. An agent has
 * none of its own: a model that never answers, or stops mid-answer, would hold the command
 * forever. Long enough for a slow local model's first token or a silent reasoning.
 */
export const DEFAULT_TIMEOUTS = { firstChunkMs: 120_000, chunkMs: 60_000 } as const;

/** The options `run` and `chat` share: which model, and how the agent loops, waits and watches itself. */
export const AGENT_OPTIONS = {
  model: { type: "string" },
  "base-url": { type: "string" },
  orchestrator: { type: "string" },
  system: { type: "string" },
  "max-cycles": { type: "string" },
  "total-ms": { type: "string" },
  "step-ms": { type: "string" },
  "first-chunk-ms": { type: "string" },
  "chunk-ms": { type: "string" },
  "tool-ms": { type: "string" },
  "parallel-tools": { type: "boolean" },
  "max-concurrency": { type: "string" },
  "stall-calls": { type: "string" },
  "stall-results": { type: "string" },
  "no-stall": { type: "boolean" },
} as const;

/** The help lines of the agent options; `orchestrators` lists the registered ones. */
export function agentOptionsHelp(orchestrators: string): string {
  return `  --model NAME         the model name, over AGENT_CORE_MODEL (with OPENAI_API_KEY)
  --base-url URL       the API's base URL, over OPENAI_BASE_URL (with OPENAI_API_KEY)
  --orchestrator NAME  how the agent loops; registered: ${orchestrators}
  --system TEXT        replace the system prompt
  --max-cycles N       stop after N model calls (default ${defaultLimits.maxCycles})
  --total-ms N         end a run after N milliseconds (stop reason timeout)
  --step-ms N          end a run whose model call takes longer than N ms
  --first-chunk-ms N   … whose model call sends nothing for its first N ms
                       (default ${DEFAULT_TIMEOUTS.firstChunkMs})
  --chunk-ms N         … whose model stream stalls for N ms between chunks
                       (default ${DEFAULT_TIMEOUTS.chunkMs})
  --tool-ms N          give up on a tool call after N ms (the call's result says timeout)
  --parallel-tools     run the tool calls of one model reply at once, not one by one
  --max-concurrency N  at most N tool calls at once with --parallel-tools (default 8)
  --stall-calls N      the same tool call in N replies is a stall (default 2)
  --stall-results N    the same tool result N times in a row is a stall (default 3);
                       a stall first nudges the model, then stops the run if it goes on
  --no-stall           never nudge or stop a run as stalled
`;
}

type AgentOptionValues = { [Name in keyof typeof AGENT_OPTIONS]?: string | boolean };

/** What the agent options decide: the environment the model is picked from, and the agent's settings. */
export interface AgentOptions {
  /** The environment with --model and --base-url over AGENT_CORE_MODEL and OPENAI_BASE_URL. */
  modelEnv: Record<string, string | undefined>;
  config: Pick<
    AgentConfig,
    | "systemPrompt"
    | "orchestrator"
    | "limits"
    | "timeouts"
    | "toolExecution"
    | "maxConcurrency"
    | "stall"
    | "logger"
  >;
}

export function parseAgentOptions(
  values: AgentOptionValues,
  env: Record<string, string | undefined>,
): AgentOptions {
  const text = (name: keyof typeof AGENT_OPTIONS) => values[name] as string | undefined;
  const flag = (name: keyof typeof AGENT_OPTIONS) => values[name] === true;
  const parallel = flag("parallel-tools");
  const maxConcurrency = whole(text("max-concurrency"), "--max-concurrency", 1);
  if (maxConcurrency !== undefined && !parallel)
    throw new UsageError("--max-concurrency is for parallel tools: add --parallel-tools.");
  const stallCalls = whole(text("stall-calls"), "--stall-calls", 2);
  const stallResults = whole(text("stall-results"), "--stall-results", 2);
  if (flag("no-stall") && (stallCalls !== undefined || stallResults !== undefined))
    throw new UsageError(
      "--no-stall turns stall detection off: leave out --stall-calls and --stall-results.",
    );
  const timeouts = {
    ...DEFAULT_TIMEOUTS,
    ...definedOnly({
      totalMs: whole(text("total-ms"), "--total-ms", 1, LONGEST_TIMER_MS),
      stepMs: whole(text("step-ms"), "--step-ms", 1, LONGEST_TIMER_MS),
      firstChunkMs: whole(text("first-chunk-ms"), "--first-chunk-ms", 1, LONGEST_TIMER_MS),
      chunkMs: whole(text("chunk-ms"), "--chunk-ms", 1, LONGEST_TIMER_MS),
      toolMs: whole(text("tool-ms"), "--tool-ms", 1, LONGEST_TIMER_MS),
    }),
  };
  const orchestrator = text("orchestrator");
  if (orchestrator !== undefined && orchestrator.trim() === "")
    throw new UsageError(
      `--orchestrator needs a name, got "${orchestrator}".`,
      'Run "agent-core --help" for the registered orchestrators, or leave the option out for the default.',
    );
  // plan-execute runs a plan's independent steps at once with a concurrency of its own (4), whatever
  // the agent's toolExecution and maxConcurrency say: taking the options would look as if they worked.
  if (orchestrator === "plan-execute" && parallel)
    throw new UsageError(
      "--parallel-tools does not change how plan-execute runs a plan's steps: it runs the independent ones at once (up to 4) on its own.",
      "Leave out --parallel-tools and --max-concurrency with --orchestrator plan-execute.",
    );
  const stall = flag("no-stall")
    ? false
    : definedOnly({ repeatedCalls: stallCalls, repeatedResults: stallResults });
  return {
    modelEnv: parseModelOptions(values, env),
    config: {
      systemPrompt: systemPrompt(text("system")),
      orchestrator,
      limits: { maxCycles: whole(text("max-cycles"), "--max-cycles", 1) ?? defaultLimits.maxCycles },
      timeouts,
      ...(parallel ? { toolExecution: "parallel" as const } : {}),
      ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
      ...(stall === false || Object.keys(stall).length > 0 ? { stall } : {}),
    },
  };
}

/**
 * The environment the model is picked from, with --model and --base-url over AGENT_CORE_MODEL and
 * OPENAI_BASE_URL: what every command that talks to a model (serve too) reads.
 */
export function parseModelOptions(
  values: { model?: string | boolean; "base-url"?: string | boolean },
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  return modelEnv(
    env,
    modelName(values.model as string | undefined),
    baseUrl(values["base-url"] as string | undefined),
  );
}

/** An empty name would fall back to the default model: the option would look as if it had worked. */
function modelName(value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === "")
    throw new UsageError(
      `--model needs a name, got "${value}".`,
      "Leave the option out for AGENT_CORE_MODEL's model (or the default).",
    );
  return value;
}

/**
 * An empty system prompt would be replaced by the library's generic one, neither empty nor the
 * CLI's: the option would look as if it had worked.
 */
function systemPrompt(value: string | undefined): string {
  if (value !== undefined && value.trim() === "")
    throw new UsageError(
      // Quoted as JSON: a line break in it stays on the one line of the error.
      `--system needs a text, got ${JSON.stringify(value)}.`,
      "Leave the option out for the CLI's system prompt.",
    );
  return value ?? SYSTEM_PROMPT;
}

/** The CLI's agent: the demo tools, the options' settings, and the history to start from. */
export function createCliAgent(
  options: AgentOptions,
  model: LanguageModelV4,
  messages: readonly AgentMessage[] = [],
): Agent {
  return new Agent({ ...options.config, provider: model, tools: createDemoAgentTools(), messages });
}

function whole(
  value: string | undefined,
  option: string,
  minimum: number,
  maximum = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (value === undefined) return undefined;
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (Number.isNaN(number) || number < minimum)
    throw new UsageError(`${option} must be a whole number >= ${minimum}, got "${value}".`);
  if (number > maximum) throw new UsageError(`${option} must be at most ${maximum}, got "${value}".`);
  return number;
}

function baseUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isHttpUrl(value))
    throw new UsageError(`--base-url must be an http:// or https:// URL, got "${value}".`);
  return value;
}

function modelEnv(
  env: Record<string, string | undefined>,
  model: string | undefined,
  url: string | undefined,
): Record<string, string | undefined> {
  return {
    ...env,
    ...(model !== undefined ? { AGENT_CORE_MODEL: model } : {}),
    ...(url !== undefined ? { OPENAI_BASE_URL: url } : {}),
  };
}

function definedOnly<T extends Record<string, number | undefined>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}
