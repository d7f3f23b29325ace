import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { FatalToolError, StallError } from "../errors.js";
import type { AgentMessage, ToolCall, ToolResultMessage } from "../messages.js";
import type { ExecuteToolsOptions } from "../orchestrator/contract.js";
import { defineTool, type Tool } from "../tools/define-tool.js";
import { SKIPPED_BY_STEERING, toolResult } from "../tools/execute-tool.js";
import { ToolRegistry } from "../tools/registry.js";
import { StallDetector } from "../tools/stall-detector.js";
import { type BatchOutcome, type BatchSetup, CUT_OFF } from "./batch-contract.js";
import type { AgentHooks } from "./hooks.js";
import { MessageInbox, MessageQueue } from "./message-queue.js";
import {
  assistantCalling,
  call,
  echoTool,
  manualTool,
  type RunHarness,
  runHarness,
  trace,
} from "./run-fixtures.test-support.js";
import type { ApprovalDecision } from "./suspension.js";
import { ToolBatch } from "./tool-batch.js";

/** A harness whose registry holds `tools`, with the batch setup built from it. */
function harnessWith(tools: Tool[], overrides: Partial<BatchSetup> = {}) {
  const h = runHarness({ tools: new ToolRegistry(tools) });
  const setup: BatchSetup = {
    runId: h.setup.runId,
    tools: h.setup.tools,
    runner: h.setup.toolRunner,
    clientTools: h.setup.clientTools,
    suspendForClientTools: false,
    scope: h.setup.abortScope,
    graceMs: 100,
    timeouts: {},
    hooks: {},
    steering: h.setup.steering,
    stall: undefined,
    cutOffCalls: new Set(),
    events: h.publisher,
    transcript: h.transcript,
    ...overrides,
  };
  return { ...h, batchSetup: setup };
}

/** A batch of `calls`, made by an assistant message now in the history (so the calls are open). */
function batchOf(
  h: RunHarness & { batchSetup: BatchSetup },
  calls: ToolCall[],
  options: ExecuteToolsOptions = {},
): ToolBatch {
  h.transcript.append(assistantCalling(calls));
  return new ToolBatch(h.batchSetup, calls, options);
}

function done(outcome: BatchOutcome) {
  if (outcome.kind !== "done") throw new Error(`expected a finished batch, got ${outcome.kind}`);
  return outcome;
}

/** Each result as `id status content` ("none" for a call without one: the array may have holes). */
const shape = (results: readonly (ToolResultMessage | undefined)[]) =>
  Array.from(results, (r) => (r ? `${r.toolCallId} ${r.status} ${r.content}` : "none"));

function resultsIn(history: readonly AgentMessage[]): ToolResultMessage[] {
  return history.filter((m): m is ToolResultMessage => m.role === "toolResult");
}

