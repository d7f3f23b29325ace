import { describe, expect, it, vi } from "vitest";
import { AbortedError, TimeoutError } from "../errors.js";
import type { AgentMessage } from "../messages.js";
import { StallDetector } from "../tools/stall-detector.js";
import { answer, assistantCalling, call, eventsOf, runHarness, trace } from "./run-fixtures.test-support.js";
import type { ToolBatch } from "./tool-batch.js";

const user = (content: string): AgentMessage => ({ role: "user", content, timestamp: 1 });

describe("RunLog.append", () => {
  it("starts the stall window again at a user message, not at other messages", () => {
    const h = runHarness();
    const stall = new StallDetector();
    h.log.stall = stall;
    const same = { text: "same" };
    expect(stall.checkCall(call("a", "echo", same)).kind).toBe("ok");
    stall.beginReply();
    h.log.append(answer("thinking"));
    expect(stall.checkCall(call("b", "echo", same)).kind).toBe("nudge");
    stall.beginReply();
    h.log.append(user("try again"));
    expect(stall.checkCall(call("c", "echo", same)).kind).toBe("ok");
  });

  it("tells the inboxes that a message they handed out entered the history", () => {
    const h = runHarness();
    h.steeringQueue.push("steer", 1);
    h.followUpQueue.push("follow", 2);
    const [steer] = h.setup.steering.takeNow() as AgentMessage[];
    const [follow] = h.setup.followUps.takeNow() as AgentMessage[];
    h.log.append(steer as AgentMessage);
    // Delivered: not queued again when the run ends; the other one is.
    expect(h.setup.steering.close()).toEqual([]);
    expect(h.setup.followUps.close()).toEqual([follow]);
    expect(h.followUpQueue.peek()).toEqual([follow]);
  });

  it("reports the calls a user message closed: tool_call where none went out, then tool_result", () => {
    const h = runHarness();
    h.transcript.append(assistantCalling([call("a"), call("b")]));
    h.publisher.publish({ type: "tool_call", toolCallId: "a", toolName: "echo", args: {} });
    h.log.append(user("never mind"));
    expect(trace(h.events)).toEqual(["tool_call:a", "tool_result:a", "tool_call:b", "tool_result:b"]);
    // The announced call is not announced again (the publisher would drop it and count it).
    expect(h.dropped).toEqual([]);
    expect(eventsOf(h.events, "tool_result").map((e) => e.status)).toEqual(["error", "error"]);
    expect(h.metrics.toolCalls).toEqual({ error: 2 });
  });
});

describe("RunLog.applySteering", () => {
  it("appends the messages, strings stamped with the clock's time, and emits steering_applied", () => {
    const h = runHarness();
    h.clock.advance(500);
    const own: AgentMessage = { role: "user", content: "as is", timestamp: 7 };
    h.log.applySteering(["stop", own]);
    const stamped = [{ role: "user", content: "stop", timestamp: h.clock.now() }, own];
    expect(h.keeper.messages).toEqual(stamped);
    expect(eventsOf(h.events, "steering_applied").map((e) => e.messages)).toEqual([stamped]);
  });

  it("emits nothing for no messages, and refuses once the run has ended", () => {
    const h = runHarness();
    h.log.applySteering([]);
    expect(h.events).toEqual([]);
    h.transcript.close();
    expect(() => h.log.applySteering(["late"])).toThrow(AbortedError);
    expect(h.keeper.messages).toEqual([]);
  });
});

describe("RunLog.publishClosed", () => {
  it("publishes each closed call and tells the batches under way, not those that ended", () => {
    const h = runHarness();
    h.transcript.append(assistantCalling([call("a"), call("b")]));
    h.publisher.publish({ type: "tool_call", toolCallId: "a", toolName: "echo", args: {} });
    const running = { closing: vi.fn(), closedWith: vi.fn() };
    const ended = { closing: vi.fn(), closedWith: vi.fn() };
    h.log.track(running as unknown as ToolBatch);
    h.log.track(ended as unknown as ToolBatch);
    h.log.untrack(ended as unknown as ToolBatch);
    const closed = h.transcript.closeCalls("aborted", "not completed: aborted");
    h.log.publishClosed(closed);
    expect(trace(h.events)).toEqual(["tool_call:a", "tool_result:a", "tool_call:b", "tool_result:b"]);
    expect(h.dropped).toEqual([]);
    expect(eventsOf(h.events, "tool_result")[1]).toMatchObject({
      status: "aborted",
      error: "not completed: aborted",
    });
    expect(h.metrics.toolCalls).toEqual({ aborted: 2 });
    expect(running.closedWith.mock.calls).toEqual(closed.map(({ call, result }) => [call, result]));
    // Only b had no tool_call yet: its batch hears of it before one goes out.
    expect(running.closing.mock.calls).toEqual([[closed[1]?.call]]);
    expect(ended.closedWith).not.toHaveBeenCalled();
    expect(ended.closing).not.toHaveBeenCalled();
  });
});

describe("RunLog.assertOpen", () => {
  it("passes while the run is open", () => {
    expect(() => runHarness().log.assertOpen()).not.toThrow();
  });

  it("throws AbortedError once the transcript writer is closed", () => {
    const h = runHarness();
    h.transcript.close();
    expect(() => h.log.assertOpen()).toThrow(new AbortedError("the run has already ended"));
  });

  it("throws the abort's error once the scope aborted", () => {
    const aborted = runHarness();
    aborted.setup.abortScope.abort("user pressed stop");
    expect(() => aborted.log.assertOpen()).toThrow(AbortedError);
    const timedOut = runHarness();
    const timeout = new TimeoutError("total", 1000);
    timedOut.setup.abortScope.abort(timeout);
    let thrown: unknown;
    try {
      timedOut.log.assertOpen();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBe(timeout);
  });
});
