import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { FatalToolError, TimeoutError } from "../errors.js";
import type { ToolCall, ToolResultMessage } from "../messages.js";
import { AbortScope } from "../model/abortable.js";
import { defineTool, type ServerTool, type ToolExecuteOptions } from "./define-tool.js";
import { executeToolCall, type FatalToolSink, NOT_RUN_ABORTED } from "./execute-tool.js";
import { ToolRegistry } from "./registry.js";

const GRACE_MS = 500;

function toolWith(execute: (args: unknown, options: ToolExecuteOptions) => unknown, name = "t"): ServerTool {
  return defineTool({ name, description: "a test tool", inputSchema: z.object({}), execute });
}

function callOf(name = "t", args: unknown = {}, id = "c1"): ToolCall {
  return { id, name, args };
}

interface RunOptions {
  scope?: AbortScope;
  timeoutMs?: number;
  fatal?: FatalToolSink;
  call?: ToolCall;
}

function run(tool: ServerTool, options: RunOptions = {}): ToolResultMessage | Promise<ToolResultMessage> {
  const { scope = new AbortScope(), timeoutMs, fatal, call = callOf(tool.name) } = options;
  return executeToolCall(tool, new ToolRegistry([tool]), call, scope, GRACE_MS, timeoutMs, fatal);
}

/** A tool that waits for its signal and rejects with the signal's reason, like `fetch` does. */
function signalFollower(onStart?: (signal: AbortSignal) => void, name = "t"): ServerTool {
  return toolWith(
    (_args, { signal }) =>
      new Promise((_resolve, reject) => {
        onStart?.(signal);
        signal.addEventListener("abort", () => reject(signal.reason));
      }),
    name,
  );
}

function cyclic(): object {
  const value: { self?: unknown } = {};
  value.self = value;
  return value;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("executeToolCall: whatever a tool throws becomes an error result with text", () => {
  class CustomError extends Error {}
  const throwsOnRead = () => {
    throw new Error("getter failed");
  };
  const thrownValues: [label: string, make: () => unknown, content: string | RegExp][] = [
    ["undefined", () => undefined, "Tool failed: undefined"],
    ["null", () => null, "Tool failed: null"],
    ["a Symbol", () => Symbol("x"), "Tool failed: Symbol(x)"],
    ["a function", () => function probe() {}, /^Tool failed: function probe\(\)/],
    ["an empty string", () => "", 'Tool failed: ""'],
    ["an Error with an empty message", () => new TypeError(""), "Tool failed: TypeError"],
    ["an Error subclass without a message", () => new CustomError(), "Tool failed: CustomError"],
    [
      "an Error whose message getter throws",
      () => Object.defineProperty(new RangeError("hidden"), "message", { get: throwsOnRead }),
      "Tool failed: RangeError",
    ],
    [
      "a cyclic object whose toString throws",
      () => Object.assign(cyclic(), { toString: throwsOnRead }),
      "Tool failed: a thrown value that cannot be described",
    ],
    [
      "a revoked Proxy",
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
      "Tool failed: a thrown value that cannot be described",
    ],
    ["a plain object", () => ({ code: 7 }), 'Tool failed: {"code":7}'],
    ["an Error", () => new Error("disk full"), "disk full"],
    ["a string", () => "no such file", "no such file"],
  ];

  it.each(thrownValues)("thrown synchronously: %s", (_label, make, content) => {
    const result = run(
      toolWith(() => {
        throw make();
      }),
    );
    expect(result).not.toBeInstanceOf(Promise);
    expect(result).toMatchObject({ status: "error", isError: true, content: expect.any(String) });
    expect((result as ToolResultMessage).content).toMatch(content);
  });

  it.each(thrownValues)("rejected: %s", async (_label, make, content) => {
    const result = await run(toolWith(() => Promise.reject(make())));
    expect(result).toMatchObject({ status: "error", isError: true, content: expect.any(String) });
    expect(result.content).toMatch(content);
  });

  it("a bare Promise.reject() is 'Tool failed: undefined'", async () => {
    const result = await run(toolWith(() => Promise.reject()));
    expect(result).toMatchObject({ status: "error", content: "Tool failed: undefined" });
  });

  it("a thenable whose then throws synchronously", async () => {
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is what is under test
      then() {
        throw new Error("broken then");
      },
    };
    await expect(run(toolWith(() => thenable))).resolves.toMatchObject({
      status: "error",
      content: "broken then",
    });
  });

  it("a thenable whose then getter throws", () => {
    // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is what is under test
    const thenable = Object.defineProperty({}, "then", {
      get() {
        throw new Error("no then for you");
      },
    });
    expect(run(toolWith(() => thenable))).toMatchObject({ status: "error", content: "no then for you" });
  });

  it("a thenable that rejects with nothing", async () => {
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is what is under test
      then(_resolve: unknown, reject: (error?: unknown) => void) {
        reject();
      },
    };
    await expect(run(toolWith(() => thenable))).resolves.toMatchObject({
      status: "error",
      content: "Tool failed: undefined",
    });
  });
});