/** Lets every settled promise run its callbacks. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("ToolBatch order and concurrency", () => {
  it("runs synchronous tools one after the other and completes synchronously", () => {
    const h = harnessWith([echoTool]);
    const outcome = batchOf(h, [call("a"), call("b"), call("c")]).run(1);
    expect(outcome).not.toBeInstanceOf(Promise);
    expect(shape(done(outcome as BatchOutcome).results)).toEqual(["a ok a", "b ok b", "c ok c"]);
    expect(trace(h.events)).toEqual([
      "tool_call:a",
      "tool_result:a",
      "tool_call:b",
      "tool_result:b",
      "tool_call:c",
      "tool_result:c",
    ]);
    expect(shape(resultsIn(h.keeper.messages))).toEqual(["a ok a", "b ok b", "c ok c"]);
  });

  it("in order, starts an asynchronous call only when the one before it has ended", async () => {
    const slow = manualTool("slow");
    const h = harnessWith([slow.tool]);
    const running = batchOf(h, [call("s1", "slow"), call("s2", "slow")]).run(1);
    expect(running).toBeInstanceOf(Promise);
    expect(slow.started).toEqual(["s1"]);
    slow.release("s1");
    await flush();
    expect(slow.started).toEqual(["s1", "s2"]);
    slow.release("s2");
    expect(shape(done(await running).results)).toEqual(["s1 ok done s1", "s2 ok done s2"]);
  });

  it("at once: events in completion order, results (and the history) in call order", async () => {
    const slow = manualTool("slow");
    const h = harnessWith([slow.tool]);
    const running = batchOf(h, [call("s1", "slow"), call("s2", "slow"), call("s3", "slow")]).run(3);
    expect(slow.started).toEqual(["s1", "s2", "s3"]);
    for (const id of ["s3", "s1", "s2"]) {
      slow.release(id);
      await flush();
    }
    const outcome = done(await running);
    expect(trace(h.events)).toEqual([
      "tool_call:s1",
      "tool_call:s2",
      "tool_call:s3",
      "tool_result:s3",
      "tool_result:s1",
      "tool_result:s2",
    ]);
    expect(shape(outcome.results)).toEqual(["s1 ok done s1", "s2 ok done s2", "s3 ok done s3"]);
    expect(shape(resultsIn(h.keeper.messages))).toEqual(["s1 ok done s1", "s2 ok done s2", "s3 ok done s3"]);
  });

  it("runs a sequential tool alone: after the running calls, and before any later one starts", async () => {
    const shared = manualTool("shared");
    const solo = manualTool("solo", { sequential: true });
    const h = harnessWith([shared.tool, solo.tool]);
    const calls = [call("p1", "shared"), call("x", "solo"), call("p2", "shared")];
    const running = batchOf(h, calls).run(3);
    await flush();
    expect([...shared.started, ...solo.started]).toEqual(["p1"]);
    shared.release("p1");
    await flush();
    expect(solo.started).toEqual(["x"]);
    expect(shared.started).toEqual(["p1"]);
    solo.release("x");
    await flush();
    expect(shared.started).toEqual(["p1", "p2"]);
    shared.release("p2");
    expect(shape(done(await running).results)).toEqual(["p1 ok done p1", "x ok done x", "p2 ok done p2"]);
  });
});

describe("ToolBatch fatal errors", () => {
  const fatalTool = defineTool({
    name: "fatal",
    description: "Fails fatally.",
    inputSchema: z.object({ text: z.string() }),
    execute: (): string => {
      throw new FatalToolError("disk gone");
    },
  });

  it("a synchronous throw skips the calls after it; the run's scope is not aborted", () => {
    const h = harnessWith([echoTool, fatalTool]);
    const outcome = batchOf(h, [call("a"), call("f", "fatal"), call("c")]).run(1) as BatchOutcome;
    expect(shape(done(outcome).results)).toEqual([
      "a ok a",
      "f error disk gone",
      'c skipped not run: "fatal" failed fatally',
    ]);
    expect(h.setup.abortScope.aborted).toBe(false);
  });

  it("an asynchronous throw aborts the running siblings and skips the queued calls", async () => {
    const slow = manualTool("slow");
    const doomed = manualTool("doomed");
    const h = harnessWith([echoTool, slow.tool, doomed.tool]);
    const running = batchOf(h, [call("s", "slow"), call("d", "doomed"), call("c")]).run(2);
    expect([...slow.started, ...doomed.started]).toEqual(["s", "d"]);
    doomed.fail("d", new FatalToolError("disk gone"));
    await flush();
    expect(slow.aborted).toEqual(["s"]);
    const outcome = done(await running);
    expect(shape(outcome.results)).toEqual([
      's aborted "doomed" failed fatally',
      "d error disk gone",
      'c skipped not run: "doomed" failed fatally',
    ]);
    expect(h.setup.abortScope.aborted).toBe(false);
    expect(trace(h.events)).toContain("tool_result:c");
  });
});

describe("ToolBatch steering", () => {
  /** A tool that queues a steering message while it runs. */
  const steererOf = (queue: MessageQueue) =>
    defineTool({
      name: "steerer",
      description: "Queues steering.",
      inputSchema: z.object({ text: z.string() }),
      execute: ({ text }) => {
        queue.push("change of plan", 5);
        return text;
      },
    });

  it("skips the rest after a tool once steering is queued, and returns the steering", () => {
    const h = harnessWith([]);
    h.batchSetup.tools.register(steererOf(h.steeringQueue));
    h.batchSetup.tools.register(echoTool);
    const outcome = done(batchOf(h, [call("a", "steerer"), call("b"), call("c")]).run(1) as BatchOutcome);
    expect(shape(outcome.results)).toEqual([
      "a ok a",
      `b skipped ${SKIPPED_BY_STEERING}`,
      `c skipped ${SKIPPED_BY_STEERING}`,
    ]);
    expect(outcome.steering).toEqual([{ role: "user", content: "change of plan", timestamp: 5 }]);
    // Returned, not recorded: the caller puts it into the history.
    expect(h.keeper.messages.some((m) => m.role === "user")).toBe(false);
  });

  it("takes steering from an asynchronous getSteeringMessages too", async () => {
    const asked = vi.fn(() => Promise.resolve(["stop now"]));
    const h = harnessWith([echoTool]);
    const steering = new MessageInbox(new MessageQueue(), asked, h.clock);
    const batch = new ToolBatch({ ...h.batchSetup, steering }, [call("a"), call("b")], {});
    h.transcript.append(assistantCalling([call("a"), call("b")]));
    const outcome = done(await batch.run(1));
    expect(shape(outcome.results)).toEqual(["a ok a", `b skipped ${SKIPPED_BY_STEERING}`]);
    expect(outcome.steering).toEqual([{ role: "user", content: "stop now", timestamp: h.clock.now() }]);
    expect(asked).toHaveBeenCalledTimes(1);
  });

  it("with interruptOnSteering: false, runs every call and leaves the steering queued", () => {
    const h = harnessWith([]);
    h.batchSetup.tools.register(steererOf(h.steeringQueue));
    h.batchSetup.tools.register(echoTool);
    const batch = batchOf(h, [call("a", "steerer"), call("b")], { interruptOnSteering: false });
    const outcome = done(batch.run(1) as BatchOutcome);
    expect(shape(outcome.results)).toEqual(["a ok a", "b ok b"]);
    expect(outcome.steering).toEqual([]);
    expect(h.steeringQueue.size).toBe(1);
  });
});

