import "@agent-core/agentic";
import { describe, expect, it } from "vitest";
import { createCliAgent, parseAgentOptions, SYSTEM_PROMPT } from "./agent-options.js";
import { createDemoModel } from "./demo-model.js";
import { UsageError } from "./usage-error.js";

describe("parseAgentOptions", () => {
  it("gives the defaults when no option is set, and keeps the environment", () => {
    const env = { OPENAI_API_KEY: "k", AGENT_CORE_MODEL: "m" };
    expect(parseAgentOptions({}, env)).toEqual({
      modelEnv: env,
      config: {
        systemPrompt: SYSTEM_PROMPT,
        orchestrator: undefined,
        limits: { maxCycles: 10 },
        // A model that never answers must not hold the command forever.
        timeouts: { firstChunkMs: 120_000, chunkMs: 60_000 },
      },
    });
  });

  it("keeps the default of a model limit its option does not set", () => {
    expect(parseAgentOptions({ "first-chunk-ms": "500000" }, {}).config.timeouts).toEqual({
      firstChunkMs: 500_000,
      chunkMs: 60_000,
    });
    expect(parseAgentOptions({ "chunk-ms": "1000", "total-ms": "9000" }, {}).config.timeouts).toEqual({
      firstChunkMs: 120_000,
      chunkMs: 1000,
      totalMs: 9000,
    });
  });

  it("turns every option into the agent's setting, and --model and --base-url override the environment", () => {
    const options = parseAgentOptions(
      {
        model: "llama3.2",
        "base-url": "http://localhost:11434/v1",
        system: "Be brief.",
        "max-cycles": "4",
        "total-ms": "60000",
        "step-ms": "20000",
        "first-chunk-ms": "5000",
        "chunk-ms": "3000",
        "tool-ms": "1000",
        "parallel-tools": true,
        "max-concurrency": "3",
        "stall-calls": "4",
        "stall-results": "5",
      },
      { OPENAI_BASE_URL: "https://example.test/v1", AGENT_CORE_MODEL: "gpt-4o-mini", OTHER: "kept" },
    );
    expect(options.modelEnv).toEqual({
      OPENAI_BASE_URL: "http://localhost:11434/v1",
      AGENT_CORE_MODEL: "llama3.2",
      OTHER: "kept",
    });
    expect(options.config).toEqual({
      systemPrompt: "Be brief.",
      orchestrator: undefined,
      limits: { maxCycles: 4 },
      timeouts: { totalMs: 60_000, stepMs: 20_000, firstChunkMs: 5000, chunkMs: 3000, toolMs: 1000 },
      toolExecution: "parallel",
      maxConcurrency: 3,
      stall: { repeatedCalls: 4, repeatedResults: 5 },
    });
  });

  it("--no-stall turns stall detection off", () => {
    expect(parseAgentOptions({ "no-stall": true }, {}).config.stall).toBe(false);
  });

  it.each([
    [{ "total-ms": "0" }, '--total-ms must be a whole number >= 1, got "0".'],
    [{ "tool-ms": "1.5" }, '--tool-ms must be a whole number >= 1, got "1.5".'],
    [{ "step-ms": "-3" }, '--step-ms must be a whole number >= 1, got "-3".'],
    [{ "max-cycles": "x" }, '--max-cycles must be a whole number >= 1, got "x".'],
    [{ "stall-calls": "1" }, '--stall-calls must be a whole number >= 2, got "1".'],
    [{ "max-concurrency": "2" }, "--max-concurrency is for parallel tools: add --parallel-tools."],
    [{ "parallel-tools": true, "max-concurrency": "0" }, "--max-concurrency must be a whole number >= 1"],
    [{ "no-stall": true, "stall-results": "3" }, "--no-stall turns stall detection off"],
    // plan-execute runs a plan's steps at its own concurrency: the options would look as if they worked.
    [
      { orchestrator: "plan-execute", "parallel-tools": true },
      "--parallel-tools does not change how plan-execute runs a plan's steps",
    ],
    [
      { orchestrator: "plan-execute", "parallel-tools": true, "max-concurrency": "2" },
      "--parallel-tools does not change how plan-execute runs a plan's steps",
    ],
    [
      { "base-url": "localhost:11434" },
      '--base-url must be an http:// or https:// URL, got "localhost:11434".',
    ],
    [{ "base-url": "ftp://example.test" }, "--base-url must be an http:// or https:// URL"],
  ])("rejects %j with a usage error", (values, message) => {
    expect(() => parseAgentOptions(values, {})).toThrow(UsageError);
    expect(() => parseAgentOptions(values, {})).toThrow(message);
  });
});

describe("createCliAgent", () => {
  it("makes an agent with the demo tools, the settings and the history to start from", () => {
    const messages = [{ role: "user" as const, content: "hi" }];
    const agent = createCliAgent(parseAgentOptions({}, {}), createDemoModel(), messages);
    expect(agent.tools.names()).toEqual(["calculator", "get_current_time"]);
    expect(agent.orchestrator.name).toBe("agentic");
    expect(agent.messages).toEqual(messages);
  });
});
