import { describe, expect, it } from "vitest";
import { canonicalHash } from "./canonical-json.js";
import { StallDetector } from "./stall-detector.js";

const call = (args: unknown, name = "search") => ({ id: "x", name, args });

describe("StallDetector", () => {
  it("nudges on the second identical call (keys in any order), then stalls on the next", () => {
    const detector = new StallDetector();
    expect(detector.checkCall(call({ q: "a", page: 1 })).kind).toBe("ok");
    expect(detector.checkCall(call({ q: "b", page: 1 })).kind).toBe("ok");
    const nudge = detector.checkCall(call({ page: 1, q: "a" }));
    expect(nudge).toMatchObject({
      kind: "nudge",
      message: expect.stringContaining('You already called "search"'),
    });
    expect(detector.checkCall(call({ q: "a", page: 1 }))).toMatchObject({ kind: "stall" });
    expect(detector.checkCall(call({ q: "a", page: 1 }, "other")).kind).toBe("ok");
  });

  it("nudges on the third identical result in a row, stalls on the fourth, and resets on a new result", () => {
    const detector = new StallDetector();
    expect(detector.checkResult(call({}), "pending").kind).toBe("ok");
    expect(detector.checkResult(call({}), "pending").kind).toBe("ok");
    expect(detector.checkResult(call({}), "pending")).toMatchObject({
      kind: "nudge",
      message: expect.stringContaining("3 times in a row"),
    });
    expect(detector.checkResult(call({}), "pending")).toMatchObject({ kind: "stall" });
    expect(detector.checkResult(call({}), "done").kind).toBe("ok");
    expect(detector.checkResult(call({}), "pending").kind).toBe("ok");
  });

  it("tells apart different arguments whose hashes collide, and still counts each one's repeats", () => {
    // Deeper than the hash looks, these differ only in their leaves: same hash, different calls.
    const nested = (leaf: number) => ({ a: { b: { c: { d: { e: { f: { g: { h: { i: leaf } } } } } } } } });
    expect(canonicalHash(nested(1))).toBe(canonicalHash(nested(2)));
    const detector = new StallDetector();
    expect(detector.checkCall(call(nested(1))).kind).toBe("ok");
    expect(detector.checkCall(call(nested(2))).kind).toBe("ok");
    expect(detector.checkCall(call(nested(3))).kind).toBe("ok");
    expect(detector.checkCall(call(nested(2))).kind).toBe("nudge");
    expect(detector.checkCall(call(nested(1))).kind).toBe("nudge");
    expect(detector.checkCall(call(nested(2))).kind).toBe("stall");
  });

  it("takes its thresholds from options and rejects meaningless ones", () => {
    const detector = new StallDetector({ repeatedCalls: 3, repeatedResults: 2 });
    expect(detector.checkCall(call(1)).kind).toBe("ok");
    expect(detector.checkCall(call(1)).kind).toBe("ok");
    expect(detector.checkCall(call(1)).kind).toBe("nudge");
    expect(detector.checkResult(call(1), "r").kind).toBe("ok");
    expect(detector.checkResult(call(1), "r").kind).toBe("nudge");
    expect(() => new StallDetector({ repeatedCalls: 1 })).toThrow(
      "stall.repeatedCalls must be a whole number >= 2, got 1.",
    );
  });
});
