import { describe, expect, it } from "vitest";
import type { ToolCall } from "../messages.js";
import { canonicalHash } from "./canonical-json.js";
import { StallDetector } from "./stall-detector.js";

let ids = 0;
const call = (args: unknown, name = "search") => ({ id: `c${ids++}`, name, args });

/**
 * One model reply run the way a tool batch runs it: its calls announced, then each call checked,
 * then its result if it ran.
 */
function reply(detector: StallDetector, ...calls: [name: string, args: unknown, result: string][]): string[] {
  detector.beginReply();
  const made = calls.map(([name, args]) => call(args, name));
  detector.announceCalls(made);
  return calls.map(([, , result], index) => {
    const before = detector.checkCall(made[index] as ToolCall);
    return before.kind === "ok" ? detector.checkResult(made[index] as ToolCall, result).kind : before.kind;
  });
}

describe("StallDetector", () => {
  it("never holds the calls of one reply against each other, as calls or as results", () => {
    const detector = new StallDetector();
    const emails = ["ann", "bob", "cy", "dee", "eve"].map((to): [string, unknown, string] => [
      "send_email",
      { to },
      "sent",
    ]);
    expect(reply(detector, ...emails)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(reply(detector, ["search", { q: "a" }, "r"], ["search", { q: "a" }, "r"])).toEqual(["ok", "ok"]);
    // A later reply is compared with this one.
    expect(reply(detector, ["search", { q: "a" }, "r"])).toEqual(["nudge"]);
    // The same call twice in a reply adds one to its streak of results, not two.
    const twice = (n: number) =>
      reply(
        detector,
        ["sleep", { s: n }, "slept"],
        ["status", { job: 1 }, "pending"],
        ["status", { job: 1 }, "pending"],
      );
    expect(twice(1)).toEqual(["ok", "ok", "ok"]);
    expect(twice(2)).toEqual(["ok", "ok", "ok"]);
  });

  it("nudges a call repeated in a later reply (keys in any order), and stalls only in a reply after the nudge", () => {
    const detector = new StallDetector();
    detector.beginReply();
    expect(detector.checkCall(call({ q: "a", page: 1 })).kind).toBe("ok");
    detector.beginReply();
    expect(detector.checkCall(call({ page: 1, q: "a" }))).toMatchObject({
      kind: "nudge",
      message: expect.stringContaining('You already called "search"'),
    });
    // The same call again in the nudge's own reply: the model has not seen the nudge yet.
    expect(detector.checkCall(call({ q: "a", page: 1 })).kind).toBe("nudge");
    detector.beginReply();
    expect(detector.checkCall(call({ q: "a", page: 1 }))).toMatchObject({
      kind: "stall",
      message: '"search" was called again with the same arguments after a warning.',
    });
    expect(detector.checkCall(call({ q: "a", page: 1 }, "other")).kind).toBe("ok");
  });

  it("counts calls only since the last call never made before: read, write, read is no repeat", () => {
    const detector = new StallDetector();
    expect(reply(detector, ["read", { path: "a" }, "v1"])).toEqual(["ok"]);
    expect(reply(detector, ["write", { path: "a", text: "v2" }, "ok"])).toEqual(["ok"]);
    expect(reply(detector, ["read", { path: "a" }, "v2"])).toEqual(["ok"]);
    // Nothing new since that read: reading again is a repeat.
    expect(reply(detector, ["read", { path: "a" }, "v2"])).toEqual(["nudge"]);
  });

  it("lets a new call make the calls of earlier replies stale, not those of its own reply", () => {
    const detector = new StallDetector();
    reply(detector, ["read", { path: "a" }, "v1"]);
    expect(
      reply(detector, ["write", { path: "a", text: "v2" }, "ok"], ["read", { path: "a" }, "v2"]),
    ).toEqual(["ok", "ok"]);
    expect(reply(detector, ["read", { path: "a" }, "v2"])).toEqual(["nudge"]);
    // The same reply of calls twice: each call was made in the reply before, nothing new since.
    reply(detector, ["search", { q: "x" }, "rx"], ["fetch", { url: "y" }, "ry"]);
    expect(reply(detector, ["search", { q: "x" }, "rx"], ["fetch", { url: "y" }, "ry"])).toEqual([
      "nudge",
      "nudge",
    ]);
  });

  it("judges a reply that makes a new call as a whole: its repeat runs whether the new call is first or last", () => {
    for (const order of [
      [8, 7],
      [7, 8],
    ]) {
      const detector = new StallDetector();
      expect(reply(detector, ["lookup", { id: 7 }, "record 7"])).toEqual(["ok"]);
      expect(
        reply(detector, ...order.map((id): [string, unknown, string] => ["lookup", { id }, `record ${id}`])),
      ).toEqual(["ok", "ok"]);
      // Nothing new since: the same reply again is a repeat, in either order.
      expect(reply(detector, ["lookup", { id: 7 }, "record 7"])).toEqual(["nudge"]);
    }
  });

  it("judges a reply as a whole by canonical text, not by hash, when hashes collide", () => {
    const nested = (leaf: number) => ({ a: { b: { c: { d: { e: { f: { g: { h: { i: leaf } } } } } } } } });
    const detector = new StallDetector();
    expect(reply(detector, ["s", nested(1), "1"])).toEqual(["ok"]);
    // Its hash is the first one's, its arguments are not: a new call, so the repeat before it runs.
    expect(reply(detector, ["s", nested(1), "1"], ["s", nested(2), "2"])).toEqual(["ok", "ok"]);
    // Both made in the reply before, found down the chain of colliding calls: nothing new.
    expect(reply(detector, ["s", nested(2), "2"], ["s", nested(1), "1"])).toEqual(["nudge", "nudge"]);
  });

  it("still catches a cycle of calls that were all made before", () => {
    const detector = new StallDetector();
    expect(reply(detector, ["search", { q: "a" }, "ra"])).toEqual(["ok"]);
    expect(reply(detector, ["search", { q: "b" }, "rb"])).toEqual(["ok"]);
    expect(reply(detector, ["search", { q: "a" }, "ra"])).toEqual(["ok"]);
    expect(reply(detector, ["search", { q: "b" }, "rb"])).toEqual(["nudge"]);
    expect(reply(detector, ["search", { q: "a" }, "ra"])).toEqual(["nudge"]);
    expect(reply(detector, ["search", { q: "b" }, "rb"])).toEqual(["stall"]);
  });

  it("starts again at reset(): repeats and pending nudges before it no longer count", () => {
    const detector = new StallDetector();
    reply(detector, ["search", { q: "a" }, "r"]);
    expect(reply(detector, ["search", { q: "a" }, "r"])).toEqual(["nudge"]);
    detector.reset();
    expect(reply(detector, ["search", { q: "a" }, "r"])).toEqual(["ok"]);
    expect(reply(detector, ["search", { q: "a" }, "r"])).toEqual(["nudge"]);
    const poll: [string, unknown, string] = ["status", { job: 1 }, "pending"];
    const other = (n: number): [string, unknown, string] => ["sleep", { s: n }, `slept ${n}`];
    reply(detector, other(1), poll);
    reply(detector, other(2), poll);
    detector.reset();
    expect(reply(detector, other(3), poll)).toEqual(["ok", "ok"]);
    expect(reply(detector, other(4), poll)).toEqual(["ok", "ok"]);
  });

  it("nudges a call returning the same result in the third reply in a row, and stalls in the one after", () => {
    const detector = new StallDetector();
    // A new call before it in every reply keeps the repeated-call rule quiet: only the result repeats.
    const step = (n: number) =>
      reply(detector, ["sleep", { s: n }, "slept"], ["status", { job: 1 }, "pending"]);
    expect(step(1)).toEqual(["ok", "ok"]);
    expect(step(2)).toEqual(["ok", "ok"]);
    detector.beginReply();
    detector.checkCall(call({ s: 3 }, "sleep"));
    const third = call({ job: 1 }, "status");
    expect(detector.checkCall(third).kind).toBe("ok");
    expect(detector.checkResult(third, "pending")).toMatchObject({
      kind: "nudge",
      message: expect.stringContaining('"status" returned the same result 3 times in a row'),
    });
    // Its twin in the same reply: still the nudge, never a stall before the model saw it.
    const twin = call({ job: 1 }, "status");
    detector.checkCall(twin);
    expect(detector.checkResult(twin, "pending").kind).toBe("nudge");
    expect(step(4)).toEqual(["ok", "stall"]);
  });

  it("counts results per call: different calls returning the same text never repeat, a new result starts again", () => {
    const detector = new StallDetector();
    for (let n = 0; n < 6; n++) expect(reply(detector, ["send_email", { to: n }, "sent"])).toEqual(["ok"]);
    const step = (n: number, result: string) =>
      reply(detector, ["sleep", { s: n }, "slept"], ["status", { job: 1 }, result])[1];
    expect([step(1, "pending"), step(2, "pending"), step(3, "running"), step(4, "running")]).toEqual([
      "ok",
      "ok",
      "ok",
      "ok",
    ]);
    expect(step(5, "running")).toBe("nudge");
  });

  it("ignores a result whose call it did not check in this reply", () => {
    const detector = new StallDetector({ repeatedResults: 2 });
    const lone = call({});
    expect(detector.checkResult(lone, "r").kind).toBe("ok");
    expect(detector.checkResult(lone, "r").kind).toBe("ok");
  });

  it("tells apart different arguments whose hashes collide, and still counts each one's repeats", () => {
    // Deeper than the hash looks, these differ only in their leaves: same hash, different calls.
    const nested = (leaf: number) => ({ a: { b: { c: { d: { e: { f: { g: { h: { i: leaf } } } } } } } } });
    expect(canonicalHash(nested(1))).toBe(canonicalHash(nested(2)));
    const detector = new StallDetector();
    expect(reply(detector, ["s", nested(1), "1"], ["s", nested(2), "2"], ["s", nested(3), "3"])).toEqual([
      "ok",
      "ok",
      "ok",
    ]);
    expect(reply(detector, ["s", nested(2), "2"], ["s", nested(1), "1"])).toEqual(["nudge", "nudge"]);
    expect(reply(detector, ["s", nested(2), "2"])).toEqual(["stall"]);
  });

  it("takes a call whose hash collides with an earlier one's for a new call, in a later reply too", () => {
    const nested = (leaf: number) => ({ a: { b: { c: { d: { e: { f: { g: { h: { i: leaf } } } } } } } } });
    const detector = new StallDetector();
    expect(reply(detector, ["s", nested(1), "1"])).toEqual(["ok"]);
    expect(reply(detector, ["s", nested(2), "2"])).toEqual(["ok"]);
    expect(reply(detector, ["s", nested(3), "3"])).toEqual(["ok"]);
    // Found down the chain of colliding calls: the third one, made again.
    expect(reply(detector, ["s", nested(3), "3"])).toEqual(["nudge"]);
  });

  it("forgets a nudge once a new call made the earlier calls stale: read, read, write, read goes on", () => {
    const detector = new StallDetector();
    expect(reply(detector, ["read", { path: "a.ts" }, "v1"])).toEqual(["ok"]);
    expect(reply(detector, ["read", { path: "a.ts" }, "v1"])).toEqual(["nudge"]);
    expect(reply(detector, ["write", { path: "a.ts", text: "v2" }, "ok"])).toEqual(["ok"]);
    expect(reply(detector, ["read", { path: "a.ts" }, "v2"])).toEqual(["ok"]);
    // The streak starts again from there: once more is a repeat, nudged before it stalls.
    expect(reply(detector, ["read", { path: "a.ts" }, "v2"])).toEqual(["nudge"]);
  });

  it("takes arguments nested past 1,000 levels for a call never made before, without overflowing the stack", () => {
    const nested = (levels: number): unknown => JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`);
    const detector = new StallDetector();
    // 1,000 levels with the object around them: still compared, so the repeat is caught.
    expect(reply(detector, ["s", { d: nested(999) }, "r"])).toEqual(["ok"]);
    expect(reply(detector, ["s", { d: nested(999) }, "r"])).toEqual(["nudge"]);
    for (const levels of [1000, 5000]) {
      expect(reply(detector, ["s", { d: nested(levels) }, "r"])).toEqual(["ok"]);
      expect(reply(detector, ["s", { d: nested(levels) }, "r"], ["s", { d: nested(levels) }, "r"])).toEqual([
        "ok",
        "ok",
      ]);
      // As a new call it excuses the repeat beside it.
      expect(reply(detector, ["t", { x: levels }, "r"])).toEqual(["ok"]);
      expect(reply(detector, ["t", { x: levels }, "r"], ["s", { d: nested(levels) }, "r"])).toEqual([
        "ok",
        "ok",
      ]);
    }
  });

  it("takes its thresholds from options and rejects meaningless ones", () => {
    const detector = new StallDetector({ repeatedCalls: 3, repeatedResults: 2 });
    expect(reply(detector, ["s", 1, "r"])).toEqual(["ok"]);
    expect(reply(detector, ["s", 1, "r"])).toEqual(["nudge"]); // the result
    expect(reply(detector, ["s", 1, "r"])).toEqual(["nudge"]); // the call
    expect(() => new StallDetector({ repeatedCalls: 1 })).toThrow(
      "stall.repeatedCalls must be a whole number >= 2, got 1.",
    );
    expect(() => new StallDetector({ repeatedResults: 2.5 })).toThrow(
      "stall.repeatedResults must be a whole number >= 2, got 2.5.",
    );
    // A number given as text is shown as text: "got 2" would read as a valid value.
    expect(() => new StallDetector({ repeatedCalls: "2" as never })).toThrow(
      'stall.repeatedCalls must be a whole number >= 2, got "2".',
    );
  });
});
