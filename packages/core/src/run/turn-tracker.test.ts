import { describe, expect, it } from "vitest";
import { AbortedError } from "../errors.js";
import { answer, eventsOf, runHarness, trace, usage } from "./run-fixtures.test-support.js";
import { TurnTracker } from "./turn-tracker.js";

function tracker() {
  const h = runHarness();
  return { ...h, turns: new TurnTracker(h.publisher, h.metrics, h.clock, h.log) };
}

describe("TurnTracker", () => {
  it("numbers turns from 1, closing a turn still open before the next starts", () => {
    const t = tracker();
    expect(t.turns.start()).toBe(1);
    t.log.append(answer("first"));
    expect(t.turns.start()).toBe(2);
    expect(trace(t.events)).toEqual(["turn_start", "turn_end", "turn_start"]);
    expect(eventsOf(t.events, "turn_start").map((e) => e.turn)).toEqual([1, 2]);
    expect(eventsOf(t.events, "turn_end")[0]?.message).toEqual(answer("first"));
  });

  it("ends a turn once, with its duration from the clock", () => {
    const t = tracker();
    t.turns.start();
    t.clock.advance(250);
    t.turns.end(answer("done"));
    t.turns.end(answer("again"));
    const ends = eventsOf(t.events, "turn_end");
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ message: answer("done"), durationMs: 250 });
  });

  it("reports the metrics spent since the turn started", () => {
    const t = tracker();
    t.metrics.cycles = 3;
    t.metrics.modelMs = 500;
    t.metrics.count("ok");
    t.metrics.addUsage(usage(100, 50));
    t.turns.start();
    t.metrics.cycles++;
    t.metrics.modelMs += 40;
    t.metrics.toolMs += 10;
    t.metrics.count("ok");
    t.metrics.count("error");
    t.metrics.addUsage(usage(7, 3));
    t.clock.advance(100);
    t.turns.end(answer("done"));
    expect(eventsOf(t.events, "turn_end")[0]?.metrics).toEqual({
      cycles: 1,
      toolCalls: { ok: 1, error: 1 },
      modelMs: 40,
      toolMs: 10,
      frameworkMs: 50,
      usage: usage(7, 3),
    });
  });

  it("endOpen closes an open turn with its last answer", () => {
    const t = tracker();
    t.turns.start();
    t.log.append(answer("one"));
    t.log.append({ role: "user", content: "and?" });
    t.log.append(answer("two"));
    t.turns.endOpen("error");
    expect(eventsOf(t.events, "turn_end").map((e) => e.message)).toEqual([answer("two")]);
  });

  it("endOpen closes a turn without an answer of its own with an empty one saying why", () => {
    const t = tracker();
    t.log.append(answer("from an earlier turn"));
    t.turns.start();
    t.clock.advance(10);
    t.turns.endOpen("aborted");
    expect(eventsOf(t.events, "turn_end")[0]?.message).toEqual({
      role: "assistant",
      content: [],
      stopReason: "aborted",
      timestamp: t.clock.now(),
    });
  });

  it("closes a turn that gave no answer with an empty one that stopped, when the next turn starts", () => {
    const t = tracker();
    t.turns.start();
    t.turns.start();
    expect(eventsOf(t.events, "turn_end")[0]?.message).toEqual({
      role: "assistant",
      content: [],
      stopReason: "stop",
      timestamp: t.clock.now(),
    });
  });

  it("endOpen does nothing without an open turn", () => {
    const t = tracker();
    t.turns.endOpen("stop");
    t.turns.start();
    t.turns.end(answer("done"));
    t.turns.endOpen("stop");
    expect(trace(t.events)).toEqual(["turn_start", "turn_end"]);
  });

  it("publishes nothing once the publisher is sealed by agent_end", () => {
    const t = tracker();
    t.turns.start();
    t.publisher.publish({ type: "agent_end", stopReason: "completed", usage: usage(0, 0), durationMs: 0 });
    t.turns.end(answer("late"));
    expect(trace(t.events)).toEqual(["turn_start", "agent_end"]);
    expect(t.dropped).toEqual([]);
  });

  it("refuses to start a turn once the run has ended", () => {
    const t = tracker();
    t.transcript.close();
    expect(() => t.turns.start()).toThrow(AbortedError);
    expect(t.events).toEqual([]);
  });
});
