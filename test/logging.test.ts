import "@agent-core/agentic";
import { Writable } from "node:stream";
import { runInNewContext } from "node:vm";
import {
  Agent,
  type AgentConfig,
  AgentConfigError,
  defineTool,
  failSafeLogger,
  InvalidConfigError,
  LOGGER,
  type Logger,
  rootContainer,
  silentLogger,
  TRACING,
} from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import { APICallError } from "@ai-sdk/provider";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { unhandledRejectionsOf } from "./unhandled-rejections.js";

/** A logger that keeps every line: its level, fields and message. */
function recordingLogger(): Logger & {
  lines: { level: string; fields: Record<string, unknown>; message: string }[];
} {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      lines.push({ level, fields, message });
    };
  return { lines, error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") };
}

const add = defineTool({
  name: "add",
  description: "Adds two numbers.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

const twoToolsThenAnswer = () =>
  scriptedModel([
    [script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })],
    [script.toolCall("add", { a: 3, b: 4 }, { id: "c2" })],
    [script.text("3 and 7")],
  ]);

afterEach(() => vi.restoreAllMocks());

describe("the logger", () => {
  it("every line of a run has its runId", async () => {
    const logger = recordingLogger();
    const agent = new Agent({ provider: twoToolsThenAnswer(), tools: [add], logger });
    agent.on("turn_end", () => {
      throw new Error("a broken listener");
    });
    const { runId } = await agent.prompt("add them").result();

    expect(logger.lines.length).toBeGreaterThan(5);
    for (const line of logger.lines) expect(line.fields.runId).toBe(runId);
    expect(logger.lines.map((line) => `${line.level} ${line.message}`)).toEqual(
      expect.arrayContaining([
        "info run started",
        "debug tool call",
        "debug tool result",
        "error an event listener threw",
        "info run ended",
      ]),
    );
    expect(logger.lines.at(-1)?.fields).toMatchObject({ stopReason: "completed", cycles: 3 });
  });

  it("a retried model call: a warn line per retry, with the wait and the error", async () => {
    const busy = new APICallError({
      message: "HTTP 529",
      url: "http://127.0.0.1/v1/chat/completions",
      requestBodyValues: {},
      statusCode: 529,
      isRetryable: true,
    });
    const logger = recordingLogger();
    const agent = new Agent({
      provider: scriptedModel([[script.error(busy)], [script.text("at last")]]),
      retry: { initialDelayMs: 3 },
      logger,
    });
    const { runId, text } = await agent.prompt("hi").result();

    expect(text).toBe("at last");
    expect(logger.lines.filter((line) => line.level === "warn")).toEqual([
      {
        level: "warn",
        fields: { runId, retry: 1, delayMs: 3, error: "HTTP 529" },
        message: "model call retried",
      },
    ]);
  });

  it("a run with a logger streams its text and reasoning as one without does", async () => {
    const reply = () => scriptedModel([[script.reasoning("Adding."), script.text("3")]]);
    const streamed = async (config: AgentConfig) => {
      const run = new Agent(config).prompt("1+2?");
      await run.result();
      const events = run.events;
      return events
        .filter((event) => event.type === "text_delta" || event.type === "thinking")
        .map((event) => event.type);
    };
    expect(await streamed({ provider: reply() })).toEqual(["thinking", "text_delta"]);
    expect(await streamed({ provider: reply(), logger: recordingLogger() })).toEqual([
      "thinking",
      "text_delta",
    ]);
  });

  it("a logger that throws, and a listener error reported to it, leave the run to end as it would", async () => {
    const fails = () => {
      throw new Error("the log is down");
    };
    const logger = { error: fails, warn: fails, info: fails, debug: fails };
    const agent = new Agent({ provider: twoToolsThenAnswer(), tools: [add], logger });
    agent.on("agent_start", () => {
      throw new Error("a broken listener");
    });
    const first = await agent.prompt("add them").result();
    expect(first).toMatchObject({ stopReason: "completed", text: "3 and 7" });
    // Not left busy: the next prompt runs.
    const onceMore = new Agent({
      provider: scriptedModel([[script.text("hi")]]),
      onListenerError: fails,
    });
    onceMore.on("agent_end", fails);
    expect((await onceMore.prompt("hello").result()).stopReason).toBe("completed");
    expect(onceMore.busy).toBe(false);
  });

  it("an async logger whose lines reject: the run ends as it would, and no rejection goes unhandled", async () => {
    const rejects = async () => {
      throw new Error("the log is down");
    };
    const logger = { error: rejects, warn: rejects, info: rejects, debug: rejects };
    // The listener's throw is reported at `error`, through the agent's own line rather than a run's.
    const unhandled = await unhandledRejectionsOf(() => completesWithBrokenListener({ logger }));
    expect(unhandled).toEqual([]);
  });

  it("an async logger of another realm (a vm context's promises): no rejection goes unhandled", async () => {
    // Its promises are not this realm's `Promise`, yet Node reports their rejections all the same.
    const rejects = runInNewContext(
      "async () => { throw new Error('the log is down'); }",
    ) as () => Promise<void>;
    const logger = { error: rejects, warn: rejects, info: rejects, debug: rejects };
    const unhandled = await unhandledRejectionsOf(() => completesWithBrokenListener({ logger }));
    expect(unhandled).toEqual([]);
  });

  it("failSafeLogger: a level that throws or rejects loses its line, the caller goes on, and no rejection goes unhandled", async () => {
    const written: string[] = [];
    const logger = failSafeLogger({
      error: () => {
        throw new Error("the log disk is full");
      },
      warn: async () => {
        throw new Error("the log is down");
      },
      info: (_, message) => {
        written.push(message);
      },
      debug: runInNewContext("async () => { throw new Error('the log is down'); }") as () => Promise<void>,
    });
    const unhandled = await unhandledRejectionsOf(async () => {
      for (const level of ["error", "warn", "info", "debug"] as const) logger[level]({ runId: "r" }, level);
    });
    expect(unhandled).toEqual([]);
    expect(written).toEqual(["info"]);
  });

  it("failSafeLogger refuses, at once, what is no logger: it would lose every line without a word", () => {
    for (const notALogger of [undefined, null, {}, { error: () => {} }, "pino"]) {
      expect(() => failSafeLogger(notALogger as never)).toThrow(InvalidConfigError);
      expect(() => failSafeLogger(notALogger as never)).toThrow(
        "failSafeLogger(logger) needs a logger: an object with error, warn, info and debug functions (pino's shape).",
      );
    }
  });

  it("an async onListenerError whose promise rejects: the run ends as it would, and no rejection goes unhandled", async () => {
    const onListenerError = async () => {
      throw new Error("the error tracker is down");
    };
    const unhandled = await unhandledRejectionsOf(() => completesWithBrokenListener({ onListenerError }));
    expect(unhandled).toEqual([]);
  });

  it("a logger that throws at a stall nudge leaves the run to go on as it would", async () => {
    const fails = () => {
      throw new Error("the log is down");
    };
    const logger = { error: fails, warn: fails, info: fails, debug: fails };
    const same = () => [script.toolCall("add", { a: 1, b: 2 })];
    const model = scriptedModel([same(), same(), [script.text("stopped repeating")]]);
    const quiet = new Agent({ provider: model, tools: [add] });
    const loud = new Agent({
      provider: scriptedModel([same(), same(), [script.text("stopped repeating")]]),
      tools: [add],
      logger,
    });
    const expected = await quiet.prompt("add").result();
    const result = await loud.prompt("add").result();
    expect(result.stopReason).toBe("completed");
    expect(result.messages.map((m) => ("content" in m ? m.content : m.role))).toEqual(
      expected.messages.map((m) => ("content" in m ? m.content : m.role)),
    );
    expect(result.messages.some((m) => m.role === "toolResult" && m.status === "skipped")).toBe(true);
  });

  it("a tracer whose observer throws on every event and nudge: the log lines are all written", async () => {
    const fails = () => {
      throw new Error("the tracer is broken");
    };
    const same = () => [script.toolCall("add", { a: 1, b: 2 })];
    const model = () => scriptedModel([same(), same(), [script.text("stopped repeating")]]);
    const untraced = recordingLogger();
    await new Agent({ provider: model(), tools: [add], logger: untraced }).prompt("add").result();

    const logger = recordingLogger();
    const container = rootContainer.createChildContainer();
    container.registerInstance(TRACING, {
      startRun: () => ({
        publish: fails,
        nudged: fails,
        modelStep: (inner) => inner,
        toolRunner: (inner) => inner,
      }),
    });
    await new Agent({ provider: model(), tools: [add], logger, container }).prompt("add").result();
    const messages = (lines: typeof logger.lines) => lines.map((line) => `${line.level} ${line.message}`);
    expect(messages(logger.lines)).toEqual(messages(untraced.lines));
    expect(messages(logger.lines)).toContain("warn the model was nudged (repeated tool call)");
  });

  it("a failed run logs its error; an aborted one a warning", async () => {
    const logger = recordingLogger();
    const failing = new Agent({ logger });
    await failing.prompt("no provider").result();
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: "error",
        message: "run failed",
        fields: expect.objectContaining({ code: "no_provider" }),
      }),
    );

    const aborted = new Agent({ provider: scriptedModel([[script.hang()]]), logger });
    const run = aborted.prompt("hang");
    setTimeout(() => aborted.abort(), 5);
    await run.result();
    expect(logger.lines).toContainEqual(expect.objectContaining({ level: "warn", message: "run aborted" }));
  });

  it("the LOGGER service of the agent's container, unless config.logger is set", async () => {
    const registered = recordingLogger();
    const container = rootContainer.createChildContainer();
    container.registerInstance(LOGGER, registered);
    await new Agent({ provider: scriptedModel([[script.text("hi")]]), container }).prompt("hi").result();
    expect(registered.lines.map((line) => line.message)).toContain("run ended");

    const own = recordingLogger();
    const before = registered.lines.length;
    await new Agent({ provider: scriptedModel([[script.text("hi")]]), container, logger: own })
      .prompt("hi")
      .result();
    expect(registered.lines).toHaveLength(before);
    expect(own.lines.map((line) => line.message)).toContain("run ended");
  });

  it("a LOGGER service without the four levels: the first prompt is refused with InvalidConfigError, unless config.logger is set", async () => {
    const container = rootContainer.createChildContainer();
    container.registerInstance(LOGGER, { info: () => {}, error: () => {} } as unknown as Logger);
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]), container });
    expect(() => agent.prompt("hi")).toThrow(InvalidConfigError);
    expect(() => agent.prompt("hi")).toThrow("The LOGGER service of the agent's container is no logger");
    expect(agent.busy).toBe(false);

    const own = recordingLogger();
    const withOwn = new Agent({ provider: scriptedModel([[script.text("hi")]]), container, logger: own });
    expect((await withOwn.prompt("hi").result()).stopReason).toBe("completed");
    expect(own.lines.map((line) => line.message)).toContain("run ended");
  });

  it("is silent by default, and the library never writes to the console", async () => {
    expect(rootContainer.resolve(LOGGER)).toBe(silentLogger);
    const consoleCalls = (["log", "info", "warn", "error", "debug"] as const).map((method) =>
      vi.spyOn(console, method).mockImplementation(() => {}),
    );
    const agent = new Agent({ provider: twoToolsThenAnswer(), tools: [add] });
    agent.on("tool_result", () => {
      throw new Error("a broken listener");
    });
    await agent.prompt("add them").result();
    await new Agent().prompt("no provider").result();
    for (const call of consoleCalls) expect(call).not.toHaveBeenCalled();
  });

  it("a pino logger plugs in as is: JSON lines with runId", async () => {
    const written: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        written.push(String(chunk));
        done();
      },
    });
    const logger = pino({ level: "debug" }, destination);
    const { runId } = await new Agent({ provider: twoToolsThenAnswer(), tools: [add], logger })
      .prompt("add them")
      .result();

    const lines = written
      .join("")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) expect(line.runId).toBe(runId);
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: "run ended", stopReason: "completed" });
  });

  it("a logger without the four levels is refused", () => {
    expect(() => new Agent({ logger: { info() {} } as never })).toThrow(AgentConfigError);
  });

  it("a logger whose levels cannot be read (a getter or a Proxy that throws) is refused as one without them", () => {
    const unreadable = new Proxy({} as Logger, {
      get() {
        throw new Error("no such level");
      },
    });
    expect(() => new Agent({ logger: unreadable })).toThrow(AgentConfigError);

    const container = rootContainer.createChildContainer();
    container.registerInstance(LOGGER, unreadable);
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]), container });
    expect(() => agent.prompt("hi")).toThrow(InvalidConfigError);
    expect(agent.busy).toBe(false);
  });
});

/** Runs two tools and an answer with a `tool_result` listener that throws: the run completes as it would. */
async function completesWithBrokenListener(
  config: Pick<AgentConfig, "logger" | "onListenerError">,
): Promise<void> {
  const agent = new Agent({ provider: twoToolsThenAnswer(), tools: [add], ...config });
  agent.on("tool_result", () => {
    throw new Error("a broken listener");
  });
  expect(await agent.prompt("add them").result()).toMatchObject({ stopReason: "completed", text: "3 and 7" });
}
