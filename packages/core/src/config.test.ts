import type { LanguageModelV4 } from "@ai-sdk/provider";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { validateAgentConfig, validatePromptOptions } from "./agent-config.js";
import { type AgentConfigError, ownOptions, refuseUnknownKeys, validateOptions } from "./config-issues.js";
import { InvalidConfigError } from "./errors.js";
import { contextBudget } from "./history/context-budget.js";
import { keepRecent } from "./history/pipeline.js";
import { rootContainer } from "./orchestrator/registry.js";
import { defineTool } from "./tools/define-tool.js";
import { ToolRegistry } from "./tools/registry.js";

const model = {
  specificationVersion: "v4",
  provider: "test",
  modelId: "gpt-4o-mini",
  supportedUrls: {},
  doGenerate: async () => {
    throw new Error("not used");
  },
  doStream: async () => {
    throw new Error("not used");
  },
} as unknown as LanguageModelV4;

const echo = defineTool({
  name: "echo",
  description: "Echoes its input",
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }) => ({ text }),
});

/** `{ a: { b: value } }` for the path "a.b". */
function configAt(path: string, value: unknown): Record<string, unknown> {
  return path.split(".").reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Record<
    string,
    unknown
  >;
}

function threw(run: () => void): boolean {
  try {
    run();
    return false;
  } catch {
    return true;
  }
}

function issuesOf(validate: () => void): AgentConfigError["issues"] {
  try {
    validate();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidConfigError);
    expect(error).toMatchObject({ code: "invalid_config" });
    return (error as AgentConfigError).issues;
  }
  throw new Error("expected an InvalidConfigError");
}

const fn = () => undefined;
const ms = [NaN, -1, 0, Infinity, -Infinity, "5", null];
const msOrZero = [NaN, -1, Infinity, "5", null];
/** Node fires a timer longer than 2^31 − 1 ms at once: a delay past it is refused. */
const longestTimer = 2 ** 31 - 1;
const delays = [...ms, longestTimer + 1, 3e9];
const delaysOrZero = [...msOrZero, longestTimer + 1];
const hooks = [
  "beforeToolCall",
  "afterToolCall",
  "prepareStep",
  "shouldStop",
  "repairToolCall",
  "transformContext",
  "convertToLlm",
  "getSteeringMessages",
  "getFollowUpMessages",
  "onListenerError",
  "contextBudget.estimate",
  "contextBudget.onTruncate",
];

