import type { LanguageModelV4Prompt } from "@ai-sdk/provider";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  EmptyResponseError,
  MaxCyclesExceededError,
  StopRequestedError,
  StructuredOutputError,
} from "../errors.js";
import type { AssistantMessage } from "../messages.js";
import { Activity } from "./activity.js";
import { streamingModelStep } from "./default-services.js";
import { MessageInbox, MessageQueue } from "./message-queue.js";
import { ModelDecisions } from "./model-decisions.js";
import {
  assistantCalling,
  call,
  callsReply,
  eventsOf,
  FakeClock,
  type HarnessOverrides,
  runHarness,
  type ScriptedReply,
  scriptedStep,
  streamingModel,
  textReply,
  trace,
  usage,
} from "./run-fixtures.test-support.js";

const ASKED = { role: "user", content: "Go.", timestamp: 0 } as const;

/** Model decisions over a fresh harness whose model step answers with `replies`. */
function decisionsWith(replies: ScriptedReply[], overrides: HarnessOverrides = {}) {
  const step = scriptedStep(...replies);
  const h = runHarness({ modelStep: step, ...overrides });
  // The user message the model answers: a call with no message at all is refused.
  h.keeper.append(ASKED);
  const activity = new Activity();
  const decisions = new ModelDecisions(h.setup, h.log, h.publisher, h.metrics, activity);
  return { ...h, step, activity, decisions };
}

/** The text of a v4 prompt message (its text parts joined). */
function textOfPrompt(message: LanguageModelV4Prompt[number] | undefined): string {
  if (message === undefined) return "";
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => ("text" in part ? part.text : "")).join("");
}

