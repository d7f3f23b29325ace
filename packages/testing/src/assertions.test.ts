import { type AgentEvent, defineEventSchema, registerEventSchema } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  assertEventProtocol,
  assertValidTranscript,
  collectEvents,
  eventsOf,
  eventTypes,
} from "./assertions.js";

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
function run(...payloads: Record<string, unknown>[]): AgentEvent[] {
  return payloads.map((payload, seq) => ({ runId: "r", seq, ts: 1, ...payload }) as AgentEvent);
}
const start = { type: "agent_start" };
const end = { type: "agent_end", stopReason: "completed", usage, durationMs: 1 };

describe("assertEventProtocol", () => {
  it("accepts a well-formed run", () => {
    const events = run(
      start,
      { type: "turn_start", turn: 1 },
      { type: "tool_call", toolCallId: "a", toolName: "t", args: {} },
      { type: "tool_result", toolCallId: "a", toolName: "t", status: "ok", result: 1 },
      { type: "turn_end", message: { role: "assistant", content: [] }, durationMs: 1 },
      end,
    );
    expect(() => assertEventProtocol(events)).not.toThrow();
    expect(eventTypes(events)).toHaveLength(6);
    expect(eventsOf(events, "tool_result")[0]?.status).toBe("ok");
  });

  it.each([
    ["a gap in seq", () => run(start, end).map((e, i) => ({ ...e, seq: i * 2 })), /seq 2/],
    ["a missing agent_end", () => run(start), /last event is not agent_end/],
    ["agent_start twice", () => run(start, start, end), /agent_start at 1/],
    [
      "a tool_call without result",
      () => run(start, { type: "tool_call", toolCallId: "a", toolName: "t", args: 1 }, end),
      /without tool_result: a/,
    ],
    [
      "a result without call",
      () => run(start, { type: "tool_result", toolCallId: "a", toolName: "t", status: "ok" }, end),
      /without an open tool_call/,
    ],
    [
      "an error not right before agent_end",
      () =>
        run(
          start,
          { type: "error", code: "x", message: "m" },
          { type: "turn_start", turn: 1 },
          { type: "turn_end", message: { role: "assistant", content: [] }, durationMs: 1 },
          end,
        ),
      /error at 1/,
    ],
    [
      "an unbalanced turn",
      () => run(start, { type: "turn_start", turn: 1 }, end),
      /turn\(s\) without turn_end/,
    ],
    [
      "a payload that fails its schema",
      () => run(start, { type: "steering_mode", mode: "maybe", queueSize: 0 }, end),
      /event 1: Invalid "steering_mode" event:\n.*\n.*at mode/,
    ],
    [
      "an event type no one registered",
      () => run(start, { type: "mystery_event" }, end),
      /event 1: Unknown event type "mystery_event"\. Known types: agent_start, /,
    ],
    [
      "a failed run without its error event",
      () => run(start, { ...end, stopReason: "aborted" }),
      /ended "aborted" without an error event before agent_end/,
    ],
    [
      "a completed run with an error event",
      () => run(start, { type: "error", code: "x", message: "m" }, end),
      /ended "completed" after an error event/,
    ],
    ["a ts that goes back", () => run(start, end).map((e, i) => ({ ...e, ts: 10 - i })), /event 1 has ts 9/],
    [
      "a turn inside a turn",
      () =>
        run(
          start,
          { type: "turn_start", turn: 1 },
          { type: "turn_start", turn: 2 },
          { type: "turn_end", message: { role: "assistant", content: [] }, durationMs: 1 },
          { type: "turn_end", message: { role: "assistant", content: [] }, durationMs: 1 },
          end,
        ),
      /turn_start at 2 while a turn is open/,
    ],
    [
      "two runIds",
      () => [...run(start), { ...run(end)[0], seq: 1, runId: "other" } as AgentEvent],
      /runId other/,
    ],
    [
      "a null among the events",
      () => [...run(start), null, { ...run(end)[0], seq: 2 }] as unknown as AgentEvent[],
      /event 1 is not an event \(null\)/,
    ],
    [
      "a hole in the list of events",
      () => Object.assign(new Array<AgentEvent>(3), { 0: run(start)[0], 2: { ...run(end)[0], seq: 2 } }),
      /event 1 is not an event \(undefined\)/,
    ],
  ])("rejects %s", (_name, events, message) => {
    expect(() => assertEventProtocol(events())).toThrow(message);
  });
});

describe("assertEventProtocol with a plug-in's events", () => {
  // Each test file has its own module instances: this registration stays in this file.
  registerEventSchema("probe_ping", defineEventSchema("probe_ping", { count: z.number().int() }));

  it("accepts them once registered, and checks them against the registered schema", () => {
    expect(() => assertEventProtocol(run(start, { type: "probe_ping", count: 1 }, end))).not.toThrow();
    expect(() => assertEventProtocol(run(start, { type: "probe_ping", count: 1.5 }, end))).toThrow(
      /event 1: Invalid "probe_ping" event:\n.*\n.*at count/,
    );
  });
});

describe("assertValidTranscript", () => {
  it("throws with every problem listed", () => {
    expect(() =>
      assertValidTranscript([
        { role: "assistant", content: [{ type: "toolCall", id: "x", name: "t", args: {} }] },
      ]),
    ).toThrow(/Invalid transcript:\n- message 0: tool call\(s\) "x" have no result/);
    expect(() => assertValidTranscript([{ role: "user", content: "hi" }])).not.toThrow();
  });
});

describe("the assertions given what is no list", () => {
  it("throw a TypeError saying what they take, not an engine error", () => {
    for (const given of [undefined, null, "events", { 0: {} }]) {
      expect(() => assertEventProtocol(given as never), String(given)).toThrow(
        /assertEventProtocol takes the list of a run's events/,
      );
      expect(() => assertValidTranscript(given as never), String(given)).toThrow(
        /validateTranscript takes a list of messages/,
      );
    }
  });

  it("eventsOf and eventTypes throw a TypeError naming themselves and what they take", () => {
    for (const given of [undefined, null, "events", { 0: {} }]) {
      expect(() => eventsOf(given as never, "tool_call"), String(given)).toThrow(
        new TypeError(
          `eventsOf takes the list of a run's events (run.events, or collectEvents(run)), got ${given === null ? "null" : typeof given}.`,
        ),
      );
      expect(() => eventTypes(given as never), String(given)).toThrow(
        /^eventTypes takes the list of a run's events/,
      );
    }
    expect(() => eventsOf(run(start, end), undefined as never)).toThrow(
      new TypeError('eventsOf: the type must be an event type such as "tool_call", got undefined.'),
    );
    expect(() => eventTypes([null] as never)).toThrow(
      new TypeError("eventTypes: entry 0 is not an event (null)."),
    );
  });

  it("collectEvents rejects with a TypeError saying it takes a run", async () => {
    for (const given of [undefined, null, "events", {}]) {
      await expect(collectEvents(given as never), String(given)).rejects.toThrow(
        new TypeError(
          `collectEvents takes a run (or any async iterable of events), got ${given === null ? "null" : typeof given}.`,
        ),
      );
    }
  });

  it("report an entry that is no message as a problem of the transcript", () => {
    expect(() => assertValidTranscript([null, { role: "user", content: "hi" }] as never)).toThrow(
      /Invalid transcript:\n- message 0 is no message \(null\)/,
    );
  });
});
