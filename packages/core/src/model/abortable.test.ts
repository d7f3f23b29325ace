import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AbortScope } from "./abortable.js";

describe("AbortScope linked to an outside signal", () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  beforeEach(() => {
    warnings.length = 0;
    process.on("warning", onWarning);
  });
  afterEach(() => {
    process.off("warning", onWarning);
  });

  it("many scopes on one signal share one listener: no MaxListenersExceededWarning, and all abort", async () => {
    const controller = new AbortController();
    const scopes = Array.from({ length: 50 }, () => new AbortScope(controller.signal));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    // Node emits its warnings on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);

    controller.abort("stop");
    for (const scope of scopes) {
      expect(scope.aborted).toBe(true);
      expect(scope.signal.reason).toBe("stop");
    }
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("a disposed scope is not aborted; the listener goes with the last scope", () => {
    const controller = new AbortController();
    const scopes = Array.from({ length: 50 }, () => new AbortScope(controller.signal));
    const disposed = scopes.filter((_, index) => index % 2 === 0);
    for (const scope of disposed) scope.dispose();
    controller.abort();
    expect(scopes.map((scope) => scope.aborted)).toEqual(scopes.map((_, index) => index % 2 === 1));

    const other = new AbortController();
    const pair = [new AbortScope(other.signal), new AbortScope(other.signal)];
    pair[0]?.dispose();
    expect(getEventListeners(other.signal, "abort")).toHaveLength(1);
    pair[1]?.abort("own reason");
    expect(getEventListeners(other.signal, "abort")).toHaveLength(0);
  });

  it("a scope linked after the others let go listens again", () => {
    const controller = new AbortController();
    new AbortScope(controller.signal).dispose();
    const later = new AbortScope(controller.signal);
    controller.abort("late");
    expect(later.aborted).toBe(true);
    expect(later.signal.reason).toBe("late");
  });

  it("a scope disposed by an earlier scope's abort hook is not aborted", () => {
    const controller = new AbortController();
    const first = new AbortScope(controller.signal);
    const second = new AbortScope(controller.signal);
    first.onAbort(() => second.dispose());
    controller.abort();
    expect(first.aborted).toBe(true);
    expect(second.aborted).toBe(false);
  });

  it("a hook that throws is reported as uncaught and does not keep the other scopes from aborting", () => {
    const reported: (() => void)[] = [];
    vi.spyOn(globalThis, "queueMicrotask").mockImplementation((task) => reported.push(task));
    const controller = new AbortController();
    const failing = new AbortScope(controller.signal);
    const other = new AbortScope(controller.signal);
    const bug = new Error("hook bug");
    failing.onAbort(() => {
      throw bug;
    });
    try {
      controller.abort();
    } finally {
      vi.restoreAllMocks();
    }
    expect(other.aborted).toBe(true);
    expect(reported).toHaveLength(1);
    expect(() => reported[0]?.()).toThrow(bug);
  });

  it("a signal aborted already aborts the scope at once", () => {
    const scope = new AbortScope(AbortSignal.abort("before"));
    expect(scope.aborted).toBe(true);
    expect(scope.signal.reason).toBe("before");
  });
});