/** Each field with values outside its domain, and values on the edge of it. */
const fields: [path: string, bad: unknown[], good: unknown[]][] = [
  ["systemPrompt", [1, null, ["a"]], ["", "You are helpful."]],
  [
    "messages",
    ["x", null, [1], [{ content: "hi" }], [{ role: "user", content: 5 }]],
    [[], [{ role: "user", content: "hi" }], [{ role: "app-note", text: "kept" }]],
  ],
  ["limits", [3, "x", null, [1]], [{}]],
  ["limits.maxCycles", [0, -1, 1.5, NaN, Infinity, "3"], [1, 100]],
  ["limits.abortGraceMs", delaysOrZero, [0, 0.5, 250, longestTimer]],
  ["timeouts", [30, "x", null], [{}]],
  ...["totalMs", "stepMs", "firstChunkMs", "chunkMs", "toolMs"].map(
    (name): [string, unknown[], unknown[]] => [`timeouts.${name}`, delays, [1, 0.5, 60_000, longestTimer]],
  ),
  ["timeouts.tools", [5, "x", null], [{}, { search: 500 }]],
  ["timeouts.tools.search", delays, [1, 500, longestTimer]],
  ["toolExecution", ["concurrent", "", 1, true], ["sequential", "parallel"]],
  ["maxConcurrency", [0, -2, 2.5, NaN, Infinity, "4"], [1, 8]],
  ["stall", [true, 0, "off", null], [false, {}]],
  ["stall.repeatedCalls", [1, 0, 2.5, NaN, Infinity, "2"], [2, 5]],
  ["stall.repeatedResults", [1, -3, 3.5, NaN, "3"], [2, 3]],
  ["retry", [2, "x"], [{}]],
  ["retry.maxRetries", [-1, 1.5, NaN, Infinity, "2"], [0, 2]],
  ["retry.initialDelayMs", delaysOrZero, [0, 500, longestTimer]],
  ["retry.maxDelayMs", delaysOrZero, [0, 10_000, longestTimer]],
  ["retry.retryTimeouts", [1, "yes", null], [true, false]],
  ["contextBudget", [1000, "x"], [{ maxTokens: 1 }]],
  ["contextBudget.maxTokens", ms, [1, 2500]],
  ["contextBudget.contextWindow", ms, [8000]],
  ["contextBudget.ratio", [0, -0.5, 1.5, NaN, Infinity, "0.5"], [1, 0.75, 0.01]],
  ["contextBudget.systemTokens", msOrZero, [0, 300]],
  ["modelSettings", [1, "x", []], [{}, { temperature: 0 }]],
  ["provider", ["openai/gpt-4o", {}, { doStream: "x" }, null], [model]],
  [
    "orchestrator",
    ["", "  ", 3, {}, { name: "x" }, { run: fn }, { name: 1, run: fn }],
    ["agentic", { name: "mine", run: fn }],
  ],
  [
    "tools",
    [{ name: "echo" }, "echo", 1, null, new Map()],
    [[], [echo], new ToolRegistry([echo]), {}, { echo: { inputSchema: z.object({}), execute: () => 1 } }],
  ],
  ["container", [1, {}, null], [rootContainer, rootContainer.createChildContainer()]],
  ...hooks.map((path): [string, unknown[], unknown[]] => [
    path,
    ["x", 1, {}, null],
    [fn, async () => undefined],
  ]),
];

