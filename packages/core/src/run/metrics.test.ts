import { describe, expect, it } from "vitest";
import type { Usage } from "../messages.js";
import { MetricsRecorder } from "./metrics.js";

const usage = (inputTokens: number, outputTokens: number): Usage => ({
  inputTokens,
  outputTokens,
  totalTokens: inputTokens + outputTokens,
});

describe("MetricsRecorder", () => {
  it("counts tool calls by status and adds usage", () => {
    const m = new MetricsRecorder();
    m.count("ok");
    m.count("error");
    m.count("ok");
    m.addUsage(usage(10, 5));
    m.addUsage(usage(1, 2));
    expect(m.toolCalls).toStrictEqual({ ok: 2, error: 1 });
    expect(m.usage).toEqual(usage(11, 7));
  });

  it("starts at zero, and its zero snapshot is a fresh object of zeros", () => {
    const m = new MetricsRecorder();
    expect(m.snapshot()).toStrictEqual(MetricsRecorder.zero());
    expect(MetricsRecorder.zero()).toStrictEqual({
      modelMs: 0,
      toolMs: 0,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      toolCalls: {},
      cycles: 0,
    });
  });

  it("snapshots its counts, not a view of them", () => {
    const m = new MetricsRecorder();
    m.modelMs = 12;
    m.toolMs = 3;
    m.cycles = 2;
    m.count("ok");
    m.addUsage(usage(4, 1));
    const snapshot = m.snapshot();
    m.count("ok");
    m.count("denied");
    expect(snapshot).toStrictEqual({
      modelMs: 12,
      toolMs: 3,
      usage: usage(4, 1),
      toolCalls: { ok: 1 },
      cycles: 2,
    });
  });

  it("reports what was spent since a snapshot: only statuses that grew, times rounded to 0.01 ms", () => {
    const m = new MetricsRecorder();
    m.modelMs = 100;
    m.toolMs = 20;
    m.cycles = 4;
    m.count("ok");
    m.count("error");
    m.addUsage(usage(100, 50));
    const start = m.snapshot();
    m.modelMs += 10.123_456;
    m.toolMs += 5.006;
    m.cycles += 2;
    m.count("ok");
    m.count("ok");
    m.count("denied");
    m.addUsage(usage(7, 3));
    expect(m.since(start, 30)).toStrictEqual({
      cycles: 2,
      toolCalls: { ok: 2, denied: 1 },
      modelMs: 10.12,
      toolMs: 5.01,
      frameworkMs: 14.87,
      usage: { inputTokens: 7, outputTokens: 3, totalTokens: 10 },
    });
  });

  // result.usage has them: a turn's or a run's metrics must not leave them out.
  it("reports reasoning and cached input tokens since a snapshot, once a model call of the run reported them", () => {
    const m = new MetricsRecorder();
    m.addUsage({ ...usage(100, 50), reasoningTokens: 3 });
    expect(m.since(MetricsRecorder.zero(), 0).usage).toStrictEqual({ ...usage(100, 50), reasoningTokens: 3 });
    const start = m.snapshot();
    m.addUsage({ ...usage(7, 3), reasoningTokens: 2, cachedInputTokens: 60 });
    expect(m.since(start, 0).usage).toStrictEqual({
      ...usage(7, 3),
      reasoningTokens: 2,
      cachedInputTokens: 60,
    });
    expect(m.since(MetricsRecorder.zero(), 0).usage).toStrictEqual(m.usage);
  });

  it("never reports negative framework time", () => {
    const m = new MetricsRecorder();
    const start = m.snapshot();
    m.modelMs = 8;
    m.toolMs = 4;
    expect(m.since(start, 10).frameworkMs).toBe(0);
    expect(m.since(start, 12).frameworkMs).toBe(0);
    expect(m.since(start, 13).frameworkMs).toBe(1);
  });
});
