import type { RunMetrics } from "../events/schemas.js";
import { addUsage, emptyUsage, type Usage, usageOf } from "../messages.js";

/** Counts what a run spends, in time, tokens and tool calls, for the `metrics` of turns and runs. */
export class MetricsRecorder {
  modelMs = 0;
  toolMs = 0;
  cycles = 0;
  usage: Usage = emptyUsage();
  readonly toolCalls: Record<string, number> = {};

  count(status: string): void {
    this.toolCalls[status] = (this.toolCalls[status] ?? 0) + 1;
  }

  addUsage(step: Usage): void {
    this.usage = addUsage(this.usage, step);
  }

  snapshot(): MetricsSnapshot {
    return {
      modelMs: this.modelMs,
      toolMs: this.toolMs,
      usage: this.usage,
      toolCalls: { ...this.toolCalls },
      cycles: this.cycles,
    };
  }

  static zero(): MetricsSnapshot {
    return { modelMs: 0, toolMs: 0, usage: emptyUsage(), toolCalls: {}, cycles: 0 };
  }

  /** What was spent since `start`, over `durationMs` of wall time (the rest is the framework's). */
  since(start: MetricsSnapshot, durationMs: number): RunMetrics {
    const modelMs = this.modelMs - start.modelMs;
    const toolMs = this.toolMs - start.toolMs;
    const toolCalls: Record<string, number> = {};
    for (const status in this.toolCalls) {
      const delta = (this.toolCalls[status] as number) - (start.toolCalls[status] ?? 0);
      if (delta > 0) toolCalls[status] = delta;
    }
    return {
      cycles: this.cycles - start.cycles,
      toolCalls,
      modelMs: round(modelMs),
      toolMs: round(toolMs),
      frameworkMs: round(Math.max(0, durationMs - modelMs - toolMs)),
      usage: usageSince(this.usage, start.usage),
    };
  }
}

export interface MetricsSnapshot {
  modelMs: number;
  toolMs: number;
  usage: Usage;
  toolCalls: Record<string, number>;
  cycles: number;
}

/**
 * The tokens of `total` not yet in `start`. The optional counts are there once a model call of the
 * run reported them, as in the run's `usage` (a turn whose calls reported none of them: 0).
 */
function usageSince(total: Usage, start: Usage): Usage {
  const since = (now: number | undefined, before: number | undefined) =>
    now === undefined ? undefined : now - (before ?? 0);
  return usageOf(
    total.inputTokens - start.inputTokens,
    total.outputTokens - start.outputTokens,
    total.totalTokens - start.totalTokens,
    since(total.reasoningTokens, start.reasoningTokens),
    since(total.cachedInputTokens, start.cachedInputTokens),
  );
}

const round = (ms: number) => Math.round(ms * 100) / 100;