describe("validateAgentConfig", () => {
  it.each(fields)(
    "%s: every bad value is an InvalidConfigError naming the field and the value",
    (path, bad) => {
      for (const value of bad) {
        const issues = issuesOf(() => validateAgentConfig(configAt(path, value)));
        expect(issues).toEqual([{ path, message: expect.stringMatching(/^must be .+, got .+$/) }]);
        const shown =
          typeof value === "number" && !Number.isFinite(value) ? String(value) : JSON.stringify(value);
        expect(issues[0]?.message.endsWith(`, got ${shown}`)).toBe(true);
      }
    },
  );

  it.each(fields)("%s: values on the edge of its domain pass", (path, _bad, good) => {
    for (const value of good) expect(() => validateAgentConfig(configAt(path, value))).not.toThrow();
  });

  it("says what is expected and what it got, in one sentence", () => {
    const bad = () => validateAgentConfig({ timeouts: { toolMs: -5 } });
    expect(bad).toThrow(InvalidConfigError);
    expect(bad).toThrow(
      /^Invalid agent config: timeouts\.toolMs must be a number > 0 and <= 2147483647 \(milliseconds\), got -5\.$/,
    );
    expect(() => validateAgentConfig({ timeouts: { totalMs: NaN } })).toThrow(
      "timeouts.totalMs must be a number > 0 and <= 2147483647 (milliseconds), got NaN.",
    );
  });

  it("names every bad field, one line each, and lists them as issues", () => {
    const config = {
      timeouts: { toolMs: -5, tools: { search: 0 } },
      maxConcurrency: 0,
      stall: { repeatedCalls: "x" },
    };
    expect(() => validateAgentConfig(config)).toThrow(
      [
        "Invalid agent config:",
        "- timeouts.toolMs must be a number > 0 and <= 2147483647 (milliseconds), got -5.",
        "- timeouts.tools.search must be a number > 0 and <= 2147483647 (milliseconds), got 0.",
        "- maxConcurrency must be a whole number >= 1, got 0.",
        '- stall.repeatedCalls must be a whole number >= 2, got "x".',
      ].join("\n"),
    );
    expect(issuesOf(() => validateAgentConfig(config)).map((issue) => issue.path)).toEqual([
      "timeouts.toolMs",
      "timeouts.tools.search",
      "maxConcurrency",
      "stall.repeatedCalls",
    ]);
  });

  // Exported for apps that check a config before building agents: it must answer as `new Agent()`.
  it("names a setting whose getter throws, with the getter's error as cause", () => {
    const boom = new Error("getter");
    const config = {
      limits: {
        get maxCycles(): number {
          throw boom;
        },
      },
    };
    let error: unknown;
    try {
      validateAgentConfig(config);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidConfigError);
    expect((error as Error).message).toBe(
      "Invalid agent config: limits.maxCycles could not be read: getter.",
    );
    expect((error as Error).cause).toBe(boom);
  });

  it("shows functions with String() and cuts long values short", () => {
    const [issue] = issuesOf(() => validateAgentConfig({ systemPrompt: function prompt() {} }));
    expect(issue?.message).toBe("must be a string, got function prompt() {}");
    const [long] = issuesOf(() => validateAgentConfig({ systemPrompt: ["x".repeat(200)] }));
    expect(long?.message).toBe(`must be a string, got ["${"x".repeat(78)}…`);
  });

  // An async factory's result passed as it is: JSON shows a promise as `{}`, which misleads.
  it("says an orchestrator that is a promise is one, and leaves no rejection of it unhandled", async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      const settingUp = Promise.reject(new Error("set-up failed"));
      expect(issuesOf(() => validateAgentConfig({ orchestrator: settingUp }))).toEqual([
        {
          path: "orchestrator",
          message:
            "must be the orchestrator itself, not a promise of it (await it first, or do async set-up in run), got a promise",
        },
      ]);
      // Node reports a rejection left unhandled once the microtasks after it have run.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("unhandledRejection", record);
    }
    expect(unhandled).toEqual([]);
  });

  // Asking whether a value is a promise reads its `then`: a getter that throws (or a proxy refusing
  // properties it does not know) must not turn a bad setting into that getter's error.
  it("names a bad setting whose then throws when read, as any other bad setting", () => {
    const throwingThen = () => ({
      // biome-ignore lint/suspicious/noThenProperty: a value whose then throws is what is tested.
      get then(): never {
        throw new Error("then is not readable");
      },
    });
    expect(issuesOf(() => validateAgentConfig({ systemPrompt: throwingThen() }))).toEqual([
      { path: "systemPrompt", message: "must be a string, got [object Object]" },
    ]);
    const [orchestrator] = issuesOf(() => validateAgentConfig({ orchestrator: throwingThen() }));
    expect(orchestrator?.message).toMatch(
      /^must be a registered orchestrator's name or an Orchestrator object/,
    );
    const options = z.object({ rounds: z.number().optional() });
    expect(issuesOf(() => validateOptions(options, { rounds: throwingThen() }, "reflect options"))).toEqual([
      { path: "rounds", message: "must be a number, got [object Object]" },
    ]);
  });

  // zod takes a promise for an object whose fields are all optional: settings an async function
  // built, passed without `await`, would silently be none at all (no limits, no abort signal).
  it("refuses a promise of settings, at the root and in place of an object of settings", () => {
    const awaitIt = "must be the settings themselves, not a promise of them (await it first), got a promise";
    expect(issuesOf(() => validateAgentConfig(Promise.resolve({ systemPrompt: "Be brief." })))).toEqual([
      { path: "config", message: awaitIt },
    ]);
    for (const path of ["timeouts", "limits", "retry", "contextBudget", "modelSettings"])
      expect(issuesOf(() => validateAgentConfig({ [path]: Promise.resolve({}) }))).toEqual([
        { path, message: "must be an object, got a promise" },
      ]);
    expect(issuesOf(() => validateAgentConfig({ stall: Promise.resolve({}) }))).toEqual([
      {
        path: "stall",
        message: "must be false or an object { repeatedCalls?, repeatedResults? }, got a promise",
      },
    ]);
    const signal = new AbortController().signal;
    expect(issuesOf(() => validatePromptOptions(Promise.resolve({ signal })))).toEqual([
      { path: "options", message: awaitIt },
    ]);
    expect(issuesOf(() => validatePromptOptions({ timeouts: Promise.resolve({ totalMs: 5 }) }))).toEqual([
      { path: "timeouts", message: "must be an object, got a promise" },
    ]);
    const options = z.object({ rounds: z.number().optional() });
    expect(
      issuesOf(() => validateOptions(options, Promise.resolve({ rounds: 2 }), "reflect options")),
    ).toEqual([{ path: "options", message: awaitIt }]);
  });

  // A key a group of settings does not know can only be a misspelt setting, which would silently
  // not apply: `maxCycle` left the default 10 cycles in place.
  it("refuses a key a group of settings does not know, naming it and the known ones", () => {
    expect(issuesOf(() => validateAgentConfig({ limits: { maxCycle: 3 } }))).toEqual([
      { path: "limits.maxCycle", message: "is not a setting (known: maxCycles, abortGraceMs)" },
    ]);
    expect(issuesOf(() => validateAgentConfig({ limits: { maxCycles: 0, foo: 1 } }))).toEqual([
      { path: "limits.maxCycles", message: "must be a whole number >= 1, got 0" },
      { path: "limits.foo", message: "is not a setting (known: maxCycles, abortGraceMs)" },
    ]);
    for (const [group, key] of [
      ["timeouts", "toolMS"],
      ["retry", "maxRetry"],
      ["stall", "repeatedCall"],
      ["contextBudget", "maxToken"],
    ] as const) {
      const [issue] = issuesOf(() => validateAgentConfig({ [group]: { [key]: 3 } }));
      expect(issue?.path).toBe(`${group}.${key}`);
      expect(issue?.message).toMatch(/^is not a setting \(known: /);
    }
    expect(issuesOf(() => validatePromptOptions({ timeouts: { toolMS: 5 } }))).toEqual([
      {
        path: "timeouts.toolMS",
        message:
          "is not a setting (known: totalMs, stepMs, firstChunkMs, chunkMs, toolMs, clientToolMs, tools)",
      },
    ]);
    // The model's settings go to the provider as they are: not a closed group.
    expect(() => validateAgentConfig({ modelSettings: { temperature: 0, topK: 3 } })).not.toThrow();
  });

  it("rejects a config that is not an object, and allows none at all", () => {
    expect(issuesOf(() => validateAgentConfig(null))).toEqual([
      { path: "config", message: "must be an object, got null" },
    ]);
    expect(issuesOf(() => validateAgentConfig("agentic"))).toEqual([
      { path: "config", message: 'must be an object, got "agentic"' },
    ]);
    expect(() => validateAgentConfig(undefined)).not.toThrow();
  });

  // `new Agent()` accepts the usual limits without zod; the schema must agree on every value.
  it("judges limits as the whole schema does, whatever their shape", () => {
    const count = fc.oneof(
      fc.integer({ min: -2, max: 3 }),
      fc.constantFrom(1.5, NaN, Infinity, 2 ** 53, 2 ** 60, -0, "3", null, undefined),
    );
    const limits = fc.oneof(
      fc.record({ maxCycles: count }, { requiredKeys: [] }),
      fc.record({ maxCycles: count, abortGraceMs: count, other: count }, { requiredKeys: [] }),
      fc.anything(),
    );
    fc.assert(
      fc.property(limits, (value) => {
        const accepted = !threw(() => validateAgentConfig({ limits: value }));
        // A bad setting beside it sends the whole config through the schema, which names every bad field.
        const paths = issuesOf(() => validateAgentConfig({ limits: value, systemPrompt: 5 })).map(
          (issue) => issue.path,
        );
        expect(accepted).toBe(!paths.some((path) => path.startsWith("limits")));
      }),
      { seed: 20261125, numRuns: 500 },
    );
  });

  // TypeScript flags a misspelt key in an object literal only; elsewhere it would silently not apply.
  it("refuses a key it does not know, naming it and the known ones", () => {
    const [issue] = issuesOf(() => validateAgentConfig({ provider: model, sytemPrompt: "Be brief." }));
    expect(issue?.path).toBe("sytemPrompt");
    expect(issue?.message).toMatch(/^is not a setting \(known: systemPrompt, messages, provider, /);
    // An Object method's name is no setting either (the fast path reads its tables' own keys).
    expect(issuesOf(() => validateAgentConfig({ toString: 5 }))[0]?.path).toBe("toString");
    expect(issuesOf(() => validatePromptOptions({ sgnal: new AbortController().signal }))).toEqual([
      { path: "sgnal", message: "is not a setting (known: signal, timeouts, clientTools)" },
    ]);
  });

  // The shapes the tests, examples and docs of the repository build agents with.
  it.each([
    {},
    { systemPrompt: "You are helpful.", provider: model, tools: [echo] },
    { provider: model, orchestrator: "plan-execute", limits: { maxCycles: 1 } },
    { provider: model, orchestrator: { name: "echo", run: async () => {} }, container: rootContainer },
    { provider: model, timeouts: { totalMs: 40 } },
    { provider: model, timeouts: { firstChunkMs: 30 }, retry: { retryTimeouts: true, initialDelayMs: 1 } },
    {
      provider: model,
      tools: [echo],
      timeouts: { toolMs: 30, tools: { echo: 500 } },
      limits: { abortGraceMs: 10 },
    },
    { provider: model, tools: new ToolRegistry([echo]), toolExecution: "parallel", maxConcurrency: 2 },
    { provider: model, tools: [echo], stall: false },
    { provider: model, tools: [echo], stall: { repeatedCalls: 3 } },
    { provider: model, contextBudget: {} },
    {
      provider: model,
      contextBudget: { contextWindow: 8000, ratio: 0.5, systemTokens: 100, estimate: () => 1 },
    },
    {
      provider: model,
      transformContext: keepRecent(4),
      convertToLlm: (messages: unknown[]) => messages,
      getSteeringMessages: () => undefined,
      getFollowUpMessages: async () => ["more"],
      beforeToolCall: () => ({ requireApproval: true }),
      afterToolCall: () => undefined,
      prepareStep: () => undefined,
      shouldStop: () => false,
      repairToolCall: () => undefined,
      onListenerError: () => {},
      modelSettings: { temperature: 0, maxOutputTokens: 100 },
      retry: { maxRetries: 0 },
    },
    {
      provider: model,
      transformContext: contextBudget({ maxTokens: 1000 }),
      limits: { maxCycles: 3, abortGraceMs: 0 },
    },
    { timeouts: { totalMs: undefined, stepMs: undefined }, limits: undefined, stall: undefined },
  ])("accepts a good config (%#)", (config) => {
    expect(() => validateAgentConfig(config)).not.toThrow();
  });
});

