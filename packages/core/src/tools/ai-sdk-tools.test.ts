import { dynamicTool, jsonSchema, type ToolSet, tool, zodSchema } from "@ai-sdk/provider-utils";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { InvalidConfigError } from "../errors.js";
import type { ToolResultMessage } from "../messages.js";
import { AbortScope } from "../model/abortable.js";
import { fromAiSdkTools } from "./ai-sdk-tools.js";
import { defineTool, type RunnableTool, type Tool } from "./define-tool.js";
import { executeToolCall } from "./execute-tool.js";
import { ToolRegistry } from "./registry.js";

/** The one tool of a one-tool ToolSet. */
function only(set: ToolSet): Tool {
  const [converted] = fromAiSdkTools(set);
  return converted as Tool;
}

function run(converted: Tool, args: unknown, scope = new AbortScope()): Promise<ToolResultMessage> {
  const call = { id: "c1", name: converted.name, args };
  const tools = new ToolRegistry([converted]);
  return Promise.resolve(executeToolCall(converted as RunnableTool, tools, call, scope, 50, undefined));
}

const weatherSchema = {
  type: "object",
  properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } },
  required: ["city"],
  additionalProperties: false,
} as const;

/** A hand-written Standard Schema: a trimmed non-empty `name`, with no vendor library behind it. */
function nameSchema(options: { async?: boolean; jsonSchema?: boolean } = {}) {
  const validate = (value: unknown): StandardSchemaV1.Result<{ name: string }> => {
    const name = (value as { name?: unknown } | null)?.name;
    return typeof name === "string" && name.trim() !== ""
      ? { value: { name: name.trim() } }
      : { issues: [{ message: "must be a non-empty string", path: [{ key: "name" }] }] };
  };
  const jsonSchemaConverter = {
    input: () => ({ type: "object", properties: { name: { type: "string" } }, required: ["name"] }),
    output: () => ({ type: "object", properties: { name: { type: "string" } }, required: ["name"] }),
  };
  return {
    "~standard": {
      version: 1,
      vendor: "hand-written",
      validate: options.async ? async (value: unknown) => validate(value) : validate,
      ...(options.jsonSchema === false ? {} : { jsonSchema: jsonSchemaConverter }),
    },
  } as StandardSchemaV1<unknown, { name: string }>;
}

