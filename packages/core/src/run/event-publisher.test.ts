import { describe, expect, it } from "vitest";
import type { AgentEvent, OrchestratorEvent } from "../events/schemas.js";
import type { RunObserver } from "../observe/run-observer.js";
import { EventPublisher } from "./event-publisher.js";
import type { Clock, EventSink } from "./services.js";

/** A clock that returns the given times in turn (the last one from then on). */
function clockOf(...times: number[]): Clock {
  let next = 0;
  const now = () => times[Math.min(next++, times.length - 1)] as number;
  return { now, monotonic: now };
}

/** A publisher whose run stream keeps what it delivers (`stream`) and what it drops (`dropped`). */
function publisher(clock: Clock = clockOf(1000), sink?: EventSink) {
  const stream: AgentEvent[] = [];
  const dropped: OrchestratorEvent[] = [];
  const publisher = new EventPublisher(
    "run-1",
    clock,
    { push: (e) => stream.push(e), dropped: (e) => dropped.push(e) },
    { publish() {} },
    sink,
  );
  return { publisher, stream, dropped };
}

const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
const agentEnd: OrchestratorEvent = { type: "agent_end", stopReason: "completed", usage, durationMs: 0 };
const call = (id: string): OrchestratorEvent => ({
  type: "tool_call",
  toolCallId: id,
  toolName: "t",
  args: {},
});
const result = (id: string): OrchestratorEvent => ({
  type: "tool_result",
  toolCallId: id,
  toolName: "t",
  status: "ok",
  result: 1,
});

