import "@agent-core/agentic";
import {
  Agent,
  CLOCK,
  type Clock,
  defineTool,
  EVENT_SINK,
  type EventSink,
  ID_SOURCE,
  type IdSource,
  MODEL_STEP,
  type ModelStep,
  type ModelStepResult,
  rootContainer,
  TOOL_RUNNER,
  type ToolRunner,
} from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

// A run is assembled from services resolved by token from the agent's container: swap them and
// no orchestrator changes. These tests are what a durable runtime or a tracer relies on.

/** A clock that only moves when asked: every reading is one millisecond later. */
function steppingClock(start = 1_700_000_000_000): Clock {
  let now = start;
  return { now: () => now++, monotonic: () => now++ };
}

function countingIds(): IdSource {
  let next = 0;
  return { runId: () => `run-${++next}` };
}

const add = defineTool({
  name: "add",
  description: "Adds two numbers.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

/** The model of every test here: three tool calls over two replies, the answer, the follow-up's answer. */
const script3 = () =>
  scriptedModel([
    [script.reasoning("Adding."), script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })],
    [
      script.toolCall("add", { a: 3, b: 4 }, { id: "c2" }),
      script.toolCall("add", { a: 5, b: 6 }, { id: "c3" }),
    ],
    [script.text("3, 7 and 11")],
    [script.text("You're welcome.")],
  ]);

/** One agent with the deterministic services, on a container of its own; its events as JSON lines. */
async function eventLog(model = script3(), services: Record<string, unknown> = {}): Promise<string> {
  const container = rootContainer.createChildContainer();
  container.registerInstance(CLOCK, steppingClock());
  container.registerInstance(ID_SOURCE, countingIds());
  for (const [token, service] of Object.entries(services))
    container.registerInstance(Symbol.for(`agent-core.${token}`), service);
  const agent = new Agent({ provider: model, tools: [add], container, toolExecution: "parallel" });
  agent.steer("Use whole numbers.");
  agent.followUp("Thanks!");
  const first = agent.prompt("Add 1+2, 3+4 and 5+6.");
  await first.result();
  return first.events.map((event) => JSON.stringify(event)).join("\n");
}

