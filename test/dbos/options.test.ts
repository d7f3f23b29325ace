import {
  type DurableBackendOptions,
  DurableRunClient,
  DurableRuntime,
  type DurableRuntimeOptions,
  durableBackend,
} from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import { Agent, InvalidConfigError, type Logger } from "agent-core";
import { describe, expect, it } from "vitest";

// Options no runtime could use are refused by `new DurableRuntime()` (and `connect()`), before
// anything is made: DBOS would take most of them and fail later (halfway through `launch()`), or
// never: a queue of no worker, an answer wait without end, a database timeout that fails every
// query at once. No database is needed: nothing may be reached for them.

const databaseUrl = "postgres://postgres@127.0.0.1:1/agent_core";
const agents = { helper: () => new Agent({ provider: scriptedModel([[script.text("Hello!")]]) }) };

/** The file's one runtime (there is one per process), of good options: made at its first use. */
let made: DurableRuntime | undefined;
const runtime = () => {
  made ??= new DurableRuntime({ databaseUrl, agents });
  return made;
};

describe("options of new DurableRuntime() that no runtime could use", () => {
  it.each<[string, Partial<Record<keyof DurableRuntimeOptions, unknown>>, string]>([
    ["no agents", { agents: null }, "agents must be an object of agent factories by name, got null."],
    [
      "an agent that is no factory",
      { agents: { helper: 5 } },
      "agents.helper must be a function that makes an Agent, got 5.",
    ],
    ["an empty name", { name: "" }, 'name must be a non-empty string, got "".'],
    ["an executorId that is no string", { executorId: 5 }, "executorId must be a non-empty string, got 5."],
    ["an empty queue name", { queue: { name: "" } }, 'queue.name must be a non-empty string, got "".'],
    [
      "a workerConcurrency of 0 (no run would ever start)",
      { queue: { workerConcurrency: 0 } },
      "queue.workerConcurrency must be an integer of at least 1, got 0.",
    ],
    [
      "a fractional globalConcurrency",
      { queue: { globalConcurrency: 1.5 } },
      "queue.globalConcurrency must be an integer of at least 1, got 1.5.",
    ],
    [
      "a globalConcurrency below workerConcurrency",
      { queue: { workerConcurrency: 4, globalConcurrency: 2 } },
      "queue.globalConcurrency (2) must be at least queue.workerConcurrency (4).",
    ],
    [
      "an answerTimeoutMs that is not a number (a wait without end)",
      { answerTimeoutMs: Number.NaN },
      "answerTimeoutMs must be a number of milliseconds above 0, at most 9007199254740991, got NaN.",
    ],
    [
      "a negative databaseTimeoutMs",
      { databaseTimeoutMs: -5 },
      "databaseTimeoutMs must be a number of milliseconds above 0, at most 2147483647, got -5.",
    ],
    [
      "a databaseTimeoutMs past the longest timer (its queries would time out after 1 ms)",
      { databaseTimeoutMs: 3e9 },
      "databaseTimeoutMs must be a number of milliseconds above 0, at most 2147483647, got 3000000000.",
    ],
    [
      "a logger without its levels (DBOS's lines would be lost, or thrown from inside it)",
      { logger: { error() {} } },
      "logger must have error, warn, info and debug methods.",
    ],
  ])("refuses %s: InvalidConfigError", (_, options, message) => {
    expect(() => new DurableRuntime({ databaseUrl, agents, ...options } as DurableRuntimeOptions)).toThrow(
      new InvalidConfigError(message),
    );
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      "a misspelled executorId (the worker would take the default id another worker has)",
      { executorID: "worker-1" },
      "Invalid DurableRuntime options: executorID is not an option (known: databaseUrl, name, agents, queue, executorId, answerTimeoutMs, databaseTimeoutMs, logger).",
    ],
    [
      "a misspelled queue option",
      { queue: { workerconcurrency: 8 } },
      "Invalid queue options: workerconcurrency is not an option (known: name, workerConcurrency, globalConcurrency).",
    ],
  ])("refuses %s: InvalidConfigError naming the key", (_, options, message) => {
    expect(() => new DurableRuntime({ databaseUrl, agents, ...options } as DurableRuntimeOptions)).toThrow(
      new InvalidConfigError(message),
    );
  });

  it("refuses a start() option it does not know (a misspelled runId would start a new run each time)", async () => {
    await expect(
      runtime().start("helper", "Hi.", { runid: "order-42" } as { runId?: string }),
    ).rejects.toThrow(
      new InvalidConfigError("Invalid start() options: runid is not an option (known: runId)."),
    );
  });

  it.each([
    [
      "a U+0000 (PostgreSQL's text holds none)",
      "a\u0000b",
      'runId must hold no U+0000 and no lone surrogate (PostgreSQL cannot store them), got "a\\u0000b".',
    ],
    [
      "a lone surrogate (stored as U+FFFD: two ids would be one run)",
      "a\ud800",
      'runId must hold no U+0000 and no lone surrogate (PostgreSQL cannot store them), got "a\\ud800".',
    ],
    [
      "past 2048 bytes (the workflow would fail at its first event)",
      "é".repeat(1025),
      "runId must be at most 2048 bytes (UTF-8), got one of 2050.",
    ],
  ])("refuses a start()'s runId with %s: InvalidConfigError", async (_, runId, message) => {
    await expect(runtime().start("helper", "Hi.", { runId })).rejects.toThrow(
      new InvalidConfigError(message),
    );
  });

  it("refuses them before anything is made: a runtime of good options is made afterwards", () => {
    expect(() => new DurableRuntime({ databaseUrl, agents, queue: { workerConcurrency: 0 } })).toThrow(
      InvalidConfigError,
    );
    expect(runtime()).toBeInstanceOf(DurableRuntime);
  });
});