describe("ModelDecisions.decide", () => {
  it("records the reply and publishes steering_mode respond", async () => {
    const d = decisionsWith([textReply("Hello.", { usage: usage(7, 3) })]);
    const decision = await d.decisions.decide({});
    const expected: AssistantMessage = {
      role: "assistant",
      content: [{ type: "text", text: "Hello." }],
      model: "stub-model",
      stopReason: "stop",
      usage: usage(7, 3),
      timestamp: d.clock.now(),
    };
    expect(decision).toEqual({ mode: "respond", message: expected, text: "Hello." });
    expect(d.keeper.messages).toEqual([ASKED, expected]);
    expect(trace(d.events)).toEqual(["text_delta", "steering_mode"]);
    expect(eventsOf(d.events, "steering_mode")[0]).toMatchObject({ mode: "respond", queueSize: 0 });
  });

  it("stamps the reply and its steering_mode event with the same reading of the clock", async () => {
    // A clock that moves at every reading: two readings would differ.
    class TickingClock extends FakeClock {
      override now(): number {
        this.advance(1);
        return super.now();
      }
    }
    const d = decisionsWith([callsReply([call("a")])], { clock: new TickingClock() });
    const decision = await d.decisions.decide({});
    const [steeringMode] = eventsOf(d.events, "steering_mode");
    expect(steeringMode?.ts).toBe(decision.message.timestamp);
  });

  it("publishes steering_mode steer with the number of calls", async () => {
    const calls = [call("a"), call("b")];
    const d = decisionsWith([callsReply(calls)]);
    const decision = await d.decisions.decide({});
    expect(decision.mode).toBe("steer");
    expect(decision.mode === "steer" && decision.toolCalls).toEqual(calls);
    expect(decision.message.stopReason).toBe("toolUse");
    expect(d.keeper.openCalls).toEqual(calls);
    expect(eventsOf(d.events, "steering_mode")[0]).toMatchObject({ mode: "steer", queueSize: 2 });
  });

  it("rejects an empty reply with EmptyResponseError and records nothing", async () => {
    const d = decisionsWith([textReply("", { finishReason: "content-filter" })]);
    await expect(d.decisions.decide({})).rejects.toBeInstanceOf(EmptyResponseError);
    expect(d.keeper.messages).toEqual([ASKED]);
    expect(eventsOf(d.events, "steering_mode")).toEqual([]);
  });

  it("marks the calls of a reply cut off by the length limit", async () => {
    const d = decisionsWith([callsReply([call("a"), call("b")], { finishReason: "length" })]);
    await d.decisions.decide({});
    expect([...d.decisions.cutOffCalls]).toEqual(["a", "b"]);
  });

  it("ends a text reply cut off by the length limit as `length`, and cuts off no call", async () => {
    const d = decisionsWith([textReply("Once upon a", { finishReason: "length" })]);
    const decision = await d.decisions.decide({});
    expect(decision.message.stopReason).toBe("length");
    expect(d.decisions.cutOffCalls.size).toBe(0);
  });

  it("renames a repeated call id and keeps the model's as originalId", async () => {
    const d = decisionsWith([callsReply([call("x"), call("x")])]);
    const earlier = call("x");
    d.transcript.append(assistantCalling([earlier]));
    d.transcript.record({
      role: "toolResult",
      toolCallId: "x",
      toolName: "echo",
      content: "x",
      isError: false,
      status: "ok",
    });
    const decision = await d.decisions.decide({});
    const renamed = [
      { ...call("x"), id: "x_2", originalId: "x" },
      { ...call("x"), id: "x_3", originalId: "x" },
    ];
    expect(decision.mode === "steer" && decision.toolCalls).toEqual(renamed);
    expect(decision.message.content.map((block) => block.type === "toolCall" && block.id)).toEqual([
      "x_2",
      "x_3",
    ]);
    expect(d.keeper.openCalls.map((c) => c.id)).toEqual(["x_2", "x_3"]);
  });

  it("refuses a call past maxCycles with MaxCyclesExceededError, before calling the model", async () => {
    const d = decisionsWith([textReply("one"), textReply("two")], {
      limits: { maxCycles: 1, abortGraceMs: 100 },
    });
    await d.decisions.decide({});
    await expect(d.decisions.decide({})).rejects.toBeInstanceOf(MaxCyclesExceededError);
    expect(d.step.requests).toHaveLength(1);
    expect(d.metrics.cycles).toBe(1);
  });

  it("asks shouldStop before every call after the first; true rejects with StopRequestedError", async () => {
    const shouldStop = vi.fn(() => true);
    const d = decisionsWith([textReply("one"), textReply("two")], { hooks: { shouldStop } });
    await d.decisions.decide({});
    expect(shouldStop).not.toHaveBeenCalled();
    await expect(d.decisions.decide({})).rejects.toBeInstanceOf(StopRequestedError);
    expect(shouldStop).toHaveBeenCalledWith({ runId: "run-1", step: 1, messages: d.keeper.messages });
    expect(d.step.requests).toHaveLength(1);
  });

  it("applies queued steering before the call: in the history and the prompt, steering_applied first", async () => {
    const d = decisionsWith([textReply("On it.")]);
    d.steeringQueue.push("hurry up", 42);
    await d.decisions.decide({});
    expect(trace(d.events)).toEqual(["steering_applied", "text_delta", "steering_mode"]);
    expect(d.keeper.messages.map((m) => m.role)).toEqual(["user", "user", "assistant"]);
    expect(textOfPrompt(d.step.requests[0]?.prompt.at(-1))).toBe("hurry up");
  });

  it("applies steering from an asynchronous getSteeringMessages before the call too", async () => {
    const clock = new FakeClock();
    const steering = new MessageInbox(new MessageQueue(), () => Promise.resolve(["slow steer"]), clock);
    const d = decisionsWith([textReply("ok")], { clock, steering });
    await d.decisions.decide({});
    expect(trace(d.events)).toEqual(["steering_applied", "text_delta", "steering_mode"]);
    expect(textOfPrompt(d.step.requests[0]?.prompt.at(-1))).toBe("slow steer");
  });

  it("adds each reply's usage to the metrics", async () => {
    const d = decisionsWith([
      textReply("a", { usage: usage(10, 5) }),
      textReply("b", { usage: usage(3, 2) }),
    ]);
    await d.decisions.decide({});
    await d.decisions.decide({});
    expect(d.metrics.usage).toEqual(usage(13, 7));
  });

  it("adds the model time once per call, also when the model step fails, and counts in-flight work", async () => {
    const d = decisionsWith([
      () => {
        d.clock.advance(20);
        return textReply("fine");
      },
      () => {
        d.clock.advance(30);
        throw new Error("provider down");
      },
    ]);
    const first = d.decisions.decide({});
    expect(d.activity.inFlight).toBe(1);
    await first;
    expect(d.metrics.modelMs).toBe(20);
    await expect(d.decisions.decide({})).rejects.toThrow("provider down");
    expect(d.metrics.modelMs).toBe(50);
    expect(d.activity.inFlight).toBe(0);
  });

  it("reads the model through the default streaming step, and through a swapped one instead", async () => {
    const model = streamingModel("streamed");
    const streaming = decisionsWith([], { provider: model, modelStep: streamingModelStep });
    expect((await streaming.decisions.decide({})).message.content).toEqual([
      { type: "text", text: "streamed" },
    ]);
    expect(model.calls).toBe(1);

    const replay = { run: vi.fn(() => Promise.resolve(textReply("replayed"))) };
    const swapped = decisionsWith([], { provider: model, modelStep: replay });
    const decision = await swapped.decisions.decide({});
    expect(decision.mode === "respond" && decision.text).toBe("replayed");
    expect(replay.run).toHaveBeenCalledTimes(1);
    expect(model.calls).toBe(1);
  });
});