describe("services by token", () => {
  it("gives byte-identical event logs for two runs with the same clock, ids and model", async () => {
    const first = await eventLog(script3());
    const second = await eventLog(script3());
    expect(second).toBe(first);
    // The swapped services are the ones used: the ids and the clock show in every event.
    expect(first).toContain('"runId":"run-1"');
    expect(first).toContain('"ts":1700000000');
    expect(first).not.toMatch(/"runId":"[0-9a-f]{8}-/);
    expect(first.split("\n").length).toBeGreaterThan(15);
  });

  it("stamps prompts, steering and follow-ups with the agent's clock", async () => {
    const container = rootContainer.createChildContainer();
    container.registerInstance(CLOCK, steppingClock(5_000));
    const agent = new Agent({ provider: scriptedModel([[script.text("a")], [script.text("b")]]), container });
    agent.followUp("more");
    const result = await agent.prompt("hi").result();
    const stamps = result.messages
      .filter((m) => m.role === "user")
      .map((m) => (m as { timestamp?: number }).timestamp);
    expect(stamps.every((stamp) => typeof stamp === "number" && stamp >= 5_000 && stamp < 6_000)).toBe(true);
  });

  it("takes services registered on the agent's container after steer() and before the first prompt", async () => {
    // A runtime that gets the agent once it was steered (the durable one's runtime.prompt()).
    const agent = new Agent({ provider: scriptedModel([[script.text("a")]]) });
    agent.steer("Mind the budget.");
    agent.followUp("And then?");
    agent.container.registerInstance(ID_SOURCE, countingIds());
    agent.container.registerInstance(CLOCK, steppingClock(7_000));
    const run = agent.prompt("hi");
    expect(run.runId).toBe("run-1");
    expect(run.events[0]?.ts).toBeGreaterThanOrEqual(7_000);
    await run.result();
  });

  it("lets a runtime record every model step and replay the run without the model", async () => {
    const recorded: ModelStepResult[] = [];
    const inner = rootContainer.resolve(MODEL_STEP);
    const recording: ModelStep = {
      run: (request) =>
        inner.run(request).then((step) => {
          recorded.push(structuredClone(step));
          return step;
        }),
    };
    let replayed = 0;
    const replaying: ModelStep = {
      // What the model streamed is told again, then the recorded result stands for the call.
      run: async (request) => {
        const step = structuredClone(recorded[replayed++] as ModelStepResult);
        for (const block of step.content) {
          if (block.type === "text") request.onText?.(block.text);
          if (block.type === "thinking") request.onReasoning?.(block.text);
        }
        return step;
      },
    };
    const live = await eventLog(script3(), { ModelStep: recording });
    const silent = scriptedModel([]);
    const replay = await eventLog(silent, { ModelStep: replaying });
    expect(replay.split("\n")).toEqual(live.split("\n"));
    expect(silent.doStreamCalls).toHaveLength(0);
    expect(replayed).toBe(4);
  });

  it("streams text and reasoning through a model step of the app's own that passes a copy of the request on, with a field changed", async () => {
    const inner = rootContainer.resolve(MODEL_STEP);
    const agent = new Agent({
      provider: scriptedModel([[script.reasoning("thinking it over"), script.text("Hello there")]]),
    });
    // The natural way to change a request: spread it. Its callbacks are the run's events.
    agent.container.registerInstance(MODEL_STEP, {
      run: (request) => inner.run({ ...request, settings: { ...request.settings, temperature: 0 } }),
    });
    const run = agent.prompt("hi");
    const streamed: string[] = [];
    for await (const event of run)
      if (event.type === "text_delta" || event.type === "thinking")
        streamed.push(`${event.type}:${event.text}`);
    expect((await run.result()).text).toBe("Hello there");
    expect(streamed.join("")).toContain("thinking:");
    expect(
      streamed
        .filter((s) => s.startsWith("text_delta:"))
        .map((s) => s.slice(11))
        .join(""),
    ).toBe("Hello there");
  });

  it("hands every tool a stable idempotency key, runId:toolCallId", async () => {
    const keys: string[] = [];
    const keyed = defineTool({
      name: "add",
      description: "Adds two numbers.",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }, { idempotencyKey }) => {
        keys.push(idempotencyKey);
        return a + b;
      },
    });
    const container = rootContainer.createChildContainer();
    container.registerInstance(ID_SOURCE, countingIds());
    const agent = new Agent({ provider: script3(), tools: [keyed], container });
    await agent.prompt("Add.").result();
    expect(keys).toEqual(["run-1:c1", "run-1:c2", "run-1:c3"]);
  });

  it("runs every tool call through the tool runner registered for the agent", async () => {
    const seen: string[] = [];
    const inner = rootContainer.resolve(TOOL_RUNNER);
    const runner: ToolRunner = {
      run: (request) => {
        seen.push(`${request.runId}:${request.call.id}`);
        return inner.run(request);
      },
    };
    const log = await eventLog(script3(), { ToolRunner: runner });
    expect(seen).toEqual(["run-1:c1", "run-1:c2", "run-1:c3"]);
    expect(log).toContain('"status":"ok"');
  });

  it("hands every event to a registered event sink, after the run's own stream", async () => {
    const sunk: string[] = [];
    const sink: EventSink = { publish: (event) => sunk.push(JSON.stringify(event)) };
    const log = await eventLog(script3(), { EventSink: sink });
    expect(sunk.join("\n")).toBe(log);
    expect(EVENT_SINK).toBe(Symbol.for("agent-core.EventSink"));
  });

  it("finds an event sink registered on a parent of the agent's container", async () => {
    const sunk: string[] = [];
    const parent = rootContainer.createChildContainer();
    parent.registerInstance(EVENT_SINK, { publish: (event: { type: string }) => sunk.push(event.type) });
    const model = scriptedModel([[script.text("Hi.")]]);
    const agent = new Agent({ provider: model, container: parent.createChildContainer() });
    await agent.prompt("Hello").result();
    expect(sunk[0]).toBe("agent_start");
    expect(sunk.at(-1)).toBe("agent_end");
  });

  it("finds services registered under the tokens' global names, as another copy of the package would", async () => {
    const log = await eventLog(script3(), {
      Clock: steppingClock(42_000),
      IdSource: { runId: () => "named-run" },
    });
    expect(log).toContain('"runId":"named-run"');
    expect(log).toMatch(/"ts":42\d{3},/);
    expect(log).not.toContain('"ts":1700000000');
  });
});