describe("options of DurableRunClient.connect() that no client could use", () => {
  it("are refused before the database is asked: InvalidConfigError, not database_unreachable", async () => {
    await expect(DurableRunClient.connect({ databaseUrl, databaseTimeoutMs: 0 })).rejects.toThrow(
      new InvalidConfigError(
        "databaseTimeoutMs must be a number of milliseconds above 0, at most 2147483647, got 0.",
      ),
    );
    await expect(
      DurableRunClient.connect({ databaseUrl, logger: { error() {}, warn() {} } as unknown as Logger }),
    ).rejects.toThrow(new InvalidConfigError("logger must have error, warn, info and debug methods."));
    await expect(DurableRunClient.connect({ databaseUrl, queue: "" })).rejects.toThrow(
      new InvalidConfigError('queue must be a non-empty string, got "".'),
    );
    await expect(
      DurableRunClient.connect({ databaseUrl, databseTimeoutMs: 5 } as { databaseUrl: string }),
    ).rejects.toThrow(
      new InvalidConfigError(
        "Invalid connect() options: databseTimeoutMs is not an option (known: databaseUrl, name, queue, databaseTimeoutMs, logger).",
      ),
    );
  });
});

describe("options of durableBackend() that no backend could use", () => {
  const runs = runtime();

  it.each<[string, Partial<Record<keyof DurableBackendOptions, unknown>>, string]>([
    [
      "a databaseUrl that is not postgres://",
      { databaseUrl: "mysql://db" },
      'databaseUrl must be a postgres:// URL, got "mysql://db".',
    ],
    [
      "no runs",
      { runs: null },
      "runs must be a DurableRuntime or a DurableRunClient (its start() is missing), got null.",
    ],
    [
      "an empty agentName",
      { agentName: "" },
      'agentName must be a non-empty string or a function of the request, got "".',
    ],
    [
      "an agentName its runtime does not have (every start would fail)",
      { agentName: "nobody" },
      'agentName "nobody" is no agent of the runtime; registered: helper.',
    ],
    [
      "a pollMs of 0 (every followed run's log read without pause)",
      { pollMs: 0 },
      "pollMs must be a number of milliseconds above 0, at most 2147483647, got 0.",
    ],
    [
      "an option it does not know",
      { pollMS: 50 } as Record<string, unknown>,
      "Invalid durableBackend() options: pollMS is not an option (known: databaseUrl, runs, agentName, pollMs).",
    ],
  ])("refuses %s: InvalidConfigError", async (_, options, message) => {
    await expect(
      durableBackend({ databaseUrl, runs, agentName: "helper", ...options } as DurableBackendOptions),
    ).rejects.toThrow(new InvalidConfigError(message));
  });

  it("rejects with database_unreachable when the database does not answer, as launch() and connect() do", async () => {
    await expect(durableBackend({ databaseUrl, runs, agentName: "helper" })).rejects.toMatchObject({
      code: "database_unreachable",
      message: "Cannot reach the database: connect ECONNREFUSED 127.0.0.1:1",
    });
  });
});