describe("ModelDecisions.generateObject", () => {
  const schema = z.object({ answer: z.number() });

  it("returns a valid object at once; publishes steering_mode respond and records nothing", async () => {
    const d = decisionsWith([textReply('{"answer":42}')]);
    const generated = await d.decisions.generateObject(schema, {});
    expect(generated).toEqual({ object: { answer: 42 }, text: '{"answer":42}' });
    expect(d.keeper.messages).toEqual([ASKED]);
    // Structured output is not streamed as text.
    expect(trace(d.events)).toEqual(["steering_mode"]);
    expect(eventsOf(d.events, "steering_mode")[0]).toMatchObject({ mode: "respond", queueSize: 0 });
    const request = d.step.requests[0];
    expect(request?.settings?.responseFormat).toMatchObject({ type: "json" });
    expect(request?.tools).toEqual([]);
  });

  it("sends an invalid reply back with what was wrong, and takes the corrected one", async () => {
    const d = decisionsWith([textReply('{"answer":"many"}'), textReply('{"answer":3}')]);
    const generated = await d.decisions.generateObject(schema, {});
    expect(generated.object).toEqual({ answer: 3 });
    const retry = d.step.requests[1]?.prompt ?? [];
    expect(textOfPrompt(retry.at(-2))).toBe('{"answer":"many"}');
    const correction = textOfPrompt(retry.at(-1));
    expect(correction).toMatch(/answer/);
    expect(correction).toMatch(/Reply with only the corrected JSON\.$/);
    expect(d.metrics.usage).toEqual(usage(20, 10));
    // Every model call reports its decision: the invalid reply was a response, sent back.
    expect(eventsOf(d.events, "steering_mode").map((e) => [e.mode, e.queueSize])).toEqual([
      ["respond", 0],
      ["respond", 0],
    ]);
  });

  it("gives up with StructuredOutputError after maxAttempts", async () => {
    const d = decisionsWith([textReply("nope"), textReply("still nope"), textReply('{"answer":1}')]);
    const failure = d.decisions.generateObject(schema, { maxAttempts: 2 });
    await expect(failure).rejects.toBeInstanceOf(StructuredOutputError);
    await expect(failure).rejects.toMatchObject({ attempts: 2, text: "still nope" });
    expect(d.step.requests).toHaveLength(2);
    expect(eventsOf(d.events, "steering_mode")).toHaveLength(2);
  });

  it("reports the calls an object decides on as steering_mode steer", async () => {
    const plan = z.object({ steps: z.array(z.string()) });
    const d = decisionsWith([textReply("no plan"), textReply('{"steps":["a","b","c"]}')]);
    await d.decisions.generateObject(plan, { toolCallsOf: (object) => object.steps.length });
    expect(eventsOf(d.events, "steering_mode").map((e) => [e.mode, e.queueSize])).toEqual([
      ["respond", 0],
      ["steer", 3],
    ]);
  });
});

describe("ModelDecisions, what the measured survivors showed untested", () => {
  it("keeps the text of a reply whose repeated call ids it renames", async () => {
    const d = decisionsWith([callsReply([call("x"), call("x")], { text: "Twice." })]);
    const decision = await d.decisions.decide({});
    expect(decision.message.content).toEqual([
      { type: "text", text: "Twice." },
      { type: "toolCall", id: "x", name: "echo", args: { text: "x" } },
      { type: "toolCall", id: "x_2", name: "echo", args: { text: "x" } },
    ]);
  });

  it("asks shouldStop only after the first call, and calls the model again when it says no", async () => {
    const shouldStop = vi.fn(() => false);
    const steering = new MessageInbox(new MessageQueue(), () => [], new FakeClock());
    const d = decisionsWith([textReply("one"), textReply("two")], { hooks: { shouldStop }, steering });
    await d.decisions.decide({});
    expect(shouldStop).not.toHaveBeenCalled();
    const second = await d.decisions.decide({});
    expect(second.mode === "respond" && second.text).toBe("two");
    expect(shouldStop).toHaveBeenCalledTimes(1);
    expect(shouldStop).toHaveBeenCalledWith(expect.objectContaining({ step: 1 }));
  });

  it("takes the slow path without shouldStop when a steering callback is set", async () => {
    const steering = new MessageInbox(new MessageQueue(), () => [], new FakeClock());
    const d = decisionsWith([textReply("one")], { steering });
    const decision = await d.decisions.decide({});
    expect(decision.mode === "respond" && decision.text).toBe("one");
  });

  it("ends the assistant message with the stop reason of the finish reason", async () => {
    const d = decisionsWith([
      textReply("a", { finishReason: "error" }),
      textReply("b", { finishReason: "content-filter" }),
    ]);
    expect((await d.decisions.decide({})).message.stopReason).toBe("error");
    expect((await d.decisions.decide({})).message.stopReason).toBe("other");
  });

  it("names and describes the expected object only when asked to", async () => {
    const schema = z.object({ answer: z.number() });
    const d = decisionsWith([textReply('{"answer":1}'), textReply('{"answer":2}')]);
    await d.decisions.generateObject(schema, { name: "verdict", description: "The verdict." });
    await d.decisions.generateObject(schema, {});
    const [named, plain] = d.step.requests.map((r) => r.settings?.responseFormat);
    expect(named).toMatchObject({ type: "json", name: "verdict", description: "The verdict." });
    expect(Object.keys(plain ?? {}).sort()).toEqual(["schema", "type"]);
  });
});