describe("validatePromptOptions", () => {
  it.each([
    undefined,
    {},
    { signal: new AbortController().signal },
    { timeouts: { stepMs: 500, tools: { echo: 1 } } },
  ])("accepts %o", (options) => {
    expect(() => validatePromptOptions(options)).not.toThrow();
  });

  it("names an option whose getter throws, as prompt() does", () => {
    const options = {
      get signal(): AbortSignal {
        throw new Error("getter");
      },
    };
    expect(() => validatePromptOptions(options)).toThrow(InvalidConfigError);
    expect(() => validatePromptOptions(options)).toThrow(
      "Invalid prompt options: signal could not be read: getter.",
    );
  });

  it("rejects a signal that is not an AbortSignal", () => {
    for (const signal of [{ aborted: false }, "abort", null, 1])
      expect(issuesOf(() => validatePromptOptions({ signal }))).toEqual([
        { path: "signal", message: `must be an AbortSignal, got ${JSON.stringify(signal)}` },
      ]);
  });

  it("checks timeouts like the agent's", () => {
    expect(() => validatePromptOptions({ timeouts: { toolMs: -5 } })).toThrow(
      "Invalid prompt options: timeouts.toolMs must be a number > 0 and <= 2147483647 (milliseconds), got -5.",
    );
    for (const value of ms)
      expect(
        issuesOf(() => validatePromptOptions({ timeouts: { chunkMs: value } })).map((i) => i.path),
      ).toEqual(["timeouts.chunkMs"]);
    expect(
      issuesOf(() => validatePromptOptions({ signal: new AbortController().signal, timeouts: 5 })),
    ).toEqual([{ path: "timeouts", message: "must be an object, got 5" }]);
  });

  it("rejects options that are not an object", () => {
    expect(issuesOf(() => validatePromptOptions(null))).toEqual([
      { path: "options", message: "must be an object, got null" },
    ]);
    expect(issuesOf(() => validatePromptOptions("fast"))).toEqual([
      { path: "options", message: 'must be an object, got "fast"' },
    ]);
  });
});