describe("executeToolCall: FatalToolError", () => {
  it("thrown synchronously: an error result, reported to the sink", () => {
    const toolFailedFatally = vi.fn();
    const call = callOf("t");
    const result = run(
      toolWith(() => {
        throw new FatalToolError("credentials revoked");
      }),
      { call, fatal: { toolFailedFatally } },
    );
    expect(result).toMatchObject({ status: "error", content: "credentials revoked" });
    expect(toolFailedFatally.mock.calls).toEqual([[call]]);
  });

  it.each([undefined, 60_000])(
    "only the call that threw it is an error; a sibling rejecting with the abort reason is aborted (timeoutMs %s)",
    async (timeoutMs) => {
      // Like the batch: the first fatal failure aborts the shared scope with a FatalToolError.
      const scope = new AbortScope();
      const toolFailedFatally = vi.fn((call: ToolCall) =>
        scope.abort(new FatalToolError(`"${call.name}" failed fatally`)),
      );
      const fatal = { toolFailedFatally };
      const sibling = run(signalFollower(undefined, "long"), {
        scope,
        timeoutMs,
        fatal,
        call: callOf("long", {}, "l"),
      });
      const boomCall = callOf("boom", {}, "b");
      const boom = run(
        toolWith(() => Promise.reject(new FatalToolError("credentials revoked")), "boom"),
        { scope, timeoutMs, fatal, call: boomCall },
      );
      expect(await boom).toMatchObject({ status: "error", content: "credentials revoked" });
      expect(await sibling).toMatchObject({ status: "aborted", content: '"boom" failed fatally' });
      expect(toolFailedFatally.mock.calls).toEqual([[boomCall]]);
    },
  );
});

