import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { TimeoutError } from "../errors.js";
import { type StepTimeouts, StepWatchdog } from "./step-watchdog.js";

/** A watchdog started at fake time 0, and what it reported. */
function watch(limits: StepTimeouts) {
  const expired: TimeoutError[] = [];
  const watchdog = new StepWatchdog(limits, (error) => expired.push(error));
  return { watchdog, expired };
}

/** Feeds a chunk at each of the given fake times (ms since the watchdog started). */
async function chunksAt(watchdog: StepWatchdog, times: readonly number[]): Promise<void> {
  for (const at of times) {
    await vi.advanceTimersByTimeAsync(at - Date.now());
    watchdog.chunk();
  }
}

describe("StepWatchdog", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    // In this order: the spies wrap the fake setTimeout.
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it.each<[string, StepTimeouts, number[], number, TimeoutError["kind"], number]>([
    ["firstChunkMs before stepMs", { stepMs: 100, firstChunkMs: 50 }, [], 50, "firstChunk", 50],
    ["stepMs before firstChunkMs", { stepMs: 30, firstChunkMs: 50 }, [], 30, "step", 30],
    ["chunkMs before stepMs", { stepMs: 100, chunkMs: 20 }, [10], 30, "chunk", 20],
    ["stepMs before chunkMs", { stepMs: 100, chunkMs: 20 }, [10, 25, 40, 55, 70, 85], 100, "step", 100],
    ["chunkMs after firstChunkMs stopped applying", { firstChunkMs: 50, chunkMs: 20 }, [40], 60, "chunk", 20],
    ["stepMs once firstChunkMs stopped applying", { stepMs: 200, firstChunkMs: 50 }, [10], 200, "step", 200],
    ["firstChunkMs alone", { firstChunkMs: 50 }, [], 50, "firstChunk", 50],
    ["chunkMs alone, after the last chunk", { chunkMs: 20 }, [5, 15], 35, "chunk", 20],
  ])("the nearest deadline fires first: %s", async (_name, limits, chunks, at, kind, ms) => {
    const { watchdog, expired } = watch(limits);
    await chunksAt(watchdog, chunks);
    await vi.advanceTimersByTimeAsync(at - 1 - Date.now());
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toHaveLength(1);
    expect(expired[0]).toMatchObject({ code: "timeout", kind, ms });
    expect(watchdog.expired).toBe(expired[0]);
    // Expired for good: nothing is left armed, a late chunk does not re-arm it.
    watchdog.chunk();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("never cuts a healthy stream with chunkMs, however long it runs", async () => {
    const { watchdog, expired } = watch({ chunkMs: 20 });
    const times = Array.from({ length: 200 }, (_, i) => (i + 1) * 15);
    await chunksAt(watchdog, times);
    expect(Date.now()).toBe(3000);
    expect(expired).toEqual([]);
    watchdog.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("arms no timer for chunkMs alone until the first chunk, then arms it", async () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const { watchdog, expired } = watch({ chunkMs: 20 });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(spy).not.toHaveBeenCalled();
    expect(expired).toEqual([]);

    watchdog.chunk();
    expect(vi.getTimerCount()).toBe(1);
    expect(spy).toHaveBeenLastCalledWith(expect.any(Function), 20);
    await vi.advanceTimersByTimeAsync(20);
    expect(expired[0]).toMatchObject({ kind: "chunk", ms: 20 });
  });

  it("disarms firstChunkMs alone once the first chunk arrived", async () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const { watchdog, expired } = watch({ firstChunkMs: 50 });
    await chunksAt(watchdog, [10]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(expired).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    expect(spy.mock.calls.map(([, delay]) => delay)).toEqual([50]);
  });

  it("on a tie, reports the first of step, firstChunk, chunk", async () => {
    const first = watch({ stepMs: 50, firstChunkMs: 50 });
    await vi.advanceTimersByTimeAsync(50);
    expect(first.expired[0]).toMatchObject({ kind: "step", ms: 50 });
    first.watchdog.stop();
    // Started at 50: a chunk at 80 with chunkMs 20 is due at 100, with stepMs.
    const second = watch({ stepMs: 50, chunkMs: 20 });
    await chunksAt(second.watchdog, [80]);
    await vi.advanceTimersByTimeAsync(20);
    expect(second.expired[0]).toMatchObject({ kind: "step", ms: 50 });
  });

  it("re-arms no timer per chunk: a fast stream costs a timer per chunkMs, not per chunk", async () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const { watchdog, expired } = watch({ chunkMs: 20 });
    await chunksAt(
      watchdog,
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    expect(expired).toEqual([]);
    expect(spy.mock.calls.length).toBeLessThanOrEqual(12);
    watchdog.stop();
  });

  it("is needed only when some limit is set", () => {
    expect(StepWatchdog.needed(undefined)).toBe(false);
    expect(StepWatchdog.needed({})).toBe(false);
    expect(StepWatchdog.needed({ stepMs: undefined, chunkMs: undefined })).toBe(false);
    expect(StepWatchdog.needed({ chunkMs: 5 })).toBe(true);
    expect(StepWatchdog.needed({ firstChunkMs: 5 })).toBe(true);
    expect(StepWatchdog.needed({ stepMs: 5 })).toBe(true);
  });

  it("stop() clears the timer", () => {
    const { watchdog } = watch({ stepMs: 100, firstChunkMs: 50, chunkMs: 20 });
    expect(vi.getTimerCount()).toBe(1);
    watchdog.stop();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("StepWatchdog with Node's timers", () => {
  it.each<[string, StepTimeouts, boolean]>([
    ["chunkMs alone, before the first chunk", { chunkMs: 1000 }, false],
    ["firstChunkMs alone, after the first chunk", { firstChunkMs: 1 }, true],
    ["a limit past the longest timer Node supports", { stepMs: 2 ** 31 }, false],
  ])("prints no TimeoutOverflowWarning: %s", async (_name, limits, chunk) => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const watchdog = new StepWatchdog(limits, () => {});
      if (chunk) watchdog.chunk();
      // Past firstChunkMs, so its timer has fired and re-armed (or not); warnings come on nextTick.
      await new Promise((resolve) => setTimeout(resolve, 5));
      watchdog.stop();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
  });
});