describe("ownOptions and refuseUnknownKeys", () => {
  it("copy the options read once, without undefined ones, and refuse an unknown key naming the known ones", () => {
    const given = { rounds: 2, note: undefined };
    const own = ownOptions("reflect options", given, ["rounds", "note"]);
    expect(own).toEqual({ rounds: 2 });
    expect(own).not.toBe(given);
    expect(() => ownOptions("reflect options", { roudns: 2 }, ["rounds"])).toThrow(
      new InvalidConfigError("Invalid reflect options: roudns is not an option (known: rounds)."),
    );
    expect(() => refuseUnknownKeys("reflect options", { roudns: 2 }, ["rounds"])).toThrow(
      "Invalid reflect options: roudns is not an option (known: rounds).",
    );
    expect(() => refuseUnknownKeys("reflect options", { rounds: 2 }, ["rounds"])).not.toThrow();
  });

  it("refuse a promise of the options and an option that cannot be read, its error as cause", () => {
    expect(() => ownOptions("reflect options", Promise.resolve({}), [])).toThrow(
      "reflect options must be an object of options (the options themselves, not a promise of them), got a promise.",
    );
    const failure = new Error("getter");
    const unreadable = Object.defineProperty({}, "rounds", {
      enumerable: true,
      get() {
        throw failure;
      },
    });
    let error: unknown;
    try {
      ownOptions("reflect options", unreadable, ["rounds"]);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidConfigError);
    expect((error as Error).message).toBe("Invalid reflect options: rounds could not be read: getter.");
    expect((error as Error).cause).toBe(failure);
  });
});