describe("executeToolCall: abort, deadline and grace period", () => {
  it("a tool called after the scope aborted is not run", () => {
    const execute = vi.fn();
    const scope = new AbortScope();
    scope.abort();
    const result = run(toolWith(execute), { scope });
    expect(execute).not.toHaveBeenCalled();
    expect(result).toMatchObject({ status: "aborted", content: NOT_RUN_ABORTED });
  });

  it("with timeoutMs, the tool's own signal aborts at its deadline with a TimeoutError", async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    const result = run(
      signalFollower((s) => {
        signal = s;
      }),
      { timeoutMs: 100 },
    );
    await vi.advanceTimersByTimeAsync(99);
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(signal?.reason).toBeInstanceOf(TimeoutError);
    // The reason says which limit ran out.
    expect(signal?.reason).toMatchObject({ kind: "tool", ms: 100 });
    expect(await result).toMatchObject({
      status: "timeout",
      content: 'The tool "t" timed out after 100 ms and was stopped.',
    });
  });

  it("with timeoutMs, the run's abort reaches the tool's own signal", async () => {
    let signal: AbortSignal | undefined;
    const scope = new AbortScope();
    const result = run(
      signalFollower((s) => {
        signal = s;
      }),
      { scope, timeoutMs: 60_000 },
    );
    expect(signal).not.toBe(scope.signal);
    const reason = new Error("user pressed stop");
    scope.abort(reason);
    expect(signal?.reason).toBe(reason);
    expect(await result).toMatchObject({ status: "aborted", content: "user pressed stop" });
  });

  it.each([undefined, 60_000])(
    "a tool that ignores the abort is abandoned after exactly the grace period (timeoutMs %s)",
    async (timeoutMs) => {
      vi.useFakeTimers();
      const scope = new AbortScope();
      let result: ToolResultMessage | undefined;
      void Promise.resolve(
        run(
          toolWith(() => new Promise(() => {})),
          { scope, timeoutMs },
        ),
      ).then((r) => {
        result = r;
      });
      scope.abort();
      await vi.advanceTimersByTimeAsync(GRACE_MS - 1);
      expect(result).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(result).toMatchObject({
        status: "aborted",
        content: `aborted: the tool did not stop within ${GRACE_MS} ms of the abort`,
      });
    },
  );

  it("a tool that ignores its deadline is abandoned a grace period later, as a timeout", async () => {
    vi.useFakeTimers();
    let result: ToolResultMessage | undefined;
    void Promise.resolve(
      run(
        toolWith(() => new Promise(() => {})),
        { timeoutMs: 100 },
      ),
    ).then((r) => {
      result = r;
    });
    await vi.advanceTimersByTimeAsync(100 + GRACE_MS - 1);
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(result).toMatchObject({ status: "timeout" });
  });
});

describe("executeToolCall: a schema that checks the arguments asynchronously", () => {
  function checkedBy(
    check: () => Promise<boolean>,
    execute = vi.fn((_args: unknown, _options: ToolExecuteOptions): unknown => "ran"),
  ) {
    const tool = defineTool({
      name: "t",
      description: "a test tool",
      inputSchema: z.object({ city: z.string().refine(check) }),
      execute,
    });
    return { tool, execute, call: callOf("t", { city: "Paris" }) };
  }

  it("its check counts toward timeoutMs: a check that never settles ends as a timeout", async () => {
    vi.useFakeTimers();
    const { tool, execute, call } = checkedBy(() => new Promise(() => {}));
    let result: ToolResultMessage | undefined;
    void Promise.resolve(run(tool, { call, timeoutMs: 100 })).then((r) => {
      result = r;
    });
    await vi.advanceTimersByTimeAsync(99);
    expect(result).toBeUndefined();
    // The deadline, then the check abandoned on the next timer turn (it has no grace period).
    await vi.advanceTimersByTimeAsync(2);
    expect(result).toMatchObject({
      status: "timeout",
      content: 'The tool "t" timed out after 100 ms and was stopped.',
    });
    expect(execute).not.toHaveBeenCalled();
  });

  it("the tool gets what is left of the limit after its check, on the same deadline", async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    const { tool, call } = checkedBy(
      () => new Promise((resolve) => setTimeout(() => resolve(true), 60)),
      vi.fn((_args: unknown, options: ToolExecuteOptions) => {
        signal = options.signal;
        return new Promise(() => {});
      }),
    );
    const result = run(tool, { call, timeoutMs: 100 });
    await vi.advanceTimersByTimeAsync(60);
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(40);
    expect(signal?.reason).toMatchObject({ kind: "tool", ms: 100 });
    await vi.advanceTimersByTimeAsync(GRACE_MS);
    expect(await result).toMatchObject({ status: "timeout" });
  });

  it("an abort during its check ends the call at once, not run", async () => {
    const scope = new AbortScope();
    const { tool, execute, call } = checkedBy(() => new Promise(() => {}));
    const result = run(tool, { call, scope });
    scope.abort();
    expect(await result).toMatchObject({ status: "aborted", content: NOT_RUN_ABORTED });
    expect(execute).not.toHaveBeenCalled();
  });
});

