import { describe, expect, it } from "vitest";
import { canonicalJson, StallDetector } from "./stall-detector.js";

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

describe("canonicalJson", () => {
  it("gives the same text whether or not the keys came sorted, skipping undefined like JSON does", () => {
    expect(canonicalJson({ a: 1, b: { c: [1, { d: 2, e: null }] } })).toBe(
      '{"a":1,"b":{"c":[1,{"d":2,"e":null}]}}',
    );
    expect(canonicalJson({ b: { e: null, d: 2 }, a: 1 })).toBe('{"a":1,"b":{"d":2,"e":null}}');
    expect(canonicalJson({ a: 1, z: undefined })).toBe('{"a":1}');
    expect(canonicalJson({ z: undefined, a: 1 })).toBe('{"a":1}');
    expect(canonicalJson("x")).toBe('"x"');
  });

  it("sorts keys at every depth and keeps arrays in order", () => {
    expect(canonicalJson({ b: [2, { d: 1, c: 0 }], a: null })).toBe('{"a":null,"b":[2,{"c":0,"d":1}]}');
  });
});
