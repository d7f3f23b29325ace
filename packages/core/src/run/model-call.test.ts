import { describe, expect, it } from "vitest";
import { Activity } from "./activity.js";
import { ModelCall, type ModelCallSetup } from "./model-call.js";
import { eventsOf, runHarness, stubModel } from "./run-fixtures.test-support.js";

function callSetup() {
  const h = runHarness();
  const setup: ModelCallSetup = {
    abortScope: h.setup.abortScope,
    retry: h.setup.retry,
    timeouts: { stepMs: 5000 },
    events: h.publisher,
    metrics: h.metrics,
    clock: h.clock,
    activity: new Activity(),
  };
  const callOf = (streamsText: boolean) =>
    new ModelCall(
      setup,
      stubModel,
      [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      [],
      undefined,
      streamsText,
    );
  return { ...h, setup, callOf };
}

describe("ModelCall", () => {
  it("is the request the model step reads, with the run's scope, retry and time limits", () => {
    const c = callSetup();
    const call = c.callOf(true);
    expect(call.model).toBe(stubModel);
    expect(call.abortScope).toBe(c.setup.abortScope);
    expect(call.retry).toBe(c.setup.retry);
    expect(call.timeouts).toEqual({ stepMs: 5000 });
  });

  it("publishes streamed text as text_delta, indexed per call", () => {
    const c = callSetup();
    const first = c.callOf(true);
    first.onText("Hel");
    first.onText("lo");
    c.callOf(true).onText("Again");
    expect(eventsOf(c.events, "text_delta").map(({ text, index }) => [text, index])).toEqual([
      ["Hel", 0],
      ["lo", 1],
      ["Again", 0],
    ]);
  });

  it("publishes no text for a call that does not stream it (structured output)", () => {
    const c = callSetup();
    c.callOf(false).onText('{"a":1}');
    expect(c.events).toEqual([]);
  });

  it("publishes reasoning as thinking, whether or not it streams text", () => {
    const c = callSetup();
    c.callOf(false).onReasoning("hmm");
    expect(eventsOf(c.events, "thinking").map((e) => e.text)).toEqual(["hmm"]);
  });

  it("counts itself in flight until settled, then adds its time to the metrics", () => {
    const c = callSetup();
    c.metrics.modelMs = 5;
    const first = c.callOf(true);
    c.clock.advance(30);
    const second = c.callOf(true);
    expect(c.setup.activity.inFlight).toBe(2);
    c.clock.advance(12);
    first.settled();
    expect(c.setup.activity.inFlight).toBe(1);
    expect(c.metrics.modelMs).toBe(5 + 42);
    second.settled();
    expect(c.setup.activity.inFlight).toBe(0);
    expect(c.metrics.modelMs).toBe(5 + 42 + 12);
  });
});