describe("ToolBatch approvals and verdicts", () => {
  const needsApprovalFor =
    (id: string): AgentHooks["beforeToolCall"] =>
    ({ call }) =>
      call.id === id ? { requireApproval: true, reason: "it writes" } : undefined;

  it("returns a suspension when a call needs approval: nothing runs, is recorded or published", async () => {
    const h = harnessWith([echoTool], { hooks: { beforeToolCall: needsApprovalFor("b") } });
    const calls = [call("a"), call("b")];
    const outcome = await batchOf(h, calls).run(1);
    expect(outcome.kind).toBe("suspended");
    if (outcome.kind !== "suspended") return;
    expect(outcome.suspension.calls).toEqual(calls);
    expect([...outcome.suspension.waits]).toEqual([["b", { kind: "approval", reason: "it writes" }]]);
    expect(h.events).toEqual([]);
    expect(resultsIn(h.keeper.messages)).toEqual([]);
    expect(h.keeper.openCalls.map((c) => c.id)).toEqual(["a", "b"]);
  });

  it("runs an approved call and denies a denied one, with or without a reason", async () => {
    const h = harnessWith([echoTool], { hooks: { beforeToolCall: () => ({ requireApproval: true }) } });
    const decided = new Map<string, ApprovalDecision>([
      ["a", { approved: true }],
      ["b", { approved: false, reason: "too risky" }],
      ["c", { approved: false }],
    ]);
    const outcome = done(
      await batchOf(h, [call("a"), call("b"), call("c")]).run(1, { decisions: decided, results: new Map() }),
    );
    expect(shape(outcome.results)).toEqual([
      "a ok a",
      "b denied denied: too risky",
      "c denied denied by the user",
    ]);
  });

  it("applies decisions of a resumed batch without a beforeToolCall hook", () => {
    const h = harnessWith([echoTool]);
    const decided = new Map<string, ApprovalDecision>([["a", { approved: false, reason: "no" }]]);
    const outcome = done(
      batchOf(h, [call("a"), call("b")]).run(1, { decisions: decided, results: new Map() }) as BatchOutcome,
    );
    expect(shape(outcome.results)).toEqual(["a denied denied: no", "b ok b"]);
  });

  it("denies a blocked call and runs the others", async () => {
    const beforeToolCall: AgentHooks["beforeToolCall"] = ({ call }) =>
      call.id === "a" ? { block: "not on Sundays" } : undefined;
    const h = harnessWith([echoTool], { hooks: { beforeToolCall } });
    const outcome = done(await batchOf(h, [call("a"), call("b")]).run(1));
    expect(shape(outcome.results)).toEqual(["a denied blocked: not on Sundays", "b ok b"]);
  });

  it("does not run a call of a reply cut off by the length limit", () => {
    const h = harnessWith([echoTool], { cutOffCalls: new Set(["b"]) });
    const outcome = done(batchOf(h, [call("a"), call("b")]).run(1) as BatchOutcome);
    expect(shape(outcome.results)).toEqual(["a ok a", `b error ${CUT_OFF}`]);
  });

  it("skips a repeated call with a nudge, then stops the batch as stalled", () => {
    const stall = new StallDetector();
    const h = harnessWith([echoTool], { stall });
    const same = { text: "same" };
    done(batchOf(h, [call("r1", "echo", same)]).run(1) as BatchOutcome);
    stall.beginReply();
    const nudged = done(batchOf(h, [call("r2", "echo", same)]).run(1) as BatchOutcome);
    expect(nudged.results[0]?.status).toBe("skipped");
    expect(nudged.results[0]?.content).toMatch(/already called "echo" with these same arguments/);
    expect(nudged.stall).toBeUndefined();
    stall.beginReply();
    // Nothing new in the reply (a new call would excuse the repeat): the repeat stops the batch.
    const stalled = done(
      batchOf(h, [call("r3", "echo", same), call("r4", "echo", same)]).run(1) as BatchOutcome,
    );
    expect(stalled.stall).toBeInstanceOf(StallError);
    expect(stalled.results[0]?.status).toBe("error");
    expect(stalled.results[0]?.content).toBe(`not run: ${stalled.stall?.message}`);
    expect(shape([stalled.results[1]])).toEqual(["r4 skipped not run: the run stalled"]);
  });
});

