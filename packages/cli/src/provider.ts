import { LONGEST_TIMER_MS } from "@agent-core/core";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { createDemoModel } from "./demo-model.js";
import { UsageError } from "./usage-error.js";

export interface ModelChoice {
  model: LanguageModelV4;
  /** Names the model for the person reading the output, e.g. "gpt-4o-mini via https://api.openai.com/v1". */
  label: string;
  /** True for the offline demo model, whose answers must never pass for a real model's. */
  demo: boolean;
}

export const DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const DEFAULT_MODEL = "gpt-4o-mini";
export const DEMO_LABEL = "offline demo model (set OPENAI_API_KEY to use a real model)";

// Slow enough that a person sees the demo answer stream in, fast enough not to bore them.
export const DEFAULT_DEMO_DELAY_MS = 15;

/**
 * The model the CLI talks to: any OpenAI-compatible chat endpoint (OpenAI, Ollama, llama.cpp server, vLLM)
 * when `OPENAI_API_KEY` is set, otherwise an offline demo model (`demoModel`, default the CLI's own).
 */
export function modelFromEnv(
  env: Record<string, string | undefined>,
  options: { demoModel?: (chunkDelayMs: number) => LanguageModelV4 } = {},
): ModelChoice {
  const apiKey = nonEmpty(env.OPENAI_API_KEY);
  if (apiKey === undefined) {
    const chunkDelayMs = demoDelay(env.AGENT_CORE_DEMO_DELAY_MS);
    const demoModel = options.demoModel ?? ((delayMs) => createDemoModel({ chunkDelayMs: delayMs }));
    return { model: demoModel(chunkDelayMs), label: DEMO_LABEL, demo: true };
  }
  const baseURL = nonEmpty(env.OPENAI_BASE_URL) ?? DEFAULT_BASE_URL;
  if (!isHttpUrl(baseURL))
    throw new UsageError(
      `OPENAI_BASE_URL must be an http:// or https:// URL, got "${baseURL}".`,
      "For example http://localhost:11434/v1 (Ollama); unset it for OpenAI's.",
    );
  const modelId = nonEmpty(env.AGENT_CORE_MODEL) ?? DEFAULT_MODEL;
  const provider = createOpenAICompatible({ name: "openai-compatible", baseURL, apiKey, includeUsage: true });
  return { model: provider(modelId), label: `${modelId} via ${baseURL}`, demo: false };
}

/**
 * What --base-url and OPENAI_BASE_URL take: an http:// or https:// URL with a host. A scheme is
 * case-insensitive (`HTTP://` is `http://`): the URL's protocol, which the parser lower-cases, decides.
 */
export function isHttpUrl(value: string): boolean {
  if (!/^[a-z][a-z\d+.-]*:\/\/[^/]/i.test(value) || !URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === "http:" || protocol === "https:";
}

/** `VAR=` in a shell sets an empty string; it means "unset", not "use the empty string". */
function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

function demoDelay(value: string | undefined): number {
  if (nonEmpty(value) === undefined) return DEFAULT_DEMO_DELAY_MS;
  if (!/^\s*\d+\s*$/.test(value as string))
    throw new UsageError(
      `AGENT_CORE_DEMO_DELAY_MS must be a whole number of milliseconds, got "${value}".`,
      "Unset it, or set it to e.g. 0 for no delay.",
    );
  const delayMs = Number(value);
  if (delayMs > LONGEST_TIMER_MS)
    throw new UsageError(
      `AGENT_CORE_DEMO_DELAY_MS must be at most ${LONGEST_TIMER_MS}, got "${value}".`,
      "Node's timers wait no longer. Unset it, or set it to e.g. 0 for no delay.",
    );
  return delayMs;
}
