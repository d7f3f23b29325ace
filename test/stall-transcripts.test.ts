import { StallDetector, type StallOptions } from "@agent-core/core";
import { describe, expect, it } from "vitest";

/*
 * Call sequences shaped like real agent transcripts, replayed through the detector the way a run
 * drives it: `reset()` at a user or follow-up message, `beginReply()` before each model reply's
 * calls, `announceCalls` with all of them, `checkCall` before each call, `checkResult` after each
 * call that ran.
 */

type Call = [name: string, args: unknown, result: string];
type Step = { user: string } | Call[];
/** Per reply, what each call became: `ok`, `ok+note` (a result nudge), `skipped` (a call nudge), `stalled`. */
type Outcome = "ok" | "ok+note" | "skipped" | "stalled";

function replay(steps: Step[], options?: StallOptions): { replies: Outcome[][]; stalled: boolean } {
  const detector = new StallDetector(options);
  const replies: Outcome[][] = [];
  let nudgedBefore = false;
  let id = 0;
  for (const step of steps) {
    if (!Array.isArray(step)) {
      detector.reset();
      nudgedBefore = false;
      continue;
    }
    detector.beginReply();
    const calls = step.map(([name, args]) => ({ id: `call-${id++}`, name, args }));
    detector.announceCalls(calls);
    const outcomes: Outcome[] = [];
    replies.push(outcomes);
    let nudged = false;
    for (const [index, call] of calls.entries()) {
      const result = (step[index] as Call)[2];
      const before = detector.checkCall(call);
      const after = before.kind === "ok" ? detector.checkResult(call, result) : before;
      if (after.kind === "stall") {
        // Whatever stopped the run, the model had seen a nudge in an earlier reply.
        expect(nudgedBefore).toBe(true);
        outcomes.push("stalled");
        return { replies, stalled: true };
      }
      nudged ||= after.kind === "nudge";
      outcomes.push(after.kind === "ok" ? "ok" : before.kind === "nudge" ? "skipped" : "ok+note");
    }
    nudgedBefore ||= nudged;
  }
  return { replies, stalled: false };
}

describe("stall detection on realistic transcripts", () => {
  it("lets a coding agent read a file, edit it, read it again and rerun the tests", () => {
    const edited = "The file was edited.";
    const { replies, stalled } = replay([
      { user: "Fix the failing test in sum.ts" },
      [["read_file", { path: "sum.ts" }, "export const sum = (a, b) => a - b;"]],
      [["run_tests", {}, "1 failed: sum adds"]],
      [["edit_file", { path: "sum.ts", old: "a - b", new: "a + b" }, edited]],
      [["read_file", { path: "sum.ts" }, "export const sum = (a, b) => a + b;"]],
      [["run_tests", {}, "1 failed: sum handles strings"]],
      [["edit_file", { path: "sum.ts", old: "a + b", new: "Number(a) + Number(b)" }, edited]],
      [["edit_file", { path: "sum.test.ts", old: "'1'", new: "1" }, edited]],
      [["run_tests", {}, "all passed"]],
      [["read_file", { path: "sum.ts" }, "export const sum = (a, b) => Number(a) + Number(b);"]],
    ]);
    expect(stalled).toBe(false);
    expect(replies.flat().every((outcome) => outcome === "ok")).toBe(true);
  });

  it("sends five emails of one reply, all answered the same, and five more in the next", () => {
    const emails = (offset: number): Call[] =>
      Array.from({ length: 5 }, (_, n) => ["send_email", { to: `user${offset + n}@example.com` }, "sent"]);
    const { replies, stalled } = replay([{ user: "Invite the team" }, emails(0), emails(5)]);
    expect(stalled).toBe(false);
    expect(replies).toEqual([Array(5).fill("ok"), Array(5).fill("ok")]);
  });

  it("stops a model polling a job status reply after reply: nudge first, then stalled", () => {
    const poll: Call[] = [["job_status", { id: "build-7" }, "running"]];
    const { replies, stalled } = replay([
      { user: "Deploy when the build is done" },
      poll,
      poll,
      poll,
      poll,
      poll,
    ]);
    expect(stalled).toBe(true);
    expect(replies).toEqual([["ok"], ["skipped"], ["stalled"]]);
  });

  it("stops a poll that sleeps longer each time but keeps getting the same status", () => {
    const poll = (seconds: number): Call[] => [
      ["sleep", { seconds }, `slept ${seconds}s`],
      ["job_status", { id: "build-7" }, "running"],
    ];
    const { replies, stalled } = replay([
      { user: "Deploy when the build is done" },
      poll(1),
      poll(2),
      poll(4),
      poll(8),
    ]);
    expect(stalled).toBe(true);
    expect(replies).toEqual([
      ["ok", "ok"],
      ["ok", "ok"],
      ["ok", "ok+note"],
      ["ok", "stalled"],
    ]);
  });

  it("runs the same web search again after a follow-up message", () => {
    const search: Call[] = [["web_search", { query: "node 20 end of life" }, "2026-04-30"]];
    const { replies, stalled } = replay([
      { user: "When does Node 20 reach end of life?" },
      search,
      { user: "Sorry, what was that date again?" },
      search,
    ]);
    expect(stalled).toBe(false);
    expect(replies).toEqual([["ok"], ["ok"]]);
  });

  it("stops a model that sends exactly the same reply of calls after a nudge", () => {
    const same: Call[] = [
      ["web_search", { query: "agent-core stall" }, "3 results"],
      ["fetch", { url: "https://example.com/a" }, "<html>a</html>"],
    ];
    const { replies, stalled } = replay([{ user: "Research stalls" }, same, same, same]);
    expect(stalled).toBe(true);
    expect(replies).toEqual([["ok", "ok"], ["skipped", "skipped"], ["stalled"]]);
  });
});