describe("ToolBatch and the stall detector", () => {
  const same = { text: "same" };
  /** A batch after one that made the same call: what the repeat, listed first, became. */
  async function repeatBeside(other: ToolCall, tools: Tool[], overrides: Partial<BatchSetup> = {}) {
    const stall = new StallDetector();
    const h = harnessWith(tools, { stall, ...overrides });
    stall.beginReply();
    done(await batchOf(h, [call("r1", "echo", same)]).run(1));
    stall.beginReply();
    return done(await batchOf(h, [call("r2", "echo", same), other]).run(1)).results[0];
  }

  it("lets a call never made before excuse a repeat listed before it", async () => {
    expect((await repeatBeside(call("n"), [echoTool]))?.status).toBe("ok");
  });

  it("does not let a new call that is refused, cut off or never checked (allowRepeats) excuse it", async () => {
    const poll = defineTool({
      name: "poll",
      description: "Polls.",
      inputSchema: z.object({}),
      allowRepeats: true,
      execute: () => "pending",
    });
    const beforeToolCall: AgentHooks["beforeToolCall"] = ({ call }) =>
      call.id === "n" ? { block: "no" } : undefined;
    const repeats = [
      await repeatBeside(call("n"), [echoTool], { hooks: { beforeToolCall } }),
      await repeatBeside(call("n"), [echoTool], { cutOffCalls: new Set(["n"]) }),
      await repeatBeside(call("p", "poll", {}), [echoTool, poll]),
    ];
    expect(repeats.map((result) => result?.status)).toEqual(["skipped", "skipped", "skipped"]);
  });
});

