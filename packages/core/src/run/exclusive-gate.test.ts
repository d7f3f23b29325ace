import { describe, expect, it } from "vitest";
import { ExclusiveGate } from "./exclusive-gate.js";

/** Work that logs its start and ends when told to. */
function task(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const work = async () => {
    log.push(`start ${name}`);
    await done;
    log.push(`end ${name}`);
    return name;
  };
  return { work, finish };
}

/** Lets every queued promise reaction run. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

describe("ExclusiveGate", () => {
  it("runs shared work side by side", async () => {
    const gate = new ExclusiveGate();
    const log: string[] = [];
    const [a, b] = [task(log, "a"), task(log, "b")];
    const running = [gate.shared(a.work), gate.shared(b.work)];
    await drain();
    expect(log).toEqual(["start a", "start b"]);
    b.finish();
    a.finish();
    expect(await Promise.all(running)).toEqual(["a", "b"]);
    expect(log).toEqual(["start a", "start b", "end b", "end a"]);
  });

  it("runs exclusive work alone: after the running work, before the work that comes later", async () => {
    const gate = new ExclusiveGate();
    const log: string[] = [];
    const [a, x, b] = [task(log, "a"), task(log, "x"), task(log, "b")];
    const running = [gate.shared(a.work), gate.exclusive(x.work), gate.shared(b.work)];
    await drain();
    expect(log).toEqual(["start a"]);
    a.finish();
    await drain();
    expect(log).toEqual(["start a", "end a", "start x"]);
    x.finish();
    await drain();
    expect(log).toEqual(["start a", "end a", "start x", "end x", "start b"]);
    b.finish();
    expect(await Promise.all(running)).toEqual(["a", "x", "b"]);
  });

  it("does not let later shared work starve queued exclusive work", async () => {
    const gate = new ExclusiveGate();
    const log: string[] = [];
    const a = task(log, "a");
    const x = task(log, "x");
    const first = gate.shared(a.work);
    const exclusive = gate.exclusive(x.work);
    // Shared work keeps arriving while `a` runs: none of it may start before `x`.
    const later = ["b", "c"].map((name) => task(log, name));
    const shared = later.map((t) => gate.shared(t.work));
    await drain();
    expect(log).toEqual(["start a"]);
    a.finish();
    await drain();
    expect(log).toEqual(["start a", "end a", "start x"]);
    x.finish();
    await drain();
    expect(log.slice(3)).toEqual(["end x", "start b", "start c"]);
    for (const t of later) t.finish();
    await Promise.all([first, exclusive, ...shared]);
  });

  it("runs two exclusive works one after the other", async () => {
    const gate = new ExclusiveGate();
    const log: string[] = [];
    const [x, y] = [task(log, "x"), task(log, "y")];
    const running = [gate.exclusive(x.work), gate.exclusive(y.work)];
    await drain();
    expect(log).toEqual(["start x"]);
    x.finish();
    y.finish();
    await Promise.all(running);
    expect(log).toEqual(["start x", "end x", "start y", "end y"]);
  });

  it("opens again after work that throws", async () => {
    const gate = new ExclusiveGate();
    await expect(
      gate.exclusive(() => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    await expect(gate.shared(() => Promise.reject(new Error("bang")))).rejects.toThrow("bang");
    expect(await gate.shared(() => "ok")).toBe("ok");
  });
});
