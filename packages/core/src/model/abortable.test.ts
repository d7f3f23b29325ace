import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AbortedError } from "../errors.js";
import { AbortHook, AbortScope, sleep } from "./abortable.js";

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

/** A hook that records its name in `fired` when it fires. */
class Named extends AbortHook {
  constructor(
    readonly name: string,
    readonly fired: string[],
    readonly onFire?: () => void,
  ) {
    super();
  }

  fire(): void {
    this.fired.push(this.name);
    this.onFire?.();
  }
}

describe("AbortScope hooks", () => {
  it("fires each linked hook once, in the order added, after removals in the middle", () => {
    const fired: string[] = [];
    const scope = new AbortScope();
    const [a, b, c, d] = ["a", "b", "c", "d"].map((name) => new Named(name, fired)) as Named[];
    scope.add(a as Named);
    scope.add(b as Named);
    scope.add(c as Named);
    scope.remove(b as Named);
    scope.remove(b as Named);
    scope.add(d as Named);
    scope.add(d as Named);
    scope.abort();
    expect(fired).toEqual(["a", "c", "d"]);
  });

  it("a hook removed twice leaves the others linked, first or last", () => {
    const fired: string[] = [];
    const scope = new AbortScope();
    const first = new Named("first", fired);
    const last = new Named("last", fired);
    scope.add(first);
    scope.add(last);
    scope.remove(first);
    scope.remove(first);
    scope.abort();
    expect(fired).toEqual(["last"]);
  });

  it("does not fire a hook an earlier hook removed", () => {
    const fired: string[] = [];
    const scope = new AbortScope();
    const later = new Named("later", fired);
    scope.add(new Named("earlier", fired, () => scope.remove(later)));
    scope.add(later);
    scope.abort();
    expect(fired).toEqual(["earlier"]);
  });

  it("fires a hook added or an onAbort given after the abort at once, and only once", () => {
    const fired: string[] = [];
    const scope = new AbortScope();
    scope.abort(new Error("stop"));
    scope.abort(new Error("again"));
    scope.add(new Named("late", fired));
    const fn = vi.fn();
    const remove = scope.onAbort(fn);
    expect(fired).toEqual(["late"]);
    expect(fn).toHaveBeenCalledTimes(1);
    remove();
    expect(scope.signal.reason).toEqual(new Error("stop"));
  });

  it("lets go of the outside signal's listener once it fired", () => {
    const controller = new AbortController();
    const scope = new AbortScope(controller.signal);
    controller.abort();
    expect(scope.aborted).toBe(true);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("sleep", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("resolves after the time, or rejects at once on abort and clears its timer", async () => {
    vi.useFakeTimers();
    const scope = new AbortScope();
    const done = vi.fn();
    void sleep(100, scope).then(done);
    await vi.advanceTimersByTimeAsync(99);
    expect(done).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toHaveBeenCalledTimes(1);

    const slept = sleep(1_000, scope);
    scope.abort(new Error("stop"));
    await expect(slept).rejects.toBeInstanceOf(AbortedError);
    expect(vi.getTimerCount()).toBe(0);
  });
});