describe("ToolBatch after the run has ended", () => {
  it("starts, records and publishes nothing more once the transcript writer is closed", async () => {
    const slow = manualTool("slow");
    const afterToolCall = vi.fn(() => undefined);
    const h = harnessWith([echoTool, slow.tool], { hooks: { afterToolCall } });
    const running = batchOf(h, [call("s", "slow"), call("b")]).run(1);
    h.transcript.close();
    slow.release("s");
    const outcome = done(await running);
    expect(trace(h.events)).toEqual(["tool_call:s"]);
    expect(shape(outcome.results)).toEqual(["none", "none"]);
    expect(resultsIn(h.keeper.messages)).toEqual([]);
    expect(afterToolCall).not.toHaveBeenCalled();
  });

  it("stops a synchronous batch at the call during which the run ended", () => {
    const h = harnessWith([echoTool]);
    const closer = defineTool({
      name: "closer",
      description: "Ends the run while it runs.",
      inputSchema: z.object({ text: z.string() }),
      execute: ({ text }) => {
        h.transcript.close();
        return text;
      },
    });
    h.batchSetup.tools.register(closer);
    const outcome = done(batchOf(h, [call("a", "closer"), call("b")]).run(1) as BatchOutcome);
    expect(trace(h.events)).toEqual(["tool_call:a"]);
    expect(shape(outcome.results)).toEqual(["none", "none"]);
  });

  it("closedWith tells afterEach only of calls that started and have no result yet", async () => {
    const slow = manualTool("slow");
    const h = harnessWith([echoTool, slow.tool]);
    const heard: string[] = [];
    const afterEach = (c: ToolCall, r: ToolResultMessage) => heard.push(`${c.id} ${r.status}`);
    const calls = [call("a"), call("s", "slow"), call("c")];
    const batch = batchOf(h, calls, { afterEach });
    const running = batch.run(1);
    expect(heard).toEqual(["a ok"]);
    h.transcript.close();
    const closed = h.transcript.closeCalls("aborted", "not completed: aborted");
    expect(closed.map(({ call }) => call.id)).toEqual(["s", "c"]);
    for (const { call, result } of closed) batch.closedWith(call, result);
    // Again, and for a call that has its result: nothing more to hear.
    batch.closedWith(calls[1] as ToolCall, closed[0]?.result as ToolResultMessage);
    batch.closedWith(calls[0] as ToolCall, closed[0]?.result as ToolResultMessage);
    expect(heard).toEqual(["a ok", "s aborted"]);
    slow.release("s");
    expect(shape(done(await running).results)).toEqual([
      "a ok a",
      "s aborted not completed: aborted",
      "none",
    ]);
  });
});