describe("executeToolCall: returned values", () => {
  it.each([
    ["undefined", undefined, ""],
    ["null", null, "null"],
    ["a string", "plain text", "plain text"],
    ["a number", 42, "42"],
    ["an object", { a: [1, "b"] }, '{"a":[1,"b"]}'],
  ])("a synchronous tool returning %s: ok, string content, no promise", (_label, value, content) => {
    const result = run(toolWith(() => value));
    expect(result).not.toBeInstanceOf(Promise);
    expect(result).toMatchObject({ status: "ok", isError: false, content });
  });

  it("an async tool resolving to undefined: ok with empty content", async () => {
    expect(await run(toolWith(async () => undefined))).toMatchObject({ status: "ok", content: "" });
  });

  it.each([
    ["a cyclic object", cyclic(), /^The tool returned a value that is not JSON: .*circular/i],
    ["a BigInt", 10n, /^The tool returned a value that is not JSON: .*BigInt/],
    ["a function", () => 1, /^The tool returned a value that is not JSON: a function\.$/],
    ["a Symbol", Symbol("s"), /^The tool returned a value that is not JSON: a symbol\.$/],
  ])("%s is an error result saying it is not JSON", (_label, value, content) => {
    const result = run(toolWith(() => value)) as ToolResultMessage;
    expect(result.status).toBe("error");
    expect(result.content).toMatch(content);
  });

  class Secret {
    readonly #code = 42;
    get code() {
      return this.#code;
    }
  }
  const asEmpty = "which JSON writes as {} (convert it to a plain object or an array first).";
  it.each([
    ["a Map", new Map([["a", 1]]), `a Map, ${asEmpty}`],
    ["a Set, deep", { found: [new Set([1])] }, `a Set at "0", ${asEmpty}`],
    ["an Error", new Error("boom"), `an Error, ${asEmpty}`],
    ["a class instance whose data JSON cannot see", new Secret(), `a Secret, ${asEmpty}`],
    ["a promise not awaited", { total: Promise.resolve(3) }, `a Promise at "total", ${asEmpty}`],
    ["NaN", Number.NaN, "NaN, which JSON writes as null."],
    [
      "Infinity, deep",
      { ratio: Number.POSITIVE_INFINITY },
      'Infinity at "ratio", which JSON writes as null.',
    ],
    [
      "a function in an array",
      { checks: [() => true] },
      'a function at "0" in an array, which JSON writes as null.',
    ],
    ["a symbol in an array", [Symbol("s")], 'a symbol at "0" in an array, which JSON writes as null.'],
    [
      "undefined in an array",
      { scores: [1, undefined] },
      'undefined at "1" in an array, which JSON writes as null.',
    ],
    // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested.
    ["a hole in an array", [1, , 3], 'undefined at "1" in an array, which JSON writes as null.'],
  ])("%s, which JSON writes as {} or null, is an error result saying so", (_label, value, reason) => {
    const result = run(toolWith(() => value)) as ToolResultMessage;
    expect(result).toMatchObject({
      status: "error",
      content: `The tool returned a value that is not JSON: ${reason}`,
    });
  });

  it("values JSON writes as they are stay ok, {} and null included", () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    const value = { empty: {}, none: null, at: new Date(0), point: new Point(1, 2), list: [null, {}] };
    expect(run(toolWith(() => value))).toMatchObject({ status: "ok", content: JSON.stringify(value) });
  });

  it("a property whose value is undefined, a function or a symbol is left out, as JSON leaves it out", () => {
    const value = { total: 3, note: undefined, format: () => "3", tag: Symbol("t"), list: [] };
    expect(run(toolWith(() => value))).toMatchObject({ status: "ok", content: '{"total":3,"list":[]}' });
  });
});

