import type { RunMetrics } from "../events/schemas.js";
import { addUsage, emptyUsage, type Usage } from "../messages.js";

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
      usage: {
        inputTokens: this.usage.inputTokens - start.usage.inputTokens,
        outputTokens: this.usage.outputTokens - start.usage.outputTokens,
        totalTokens: this.usage.totalTokens - start.usage.totalTokens,
      },
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

const round = (ms: number) => Math.round(ms * 100) / 100;