describe("EventPublisher", () => {
  it("envelopes each event with the run id, a gapless seq from 0 and the clock's time", () => {
    const { publisher: events, stream, dropped } = publisher(clockOf(1000, 1005, 1010));
    events.publish({ type: "agent_start" });
    events.publish({ type: "turn_start", turn: 1 });
    events.publish({ type: "thinking", text: "hm" });
    expect(stream).toEqual([
      { type: "agent_start", runId: "run-1", seq: 0, ts: 1000 },
      { type: "turn_start", turn: 1, runId: "run-1", seq: 1, ts: 1005 },
      { type: "thinking", text: "hm", runId: "run-1", seq: 2, ts: 1010 },
    ]);
    expect(dropped).toEqual([]);
  });

  it("never lets ts go back, even when the clock does", () => {
    const { publisher: events, stream } = publisher(clockOf(2000, 1500, 2500, 100));
    for (let turn = 1; turn <= 4; turn++) events.publish({ type: "turn_start", turn });
    expect(stream.map((e) => e.ts)).toEqual([2000, 2000, 2500, 2500]);
  });

  it("takes a time the caller has just read instead of reading the clock, and still never goes back", () => {
    const { publisher: events, stream } = publisher(clockOf(3000, 3100));
    events.publish({ type: "turn_start", turn: 1 }, 2000);
    events.publish({ type: "turn_start", turn: 2 });
    events.publish({ type: "turn_start", turn: 3 }, 2500);
    events.publish({ type: "turn_start", turn: 4 });
    expect(stream.map((e) => e.ts)).toEqual([2000, 3000, 3000, 3100]);
  });

  it("is sealed by agent_end: later events go to the stream's dropped(), and seq stays gapless", () => {
    const { publisher: events, stream, dropped } = publisher();
    events.publish({ type: "agent_start" });
    expect(events.sealed).toBe(false);
    events.publish(agentEnd);
    expect(events.sealed).toBe(true);
    events.publish({ type: "thinking", text: "late" });
    events.publish(call("late"));
    expect(stream.map((e) => [e.type, e.seq])).toEqual([
      ["agent_start", 0],
      ["agent_end", 1],
    ]);
    expect(dropped).toEqual([{ type: "thinking", text: "late" }, call("late")]);
  });

  it("keeps the tool protocol: a result only for an announced call, once; a call id only once at a time", () => {
    const { publisher: events, stream, dropped } = publisher();
    events.publish(result("never-announced"));
    events.publish(call("a"));
    expect(events.announced("a")).toBe(true);
    events.publish(call("a"));
    events.publish(result("a"));
    expect(events.announced("a")).toBe(false);
    events.publish(result("a"));
    expect(stream.map((e) => [e.type, (e as { toolCallId: string }).toolCallId, e.seq])).toEqual([
      ["tool_call", "a", 0],
      ["tool_result", "a", 1],
    ]);
    expect(dropped).toEqual([result("never-announced"), call("a"), result("a")]);
  });

  it("answers calls in any order while several are open", () => {
    const { publisher: events, stream, dropped } = publisher();
    for (const id of ["a", "b", "c"]) events.publish(call(id));
    for (const id of ["b", "c", "a"]) events.publish(result(id));
    expect(stream.map((e) => e.type)).toEqual([
      "tool_call",
      "tool_call",
      "tool_call",
      "tool_result",
      "tool_result",
      "tool_result",
    ]);
    expect(["a", "b", "c"].some((id) => events.announced(id))).toBe(false);
    expect(dropped).toEqual([]);
  });

  it("tells the observer of nudges until agent_end seals it; without an observer a nudge is a no-op", () => {
    const nudges: string[] = [];
    const observer: RunObserver = {
      publish() {},
      nudged: (call, message) => nudges.push(`${call.id}: ${message}`),
      modelStep: (inner) => inner,
      toolRunner: (inner) => inner,
    };
    const stream = { push() {}, dropped() {} };
    const events = new EventPublisher("run-1", clockOf(1), stream, { publish() {} }, undefined, observer);
    const stalled = { id: "a", name: "t", args: {} };
    events.nudged(stalled, "you already called this");
    events.publish(agentEnd);
    events.nudged(stalled, "too late");
    expect(nudges).toEqual(["a: you already called this"]);
    const unobserved = new EventPublisher("run-2", clockOf(1), stream, { publish() {} }, undefined);
    expect(() => unobserved.nudged(stalled, "nobody hears")).not.toThrow();
  });

  it("delivers to the run's stream, then the listeners, then the sink", () => {
    const order: string[] = [];
    const events = new EventPublisher(
      "run-1",
      clockOf(1),
      { push: (e) => order.push(`stream ${e.seq}`), dropped: (e) => order.push(`dropped ${e.type}`) },
      { publish: (e) => order.push(`listeners ${e.seq}`) },
      { publish: (e) => order.push(`sink ${e.seq}`) },
    );
    events.publish({ type: "agent_start" });
    events.publish({ type: "turn_start", turn: 1 });
    expect(order).toEqual(["stream 0", "listeners 0", "sink 0", "stream 1", "listeners 1", "sink 1"]);
  });

  it("builds the hot events with exactly their documented keys, type first", () => {
    const { publisher: events, stream } = publisher(clockOf(7));
    events.publish({ type: "text_delta", text: "hi", index: 0 });
    events.publish({ type: "tool_call", toolCallId: "a", toolName: "t", args: { x: 1 } });
    events.publish({
      type: "tool_call",
      toolCallId: "a_2",
      toolName: "t",
      args: {},
      originalToolCallId: "a",
    });
    events.publish({ type: "tool_result", toolCallId: "a", toolName: "t", status: "ok", result: 2 });
    events.publish({ type: "tool_result", toolCallId: "a_2", toolName: "t", status: "error", error: "no" });
    events.publish({ type: "steering_mode", mode: "steer", queueSize: 2 });
    const envelope = '"runId":"run-1","seq":';
    expect(stream.map((e) => JSON.stringify(e))).toEqual([
      `{"type":"text_delta",${envelope}0,"ts":7,"text":"hi","index":0}`,
      `{"type":"tool_call",${envelope}1,"ts":7,"toolCallId":"a","toolName":"t","args":{"x":1}}`,
      `{"type":"tool_call",${envelope}2,"ts":7,"toolCallId":"a_2","toolName":"t","args":{},"originalToolCallId":"a"}`,
      `{"type":"tool_result",${envelope}3,"ts":7,"toolCallId":"a","toolName":"t","status":"ok","result":2}`,
      `{"type":"tool_result",${envelope}4,"ts":7,"toolCallId":"a_2","toolName":"t","status":"error","error":"no"}`,
      `{"type":"steering_mode",${envelope}5,"ts":7,"mode":"steer","queueSize":2}`,
    ]);
    // `JSON.stringify` omits undefined values: the key lists show no stray ones.
    expect(stream.map((e) => Object.keys(e).length)).toEqual([6, 7, 8, 8, 8, 6]);
  });
});