describe("executeToolCall: calls that cannot run", () => {
  it("an unknown tool lists the available ones", () => {
    const tools = new ToolRegistry([toolWith(() => 1, "alpha"), toolWith(() => 2, "beta")]);
    const result = executeToolCall(undefined, tools, callOf("gamma"), new AbortScope(), GRACE_MS);
    expect(result).toMatchObject({
      status: "error",
      content: 'Unknown tool "gamma". Available tools: alpha, beta.',
    });
    const none = executeToolCall(undefined, new ToolRegistry(), callOf("gamma"), new AbortScope(), GRACE_MS);
    expect(none).toMatchObject({ content: 'Unknown tool "gamma". No tools are registered.' });
  });

  it.each([
    ["synchronous", (check: () => boolean) => z.object({ city: z.string().refine(check) })],
    ["asynchronous", (check: () => boolean) => z.object({ city: z.string().refine(async () => check()) })],
  ])("a %s refinement that throws gives an error result; the tool does not run", async (_kind, schemaOf) => {
    const execute = vi.fn();
    const broken = () => {
      throw Symbol("broken");
    };
    const tool = defineTool({ name: "weather", description: "w", inputSchema: schemaOf(broken), execute });
    const result = await run(tool, { call: callOf("weather", { city: "Oslo" }) });
    expect(result).toMatchObject({
      status: "error",
      content: 'Invalid arguments for tool "weather": the input schema threw: Symbol(broken).',
    });
    expect(execute).not.toHaveBeenCalled();
  });

  it("invalid arguments give the schema issues with their paths", () => {
    const execute = vi.fn();
    const tool = defineTool({
      name: "weather",
      description: "w",
      inputSchema: z.object({ city: z.string(), when: z.object({ day: z.number() }) }),
      execute,
    });
    const result = run(tool, { call: callOf("weather", { city: 1, when: { day: "monday" } }) });
    expect(execute).not.toHaveBeenCalled();
    expect(result).toMatchObject({ status: "error" });
    expect((result as ToolResultMessage).content).toMatch(
      /^Invalid arguments for tool "weather": city: [^;]+; when\.day: [^;]+\.$/,
    );
  });

  it("arguments that are a string (not valid JSON) are reported as such", () => {
    const execute = vi.fn();
    const result = run(toolWith(execute), { call: callOf("t", "{city: 'Paris'") });
    expect(execute).not.toHaveBeenCalled();
    expect(result).toMatchObject({ status: "error" });
    expect((result as ToolResultMessage).content).toMatch(
      /^Invalid arguments for tool "t": .+\. The arguments were not valid JSON: \{city: 'Paris'$/,
    );
  });
});

describe("executeToolCall: exact texts and who is told", () => {
  it("a thrown string is the content as it is, without 'Tool failed:'", async () => {
    const thrown = run(
      toolWith(() => {
        throw "no such file";
      }),
    );
    expect(thrown).toMatchObject({ status: "error", content: "no such file" });
    expect(await run(toolWith(() => Promise.reject("no such file")))).toMatchObject({
      status: "error",
      content: "no such file",
    });
  });

  it("an issue with the arguments as a whole has no path before its message", () => {
    const result = run(toolWith(vi.fn()), { call: callOf("t", "not json") }) as ToolResultMessage;
    expect(result.content).toBe(
      'Invalid arguments for tool "t": Invalid input: expected object, received string. The arguments were not valid JSON: not json',
    );
  });

  it("a FatalToolError without a sink is still just an error result", async () => {
    const sync = run(
      toolWith(() => {
        throw new FatalToolError("credentials revoked");
      }),
    );
    expect(sync).toMatchObject({ status: "error", content: "credentials revoked" });
    const rejected = await run(toolWith(() => Promise.reject(new FatalToolError("credentials revoked"))));
    expect(rejected).toMatchObject({ status: "error", content: "credentials revoked" });
  });

  it("an ordinary failure, or a value instanceof cannot test, is not reported to the sink", async () => {
    const toolFailedFatally = vi.fn();
    const fatal = { toolFailedFatally };
    await run(
      toolWith(() => Promise.reject(new Error("disk full"))),
      { fatal },
    );
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const result = run(
      toolWith(() => {
        throw proxy;
      }),
      { fatal },
    );
    expect(result).toMatchObject({ status: "error" });
    await run(
      toolWith(() => Promise.reject(proxy)),
      { fatal },
    );
    expect(toolFailedFatally).not.toHaveBeenCalled();
  });

  it("a result without details has no details key at all", () => {
    const failed = run(
      toolWith(() => {
        throw new Error("disk full");
      }),
    );
    expect(Object.keys(failed)).not.toContain("details");
    expect(Object.keys(run(toolWith(() => "text")))).toContain("details");
  });

  it("a returned object whose then is not a function is a plain value", () => {
    // biome-ignore lint/suspicious/noThenProperty: a value that only looks like a thenable is the point.
    const result = run(toolWith(() => ({ then: 1 })));
    expect(result).not.toBeInstanceOf(Promise);
    expect(result).toMatchObject({ status: "ok", content: '{"then":1}' });
  });
});

describe("executeToolCall: a deadline ends with its call", () => {
  it.each([
    ["synchronous", () => "done"],
    ["async", async () => "done"],
  ])(
    "a %s tool that finished in time is not aborted later, by its deadline or by the run",
    async (_label, value) => {
      vi.useFakeTimers();
      const scope = new AbortScope();
      let signal: AbortSignal | undefined;
      const result = await run(
        toolWith((_args, options) => {
          signal = options.signal;
          return value();
        }),
        { scope, timeoutMs: 100 },
      );
      expect(result).toMatchObject({ status: "ok", content: "done" });
      await vi.advanceTimersByTimeAsync(1_000);
      expect(signal?.aborted).toBe(false);
      scope.abort(new Error("stop"));
      expect(signal?.aborted).toBe(false);
    },
  );
});

describe("executeToolCall: the tool gets arguments of its own", () => {
  /** A tool whose schema passes its arguments through, and that changes what it gets. */
  function changing(change: (args: Record<string, unknown>) => void): ServerTool {
    const tool = toolWith((args) => {
      change(args as Record<string, unknown>);
      return "changed";
    });
    // What a JSON Schema tool's check does: the value checked is the value the tool gets.
    return { ...tool, inputSchema: z.unknown() };
  }

  it("a '__proto__' key (JSON.parse makes it an own key) stays a key of the copy and sets no prototype", async () => {
    const args = JSON.parse('{"__proto__":{"polluted":true},"list":[2,1]}') as Record<string, unknown>;
    let seen: Record<string, unknown> | undefined;
    const tool = changing((copy) => {
      seen = copy;
      (copy.list as number[]).sort();
    });
    expect(await run(tool, { call: callOf("t", args) })).toMatchObject({ status: "ok" });
    expect(Object.getPrototypeOf(seen)).toBe(Object.prototype);
    expect(Object.keys(seen as object)).toEqual(["__proto__", "list"]);
    expect((seen as { polluted?: unknown }).polluted).toBeUndefined();
    expect(args.list).toEqual([2, 1]);
  });

  it("arguments with a cycle (an orchestrator's call) are copied by structuredClone, and the call's stay as they were", async () => {
    const args = cyclic() as Record<string, unknown>;
    let seen: Record<string, unknown> | undefined;
    const tool = changing((copy) => {
      seen = copy;
      copy.added = 1;
    });
    expect(await run(tool, { call: callOf("t", args) })).toMatchObject({ status: "ok" });
    expect(seen).not.toBe(args);
    expect(seen?.self).toBe(seen);
    expect(args.added).toBeUndefined();
  });

  it("an instance of a class inside the arguments is handed on as it is, not copied", async () => {
    class Handle {
      uses = 0;
    }
    const handle = new Handle();
    const tool = changing((copy) => {
      (copy.handle as Handle).uses++;
    });
    expect(await run(tool, { call: callOf("t", { handle }) })).toMatchObject({ status: "ok" });
    expect(handle.uses).toBe(1);
  });
});