describe("ToolBatch hooks", () => {
  it("afterToolCall replaces fields of the result everywhere it goes", async () => {
    const afterToolCall: AgentHooks["afterToolCall"] = async ({ result }) =>
      result.toolCallId === "a" ? { content: "[redacted]", details: "[redacted]" } : undefined;
    const h = harnessWith([echoTool], { hooks: { afterToolCall } });
    const outcome = done(await batchOf(h, [call("a"), call("b")]).run(1));
    expect(shape(outcome.results)).toEqual(["a ok [redacted]", "b ok b"]);
    expect(shape(resultsIn(h.keeper.messages))).toEqual(["a ok [redacted]", "b ok b"]);
    const published = h.events.filter((e) => e.type === "tool_result");
    expect(published.map((e) => ("result" in e ? e.result : undefined))).toEqual(["[redacted]", "b"]);
  });

  it("repairToolCall fixes arguments that are not JSON", async () => {
    const repairToolCall = vi.fn<NonNullable<AgentHooks["repairToolCall"]>>(() => ({ text: "fixed" }));
    const h = harnessWith([echoTool], { hooks: { repairToolCall } });
    const broken = call("a", "echo", '{"text": "fix');
    const outcome = done(await batchOf(h, [broken]).run(1));
    expect(shape(outcome.results)).toEqual(["a ok fixed"]);
    expect(repairToolCall).toHaveBeenCalledWith({
      call: broken,
      tool: echoTool,
      error: 'the arguments are not valid JSON: {"text": "fix',
    });
  });

  it("keeps the broken arguments when repairToolCall gives up", async () => {
    const h = harnessWith([echoTool], { hooks: { repairToolCall: () => undefined } });
    const outcome = done(await batchOf(h, [call("a", "echo", "{oops")]).run(1));
    expect(outcome.results[0]?.status).toBe("error");
    expect(outcome.results[0]?.content).toMatch(
      /^Invalid arguments for tool "echo".*not valid JSON: \{oops$/,
    );
  });
});

describe("ToolBatch, what the measured survivors showed untested", () => {
  it("runs a single call synchronously whatever the concurrency", () => {
    const h = harnessWith([echoTool]);
    const outcome = batchOf(h, [call("a")]).run(4);
    expect(outcome).not.toBeInstanceOf(Promise);
    expect(shape(done(outcome as BatchOutcome).results)).toEqual(["a ok a"]);
  });

  it("rejects a concurrent batch with the error of a hook that failed", async () => {
    const afterToolCall = () => Promise.reject(new Error("hook failed"));
    const h = harnessWith([echoTool], { hooks: { afterToolCall } });
    await expect(batchOf(h, [call("a"), call("b")]).run(2)).rejects.toThrow("hook failed");
  });

  it("stops asking beforeToolCall once the run has ended, and returns no suspension", async () => {
    const h = harnessWith([echoTool]);
    const beforeToolCall = vi.fn<NonNullable<AgentHooks["beforeToolCall"]>>(() => {
      h.transcript.close();
      return { requireApproval: true };
    });
    h.batchSetup = { ...h.batchSetup, hooks: { beforeToolCall } };
    const outcome = await batchOf(h, [call("a"), call("b")]).run(1);
    expect(beforeToolCall).toHaveBeenCalledTimes(1);
    expect(outcome.kind).toBe("done");
    expect(h.events).toEqual([]);
  });

  it("closedWith without afterEach leaves the batch's results as they were", async () => {
    const slow = manualTool("slow");
    const h = harnessWith([echoTool, slow.tool]);
    const batch = batchOf(h, [call("a"), call("s", "slow"), call("c")]);
    const running = batch.run(1);
    h.transcript.close();
    for (const { call, result } of h.transcript.closeCalls("aborted", "not completed: aborted"))
      batch.closedWith(call, result);
    slow.release("s");
    expect(shape(done(await running).results)).toEqual(["a ok a", "none", "none"]);
  });

  it("asks repairToolCall only about arguments that are not JSON, of a tool it knows", async () => {
    const repairToolCall = vi.fn<NonNullable<AgentHooks["repairToolCall"]>>(() => ({ text: "fixed" }));
    const h = harnessWith([echoTool], { hooks: { repairToolCall } });
    const outcome = batchOf(h, [call("a")]).run(1);
    expect(outcome).not.toBeInstanceOf(Promise);
    expect(shape(done(outcome as BatchOutcome).results)).toEqual(["a ok a"]);
    const unknown = done(await batchOf(h, [call("b", "nope", "{oops")]).run(1));
    expect(unknown.results[0]?.content).toMatch(/^Unknown tool "nope"/);
    expect(repairToolCall).not.toHaveBeenCalled();
  });

  it("answers every call of an aborted run as not run, before any other reason", () => {
    const h = harnessWith([echoTool], { cutOffCalls: new Set(["b"]) });
    h.setup.abortScope.abort(new Error("stop"));
    const decided = new Map<string, ApprovalDecision>([["a", { approved: false }]]);
    const outcome = done(
      batchOf(h, [call("a"), call("b"), call("c", "nope")]).run(1, {
        decisions: decided,
        results: new Map(),
      }) as BatchOutcome,
    );
    expect(shape(outcome.results)).toEqual([
      "a aborted not run: the run was aborted",
      "b aborted not run: the run was aborted",
      "c aborted not run: the run was aborted",
    ]);
  });

  it("keeps the steering that calls running together took, in the order it came", async () => {
    const slow = manualTool("slow");
    const h = harnessWith([slow.tool]);
    const answers: ((messages: string[]) => void)[] = [];
    const asked = () => new Promise<string[]>((resolve) => answers.push(resolve));
    const steering = new MessageInbox(new MessageQueue(), asked, h.clock);
    const calls = [call("s1", "slow"), call("s2", "slow")];
    h.transcript.append(assistantCalling(calls));
    const running = new ToolBatch({ ...h.batchSetup, steering }, calls, {}).run(2);
    slow.release("s1");
    slow.release("s2");
    await flush();
    expect(answers).toHaveLength(2);
    answers[0]?.(["first"]);
    answers[1]?.(["second"]);
    const outcome = done(await running);
    expect(outcome.steering.map((m) => m.content)).toEqual(["first", "second"]);
  });

  it("checks for repeated results only when the result is ok, and a note does not stop the batch", () => {
    const failing = defineTool({
      name: "failing",
      description: "Always fails the same way.",
      inputSchema: z.object({ text: z.string() }),
      execute: (): string => {
        throw new Error("nope");
      },
    });
    const stall = new StallDetector({ repeatedResults: 2 });
    const h = harnessWith([echoTool, failing], { stall });
    const reply = (calls: ToolCall[]) => {
      stall.beginReply();
      return done(batchOf(h, calls).run(1) as BatchOutcome);
    };
    // The same read in a later reply, after a reply that made a new call: not a repeated call.
    reply([call("r1", "echo", { text: "same" }), call("f1", "failing", { text: "same" })]);
    reply([call("w1", "echo", { text: "new" })]);
    const third = reply([
      call("r2", "echo", { text: "same" }),
      call("f2", "failing", { text: "same" }),
      call("n", "echo", { text: "other" }),
    ]);
    expect(third.results[0]?.content).toMatch(/^same\n\n\[note\] "echo" returned the same result 2 times/);
    expect(shape(third.results.slice(1))).toEqual(["f2 error nope", "n ok other"]);
    expect(third.stall).toBeUndefined();
  });

  it("a stall in a concurrent batch lets the running calls finish", async () => {
    // A polling tool (allowRepeats): its call is not checked, so it does not restart the count.
    let finish: (text: string) => void = () => {};
    let aborted = false;
    const poll = defineTool({
      name: "poll",
      description: "Waits for the test.",
      inputSchema: z.object({ text: z.string() }),
      allowRepeats: true,
      execute: (_args, { signal }) =>
        new Promise<string>((resolve, reject) => {
          finish = resolve;
          signal.addEventListener("abort", () => {
            aborted = true;
            reject(signal.reason);
          });
        }),
    });
    const stall = new StallDetector();
    const h = harnessWith([echoTool, poll], { stall });
    const same = { text: "same" };
    for (const id of ["r1", "r2"]) {
      stall.beginReply();
      done(batchOf(h, [call(id, "echo", same)]).run(1) as BatchOutcome);
    }
    stall.beginReply();
    const running = batchOf(h, [call("p", "poll"), call("r3", "echo", same)]).run(2);
    await flush();
    finish("polled");
    const outcome = done(await running);
    expect(aborted).toBe(false);
    expect(outcome.stall).toBeInstanceOf(StallError);
    expect(shape(outcome.results)).toEqual(["p ok polled", `r3 error not run: ${outcome.stall?.message}`]);
  });

  it("checks the results of a runner that answers a tool the registry does not know", () => {
    const remote = { run: ({ call }: { call: ToolCall }) => toolResult(call, "ok", "remote answer") };
    const h = harnessWith([], { runner: remote, stall: new StallDetector() });
    const outcome = done(batchOf(h, [call("a", "elsewhere")]).run(1) as BatchOutcome);
    expect(shape(outcome.results)).toEqual(["a ok remote answer"]);
  });
});

describe("ToolBatch suspending for client calls", () => {
  const asyncClient = defineTool({
    name: "ask_user",
    description: "Asks the user.",
    inputSchema: z.object({ text: z.string() }).refine(async () => true),
    execution: "client",
  });

  it("takes a client call whose schema checks asynchronously to wait (it cannot be checked now)", async () => {
    const h = harnessWith([asyncClient], { suspendForClientTools: true });
    const outcome = await batchOf(h, [call("a", "ask_user")]).run(1);
    expect(outcome.kind).toBe("suspended");
    if (outcome.kind !== "suspended") return;
    expect([...outcome.suspension.waits]).toEqual([["a", { kind: "client" }]]);
  });

  it("a resumed batch that suspends for a client call keeps the decisions it resumed with", async () => {
    const h = harnessWith([echoTool, asyncClient], {
      suspendForClientTools: true,
      hooks: { beforeToolCall: ({ call }) => (call.id === "a" ? { requireApproval: true } : undefined) },
    });
    const decided = new Map<string, ApprovalDecision>([["a", { approved: true }]]);
    const outcome = await batchOf(h, [call("a"), call("b", "ask_user")]).run(1, {
      decisions: decided,
      results: new Map(),
    });
    expect(outcome.kind).toBe("suspended");
    if (outcome.kind !== "suspended") return;
    expect([...outcome.suspension.waits]).toEqual([["b", { kind: "client" }]]);
    expect(outcome.suspension.decided).toBe(decided);
  });
});
