import "@agent-core/agentic";
import {
  Agent,
  type AgentEvent,
  CLOCK,
  EVENT_SINK,
  ID_SOURCE,
  InvalidConfigError,
  type Logger,
  MODEL_STEP,
  ProviderError,
  parseAgentEvent,
  rootContainer,
  TOOL_RUNNER,
  type ToolRunner,
  TRACING,
} from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { add } from "./fixtures.js";

// Services a runtime swaps in (architecture.md, "Services a runtime can swap") that misbehave:
// each must end in a clear error or a logged line, never a crash, a hang, an agent left busy, or
// a silently wrong value in the events.

/** A tool call, its answer; then a second prompt's answer. */
const toolThenText = () =>
  scriptedModel([
    [script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })],
    [script.text("3")],
    [script.text("again")],
  ]);

function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      lines.push({ level, fields, message });
    };
  const logger: Logger = { error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") };
  return { logger, lines };
}

async function drain(agent: Agent, prompt: string) {
  const run = agent.prompt(prompt);
  const events: AgentEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, result: await run.result() };
}

describe("an EVENT_SINK that throws or rejects", () => {
  it("is logged with the event's run and type; the run, its stream and the listeners go on", async () => {
    const { logger, lines } = recordingLogger();
    const agent = new Agent({ provider: toolThenText(), tools: [add], logger });
    agent.container.registerInstance(EVENT_SINK, {
      publish: (event: AgentEvent) => {
        if (event.type === "agent_start" || event.type === "agent_end") throw new Error("sink down");
      },
    });
    const heard: string[] = [];
    agent.on("*", (event) => heard.push(event.type));
    const { events, result } = await drain(agent, "add");

    expect(result.stopReason).toBe("completed");
    expect(events.map((event) => event.type)).toEqual(heard);
    expect(heard.at(0)).toBe("agent_start");
    expect(heard.at(-1)).toBe("agent_end");
    const sinkLines = lines.filter((line) => line.message === "the event sink threw");
    expect(sinkLines.map((line) => [line.level, line.fields.eventType, line.fields.runId])).toEqual([
      ["error", "agent_start", result.runId],
      ["error", "agent_end", result.runId],
    ]);
    expect(sinkLines[0]?.fields.err).toEqual(new Error("sink down"));
    expect(agent.busy).toBe(false);
    expect((await drain(agent, "again")).result.stopReason).toBe("completed");
  });

  it("a sink whose publish returns a rejected promise: logged, no unhandled rejection", async () => {
    const { logger, lines } = recordingLogger();
    const agent = new Agent({ provider: toolThenText(), tools: [add], logger });
    agent.container.registerInstance(EVENT_SINK, {
      publish: (event: AgentEvent) =>
        event.type === "tool_result" ? Promise.reject(new Error("write failed")) : undefined,
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const { result } = await drain(agent, "add");
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(result.stopReason).toBe("completed");
      expect(unhandled).toEqual([]);
      expect(
        lines.filter((line) => line.message === "the event sink threw").map((line) => line.fields.eventType),
      ).toEqual(["tool_result"]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

describe("a CLOCK whose reading throws or is no finite number", () => {
  for (const [name, bad] of [
    [
      "throws",
      () => () => {
        throw new Error("clock broke");
      },
    ],
    ["returns NaN", () => () => Number.NaN],
    ["returns a string", () => () => "5" as unknown as number],
  ] as const) {
    it(`now() ${name} after the run started: the system time stands in, one warning, the run completes`, async () => {
      const { logger, lines } = recordingLogger();
      const agent = new Agent({ provider: toolThenText(), tools: [add], logger });
      let readings = 0;
      const broken = bad();
      agent.container.registerInstance(CLOCK, {
        now: () => (++readings > 2 ? broken() : 1_700_000_000_000 + readings),
        monotonic: () => performance.now(),
      });
      const before = Date.now();
      const { events, result } = await drain(agent, "add");

      expect(result.stopReason).toBe("completed");
      expect(readings).toBeGreaterThan(3);
      for (const event of events) expect(Number.isFinite(event.ts)).toBe(true);
      // Before the clock broke its own time; after, the system's (never earlier: `ts` only grows).
      expect(events[0]?.ts).toBeLessThan(1_700_000_000_010);
      expect(events.at(-1)?.ts).toBeGreaterThanOrEqual(before);
      for (const message of result.messages) expect(Number.isFinite(message.timestamp)).toBe(true);
      const warnings = lines.filter((line) => line.level === "warn");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.fields.reading).toBe("now");
      expect(warnings[0]?.message).toContain("CLOCK");
      expect(agent.busy).toBe(false);
    });
  }

  it("monotonic() throws: the run completes with finite durations", async () => {
    const { logger, lines } = recordingLogger();
    const agent = new Agent({ provider: toolThenText(), tools: [add], logger });
    agent.container.registerInstance(CLOCK, {
      now: () => Date.now(),
      monotonic: () => {
        throw new Error("no monotonic time here");
      },
    });
    const { result } = await drain(agent, "add");
    expect(result.stopReason).toBe("completed");
    expect(Number.isFinite(result.metrics.modelMs)).toBe(true);
    expect(Number.isFinite(result.metrics.toolMs)).toBe(true);
    expect(lines.filter((line) => line.level === "warn").map((line) => line.fields.reading)).toEqual([
      "monotonic",
    ]);
  });

  it("a clock set back as the run goes on: each reading is held at the latest, so no duration is negative and every event keeps its schema", async () => {
    const agent = new Agent({ provider: toolThenText(), tools: [add] });
    let now = 1_700_000_000_000;
    let monotonic = 1_000_000;
    agent.container.registerInstance(CLOCK, {
      now: () => (now -= 1_000),
      monotonic: () => (monotonic -= 1_000),
    });
    const { events, result } = await drain(agent, "add");

    expect(result.stopReason).toBe("completed");
    for (const event of events) expect(() => parseAgentEvent(event)).not.toThrow();
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(result.metrics.modelMs).toBeGreaterThanOrEqual(0);
    expect(result.metrics.toolMs).toBeGreaterThanOrEqual(0);
    const stamps = result.messages
      .filter((message) => message.role !== "toolResult")
      .map((message) => message.timestamp as number);
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
  });

  it("a steer() before the first prompt is stamped with the system time when the clock throws", async () => {
    const { logger, lines } = recordingLogger();
    const agent = new Agent({ provider: toolThenText(), tools: [add], logger });
    agent.container.registerInstance(CLOCK, {
      now: () => {
        throw new Error("clock broke");
      },
      monotonic: () => performance.now(),
    });
    const before = Date.now();
    agent.steer("first this");
    agent.steer("and this");
    const { result } = await drain(agent, "add");
    expect(result.stopReason).toBe("completed");
    const steered = result.messages.filter((message) => message.role === "user" && message.content !== "add");
    expect(steered.map((message) => message.content)).toEqual(["first this", "and this"]);
    for (const message of steered) expect(message.timestamp).toBeGreaterThanOrEqual(before);
    // One clock, one warning: before the first prompt and in the run alike.
    expect(lines.filter((line) => line.level === "warn")).toHaveLength(1);
  });
});

describe("an ID_SOURCE whose runId() is no non-empty string", () => {
  for (const [name, id] of [
    ["a value of type number", 42],
    ["an empty string", ""],
    ["null", null],
  ] as const) {
    it(`${name}: prompt() throws InvalidConfigError, nothing is published, the agent is not busy`, async () => {
      const agent = new Agent({ provider: toolThenText(), tools: [add] });
      agent.container.registerInstance(ID_SOURCE, { runId: () => id as unknown as string });
      const heard: string[] = [];
      agent.on("*", (event) => heard.push(event.type));
      let thrown: unknown;
      try {
        agent.prompt("add");
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(InvalidConfigError);
      expect((thrown as Error).message).toContain(`returned ${name}`);
      expect(heard).toEqual([]);
      expect(agent.busy).toBe(false);
      expect(agent.messages).toEqual([]);
    });
  }
});

describe("a MODEL_STEP that resolves with something else than a ModelStepResult", () => {
  const defaultStep = rootContainer.resolve(MODEL_STEP);
  for (const [name, value, says] of [
    ["a number", 42, "resolved with a number"],
    ["an empty object", {}, "without a `content` array"],
    [
      "usage without token counts",
      {
        content: [{ type: "text", text: "hi" }],
        toolCalls: [],
        finishReason: "stop",
        usage: {},
        modelId: "m",
      },
      "without a `usage` of token counts",
    ],
  ] as const) {
    it(`${name}: the call fails with a ProviderError saying so; the history stays valid`, async () => {
      const agent = new Agent({ provider: toolThenText(), tools: [add] });
      let calls = 0;
      agent.container.registerInstance(MODEL_STEP, {
        run: (request) => (++calls === 2 ? Promise.resolve(value as never) : defaultStep.run(request)),
      });
      const { events, result } = await drain(agent, "add");
      expect(result.stopReason).toBe("error");
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error?.message).toContain(says);
      expect(events.find((event) => event.type === "error")).toMatchObject({ code: "provider_error" });
      // The first reply's call has its result; nothing of the malformed reply entered the history.
      expect(result.messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
      expect(Number.isFinite(result.usage.totalTokens)).toBe(true);
      expect((await drain(agent, "again")).result.stopReason).toBe("completed");
    });
  }
});

describe("a TOOL_RUNNER that gives something else than the call's tool result", () => {
  const defaultRunner = rootContainer.resolve(TOOL_RUNNER);
  for (const [name, given, says] of [
    ["a number", () => 42, "gave 42"],
    [
      "no tool result message",
      () => ({ role: "assistant", content: [] }),
      "gave an object that is no tool result message",
    ],
    [
      "another call's result",
      () => ({ role: "toolResult", toolCallId: "other", toolName: "add", content: "3", isError: false }),
      'gave the result of call "other" for call "c1"',
    ],
  ] as const) {
    it(`${name}: the run fails saying so, the call is answered, the next run works`, async () => {
      const agent = new Agent({ provider: toolThenText(), tools: [add] });
      let runs = 0;
      const runner: ToolRunner = {
        run: (request) => (++runs === 1 ? Promise.resolve(given() as never) : defaultRunner.run(request)),
      };
      agent.container.registerInstance(TOOL_RUNNER, runner);
      const { result } = await drain(agent, "add");
      expect(result.stopReason).toBe("error");
      expect(result.error?.code).toBe("orchestrator_error");
      expect(result.error?.message).toContain(`The tool runner (the TOOL_RUNNER service) ${says}`);
      const answer = result.messages.find((message) => message.role === "toolResult");
      expect(answer).toMatchObject({ toolCallId: "c1", isError: true });
      expect((await drain(agent, "again")).result.stopReason).toBe("completed");
    });
  }
});

describe("a TRACING service whose startRun gives no usable observer", () => {
  const passThrough = { publish() {}, nudged() {} };
  for (const [name, observer] of [
    ["42", () => 42],
    ["an object without methods", () => ({})],
    [
      "an observer whose modelStep decorator throws",
      () => ({
        ...passThrough,
        modelStep: () => {
          throw new Error("decorator broke");
        },
        toolRunner: (inner: ToolRunner) => inner,
      }),
    ],
    [
      "an observer whose toolRunner decorator gives no tool runner",
      () => ({ ...passThrough, modelStep: (inner: unknown) => inner, toolRunner: () => 42 }),
    ],
  ] as const) {
    it(`${name}: the run goes on untraced, with its log lines, and the agent takes the next prompt`, async () => {
      const { logger, lines } = recordingLogger();
      const agent = new Agent({ provider: toolThenText(), tools: [add], logger });
      agent.container.registerInstance(TRACING, { startRun: observer as never });
      const { events, result } = await drain(agent, "add");
      expect(result.stopReason).toBe("completed");
      expect(events.map((event) => event.type)).toContain("tool_result");
      // The run's log lines are written as they are with no tracer at all.
      expect(lines.some((line) => line.fields.runId === result.runId)).toBe(true);
      expect(agent.busy).toBe(false);
      expect((await drain(agent, "again")).result.stopReason).toBe("completed");
    });
  }
});