describe("validateOptions", () => {
  it("names what a check of the schema without a message of its own expected, and what it got", () => {
    const schema = z.object({ rounds: z.int().gte(0).optional(), label: z.string().optional() });
    expect(() => validateOptions(schema, 5, "reflect options")).toThrow(
      "Invalid reflect options: options must be an object, got 5.",
    );
    expect(issuesOf(() => validateOptions(schema, { rounds: 1.5, label: 2 }, "reflect options"))).toEqual([
      { path: "rounds", message: "must be a whole number, got 1.5" },
      { path: "label", message: "must be a string, got 2" },
    ]);
    expect(issuesOf(() => validateOptions(z.array(z.string()), "a", "list options"))).toEqual([
      { path: "options", message: 'must be an array, got "a"' },
    ]);
  });

  it("keeps the schema's own message where it has one", () => {
    const schema = z.object({ rounds: z.int({ error: "a whole number >= 0" }) }, { error: "a plain object" });
    expect(issuesOf(() => validateOptions(schema, 5, "reflect options"))).toEqual([
      { path: "options", message: "must be a plain object, got 5" },
    ]);
    expect(issuesOf(() => validateOptions(schema, { rounds: "x" }, "reflect options"))).toEqual([
      { path: "rounds", message: 'must be a whole number >= 0, got "x"' },
    ]);
  });

  // Whether a schema takes `{}` is asked once per schema: every later answer must be the same.
  it("judges empty options by the schema, each time it is asked", () => {
    const needsRounds = z.object({ rounds: z.int() });
    const optional = z.object({ rounds: z.int().optional() });
    for (let time = 0; time < 2; time++) {
      expect(issuesOf(() => validateOptions(needsRounds, {}, "reflect options"))).toEqual([
        { path: "rounds", message: "must be a number, got undefined" },
      ]);
      expect(() => validateOptions(optional, {}, "reflect options")).not.toThrow();
      expect(issuesOf(() => validateOptions(z.array(z.string()), {}, "list options"))).toEqual([
        { path: "options", message: "must be an array, got {}" },
      ]);
    }
  });
});