describe("fromAiSdkTools, input schemas", () => {
  it("takes a zod schema as defineTool does: same JSON Schema, same validation", async () => {
    const inputSchema = z.object({ a: z.number(), b: z.number() });
    const execute = vi.fn(async ({ a, b }: { a: number; b: number }) => a + b);
    const add = only({ add: tool({ description: "Adds", inputSchema, execute }) });
    const native = defineTool({ name: "add", description: "Adds", inputSchema, execute });
    expect(add).toMatchObject({ name: "add", description: "Adds", inputSchema });
    expect(add.jsonSchema).toEqual(native.jsonSchema);
    expect(await run(add, { a: 2, b: 3 })).toMatchObject({ status: "ok", content: "5" });
    const refused = await run(add, { a: 2 });
    expect(refused).toMatchObject({ status: "error", isError: true });
    expect(refused.content).toMatch(/^Invalid arguments for tool "add": b: /);
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it("sends a jsonSchema() schema intact and validates arguments against it with ajv", async () => {
    const execute = vi.fn(({ city }: { city: string }) => `sunny in ${city}`);
    const weather = only({
      weather: tool({ inputSchema: jsonSchema<{ city: string }>(weatherSchema), execute }),
    });
    expect(weather.jsonSchema).toBe(weatherSchema);
    expect(weather.description).toBe("");
    expect(await run(weather, { city: "Oslo", days: 2 })).toMatchObject({
      status: "ok",
      content: "sunny in Oslo",
    });
    const refused = await run(weather, { days: 0, unit: "C" });
    expect(refused.status).toBe("error");
    expect(refused.content).toBe(
      'Invalid arguments for tool "weather": city: is required; unit: is not an allowed property; days: must be >= 1.',
    );
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it("uses a jsonSchema() schema's own validate, and runs with the value it returns", async () => {
    const validate = vi.fn((value: unknown) =>
      typeof (value as { city?: unknown }).city === "string"
        ? { success: true as const, value: { city: (value as { city: string }).city.toUpperCase() } }
        : { success: false as const, error: new Error("a city, please") },
    );
    const execute = vi.fn(({ city }: { city: string }) => city);
    const weather = only({
      weather: tool({ inputSchema: jsonSchema(weatherSchema, { validate }), execute }),
    });
    expect(await run(weather, { city: "oslo" })).toMatchObject({ status: "ok", content: "OSLO" });
    // ajv would accept `days` absent and refuse nothing else here: the schema's own answer decides.
    expect((await run(weather, { town: "oslo" })).content).toBe(
      'Invalid arguments for tool "weather": a city, please.',
    );
    expect(validate).toHaveBeenCalledTimes(2);
  });

  it("validates a zodSchema() schema, whose validate answers with a promise", async () => {
    const schema = zodSchema(z.object({ city: z.string().default("Oslo") }));
    const weather = only({ weather: tool({ inputSchema: schema, execute: ({ city }) => city }) });
    expect(await run(weather, {})).toMatchObject({ status: "ok", content: "Oslo" });
    expect((await run(weather, { city: 4 })).content).toMatch(
      /^Invalid arguments for tool "weather": city: /,
    );
  });

  it.each([
    ["a synchronous", false],
    ["an asynchronous", true],
  ])("validates %s Standard Schema with its own validate, naming the path", async (_label, async) => {
    const execute = vi.fn(({ name }: { name: string }) => `hello ${name}`);
    const greet = only({ greet: tool({ inputSchema: nameSchema({ async }), execute }) });
    expect(greet.jsonSchema).toMatchObject({ type: "object", required: ["name"] });
    expect(await run(greet, { name: "  Ada " })).toMatchObject({ status: "ok", content: "hello Ada" });
    expect((await run(greet, { name: " " })).content).toBe(
      'Invalid arguments for tool "greet": name: must be a non-empty string.',
    );
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it("takes a lazy schema", async () => {
    const greet = only({
      greet: tool({ inputSchema: () => jsonSchema(weatherSchema), execute: () => "ok" }),
    });
    expect(greet.jsonSchema).toBe(weatherSchema);
    expect((await run(greet, {})).status).toBe("error");
  });

  it("reads a failed validate's issues only when every one has a message, else its message", async () => {
    const failWith = (cause: unknown) => () => ({
      success: false as const,
      error: Object.assign(new Error("bad input"), { cause }),
    });
    const weatherFailing = (cause: unknown) =>
      only({
        weather: tool({
          inputSchema: jsonSchema(weatherSchema, { validate: failWith(cause) }),
          execute: () => 1,
        }),
      });
    expect((await run(weatherFailing([{ message: "a city, please", path: ["city"] }]), {})).content).toBe(
      'Invalid arguments for tool "weather": city: a city, please.',
    );
    for (const cause of [[{ message: "a city, please" }, null], [null], ["junk"]])
      expect((await run(weatherFailing(cause), {})).content).toBe(
        'Invalid arguments for tool "weather": bad input.',
      );
  });

  it("places a Standard Schema issue without a path on the arguments, and names any key", async () => {
    const objectSchema = () => ({ type: "object" });
    const failingWith = (issue: StandardSchemaV1.Issue) =>
      only({
        odd: tool({
          inputSchema: {
            "~standard": {
              version: 1,
              vendor: "test",
              validate: () => ({ issues: [issue] }),
              jsonSchema: { input: objectSchema, output: objectSchema },
            },
          } as StandardSchemaV1<unknown, unknown>,
          execute: () => 1,
        }),
      });
    expect((await run(failingWith({ message: "is wrong" }), {})).content).toBe(
      'Invalid arguments for tool "odd": is wrong.',
    );
    const path = [Symbol("tag"), { key: 0 }, "x"];
    expect((await run(failingWith({ message: "is wrong", path }), {})).content).toBe(
      'Invalid arguments for tool "odd": Symbol(tag).0.x: is wrong.',
    );
  });

  it("gives a validator that throws an error result, not an exception", async () => {
    const validate = () => {
      throw new Error("validator broke");
    };
    const weather = only({
      weather: tool({ inputSchema: jsonSchema(weatherSchema, { validate }), execute: () => 1 }),
    });
    expect(await run(weather, { city: "Oslo" })).toMatchObject({
      status: "error",
      content: 'Invalid arguments for tool "weather": the input schema threw: validator broke.',
    });
  });
});

describe("fromAiSdkTools, execute", () => {
  it("calls execute with the call's id, agent-core's signal, no history and no context", async () => {
    const execute = vi.fn((_input: { city: string }, _options: unknown) => "done");
    const weather = only({
      weather: tool({ inputSchema: jsonSchema<{ city: string }>(weatherSchema), execute }),
    });
    const scope = new AbortScope();
    await run(weather, { city: "Oslo" }, scope);
    expect(execute).toHaveBeenCalledWith(
      { city: "Oslo" },
      { toolCallId: "c1", abortSignal: scope.signal, messages: [], context: {} },
    );
  });

  it("takes the last value of an async iterable of preliminary outputs as the result", async () => {
    async function* progress() {
      yield { status: "loading" };
      yield { status: "done", temperature: 21 };
    }
    const weather = only({ weather: tool({ inputSchema: jsonSchema(weatherSchema), execute: progress }) });
    expect(await run(weather, { city: "Oslo" })).toMatchObject({
      status: "ok",
      details: { status: "done", temperature: 21 },
    });
  });

  it("reports an async iterable that throws as the tool failing", async () => {
    async function* broken() {
      yield 1;
      throw new Error("stream broke");
    }
    const weather = only({ weather: tool({ inputSchema: jsonSchema(weatherSchema), execute: broken }) });
    expect(await run(weather, { city: "Oslo" })).toMatchObject({ status: "error", content: "stream broke" });
  });

  it("stops reading an async iterable at its next value once the call is aborted, and closes it", async () => {
    let yielded = 0;
    let closed = false;
    async function* endless() {
      try {
        for (;;) {
          yielded++;
          yield { status: "loading" };
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      } finally {
        closed = true;
      }
    }
    const weather = only({ weather: tool({ inputSchema: jsonSchema(weatherSchema), execute: endless }) });
    const scope = new AbortScope();
    const result = run(weather, { city: "Oslo" }, scope);
    await new Promise((resolve) => setTimeout(resolve, 20));
    scope.abort(new Error("stop"));
    expect(await result).toMatchObject({ status: "aborted" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(closed).toBe(true);
    const atClose = yielded;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(yielded).toBe(atClose);
  });

  it("takes a tool whose type says function, and an execute that returns nothing", async () => {
    const ping = only({
      ping: { type: "function", inputSchema: z.object({}), execute: () => null } as never,
    });
    expect(await run(ping, {})).toMatchObject({ status: "ok" });
    const quiet = only({ quiet: tool({ inputSchema: z.object({}), execute: () => undefined }) });
    expect(await run(quiet, {})).toMatchObject({ status: "ok" });
  });

  it("makes a tool without execute a client tool", () => {
    const confirm = only({
      confirm: tool({ inputSchema: z.object({ question: z.string() }), outputSchema: z.boolean() }),
    });
    expect(confirm.execution).toBe("client");
    expect(confirm.execute).toBeUndefined();
  });

  it("takes a dynamic tool as any other", async () => {
    const lookup = only({
      lookup: dynamicTool({
        description: "Looks up",
        inputSchema: jsonSchema(weatherSchema),
        execute: async () => 7,
      }),
    });
    expect(await run(lookup, { city: "Oslo" })).toMatchObject({ status: "ok", content: "7" });
  });
});

describe("fromAiSdkTools, needsApproval", () => {
  it("keeps a boolean, and asks a function with the input, the call's id and the conversation", async () => {
    const needsApproval = vi.fn(async (input: { city: string }) => input.city === "Paris");
    const [always, sometimes] = fromAiSdkTools({
      always: tool({ inputSchema: jsonSchema(weatherSchema), execute: () => 1, needsApproval: true }),
      sometimes: tool({
        inputSchema: jsonSchema<{ city: string }>(weatherSchema),
        execute: () => 1,
        needsApproval,
      }),
    });
    expect(always?.needsApproval).toBe(true);
    const check = sometimes?.needsApproval as (args: unknown, context: unknown) => Promise<boolean>;
    const call = { id: "c9", name: "sometimes", args: { city: "Paris" } };
    const messages = [{ role: "user", content: "Weather in Paris?", timestamp: 1 }];
    await expect(check({ city: "Paris" }, { runId: "r", call, tool: sometimes, messages })).resolves.toBe(
      true,
    );
    expect(needsApproval).toHaveBeenCalledWith(
      { city: "Paris" },
      {
        toolCallId: "c9",
        messages: [{ role: "user", content: [{ type: "text", text: "Weather in Paris?" }] }],
        context: {},
      },
    );
  });
});

describe("fromAiSdkTools, tools agent-core cannot take", () => {
  const refusals: [string, ToolSet, RegExp][] = [
    [
      "a provider tool",
      {
        web_search: {
          type: "provider",
          id: "openai.web_search",
          args: {},
          inputSchema: z.object({}),
          isProviderExecuted: true,
        },
      },
      /^Tool "web_search": "openai\.web_search" is a provider tool/,
    ],
    [
      "a name model APIs refuse",
      { "get.weather": tool({ inputSchema: z.object({}), execute: () => 1 }) },
      /Invalid tool name "get\.weather"/,
    ],
    [
      "a schema ajv cannot compile",
      { bad: tool({ inputSchema: jsonSchema({ type: "nope" } as never), execute: () => 1 }) },
      /^Tool "bad": its JSON Schema cannot be compiled: /,
    ],
    [
      "a JSON Schema whose root is no object (as defineTool refuses)",
      { word: tool({ inputSchema: jsonSchema<string>({ type: "string" }), execute: () => 1 }) },
      /^Tool "word": inputSchema must describe an object of arguments/,
    ],
    [
      "a JSON Schema that is a promise",
      { later: tool({ inputSchema: jsonSchema(Promise.resolve(weatherSchema)), execute: () => 1 }) },
      /^Tool "later": its JSON Schema is a promise/,
    ],
    [
      "a Standard Schema without JSON Schema",
      { greet: tool({ inputSchema: nameSchema({ jsonSchema: false }), execute: () => 1 }) },
      /^Tool "greet": its inputSchema cannot be expressed as JSON Schema \(.*does not support JSON Schema/,
    ],
    [
      "an inputSchema that is no schema",
      { odd: { inputSchema: { type: "object" }, execute: () => 1 } as never },
      /^Tool "odd": inputSchema must be a zod schema, a jsonSchema\(\) schema or a Standard Schema/,
    ],
    [
      "a lazy schema that returns no schema",
      { lazy: tool({ inputSchema: (() => ({ type: "object" })) as never, execute: () => 1 }) },
      /^Tool "lazy": its lazy inputSchema did not return a schema\.$/,
    ],
    ...[null, "text", [{ type: "object" }]].map((value): [string, ToolSet, RegExp] => [
      `a JSON Schema that is ${JSON.stringify(value)}`,
      { odd: tool({ inputSchema: jsonSchema(value as never), execute: () => 1 }) },
      /^Tool "odd": its JSON Schema is not an object\.$/,
    ]),
    ...[null, undefined].map((value): [string, ToolSet, RegExp] => [
      `an inputSchema that is ${value}`,
      { odd: { inputSchema: value, execute: () => 1 } as never },
      /^Tool "odd": inputSchema must be a zod schema, a jsonSchema\(\) schema or a Standard Schema/,
    ]),
    [
      "a lazy schema that throws",
      {
        lazy: tool({
          inputSchema: () => {
            throw new Error("boom");
          },
          execute: () => 1,
        }),
      },
      /^Tool "lazy": its lazy inputSchema threw: boom$/,
    ],
    ["a tool that is null", { nothing: null as never }, /^Tool "nothing": expected an AI SDK tool/],
    ["a tool that is a string", { text: "search" as never }, /^Tool "text": expected an AI SDK tool/],
    [
      "an unknown tool type",
      { odd: { type: "mcp", inputSchema: z.object({}) } as never },
      /^Tool "odd": unknown tool type "mcp"/,
    ],
    [
      "an execute that is no function",
      { odd: { inputSchema: z.object({}), execute: "run" } as never },
      /^Tool "odd": execute must be a function/,
    ],
    [
      "a needsApproval of another type",
      { odd: { inputSchema: z.object({}), execute: () => 1, needsApproval: "yes" } as never },
      /^Tool "odd": needsApproval must be a boolean or a function/,
    ],
    [
      "a description computed from context",
      { odd: { inputSchema: z.object({}), execute: () => 1, description: () => "d" } as never },
      /^Tool "odd": description must be a string/,
    ],
  ];

  it.each(refusals)("refuses %s with an InvalidConfigError naming the tool", (_label, set, message) => {
    expect(() => fromAiSdkTools(set)).toThrow(InvalidConfigError);
    expect(() => fromAiSdkTools(set)).toThrow(message);
  });

  it.each([[null], [[]], ["tools"], [7]])("refuses %j as a ToolSet", (value) => {
    expect(() => fromAiSdkTools(value as never)).toThrow(InvalidConfigError);
    expect(() => fromAiSdkTools(value as never)).toThrow(
      /^fromAiSdkTools\(\) takes an AI SDK ToolSet: \{ name: tool\(\{ … \}\) \}\.$/,
    );
  });
});
