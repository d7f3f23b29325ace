import { tool } from "@ai-sdk/provider-utils";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentError, DuplicateToolError, InvalidConfigError } from "../errors.js";
import { defineTool } from "./define-tool.js";
import { ToolRegistry } from "./registry.js";

const calculator = defineTool({
  name: "calculator",
  description: "Evaluates an expression",
  inputSchema: z.object({ expression: z.string() }),
  execute: () => ({ result: 4 }),
});
const time = defineTool({
  name: "get_current_time",
  description: "Returns the current date and time",
  inputSchema: z.object({}),
  execute: () => ({}),
});

describe("ToolRegistry (Go tools tests)", () => {
  it("starts empty (TestNewToolRegistry)", () => {
    expect(new ToolRegistry().all()).toEqual([]);
  });

  it("registers and finds by name (TestToolRegistryRegister, ...GetNonExistent, ...Multiple)", () => {
    const registry = new ToolRegistry().register(calculator, time);
    expect(registry.get("calculator")?.name).toBe("calculator");
    expect(registry.get("nonexistent")).toBeUndefined();
    expect(registry.all()).toHaveLength(2);
    expect(registry.has("get_current_time")).toBe(true);
  });

  it("keeps registration order, in names and in the model's tool list", () => {
    const registry = new ToolRegistry([time, calculator]);
    expect(registry.names()).toEqual(["get_current_time", "calculator"]);
    expect(registry.toModelTools().map((t) => t.name)).toEqual(["get_current_time", "calculator"]);
  });

  it("rejects a duplicate name instead of overwriting", () => {
    expect(() => new ToolRegistry([calculator, calculator])).toThrow(DuplicateToolError);
    expect(() => new ToolRegistry([calculator, calculator])).toThrow(/"calculator" is already registered/);
    const registry = new ToolRegistry([calculator]);
    expect(() => registry.register(calculator)).toThrow(DuplicateToolError);
    expect(() => registry.register(calculator)).toThrow(/"calculator" is already registered/);
  });

  it("rejects something that is not a defined tool", () => {
    expect(() => new ToolRegistry().register({ name: "x" } as never)).toThrow(InvalidConfigError);
  });

  it("sends the schema intact: nested objects, arrays with items, enums, descriptions, required", () => {
    const search = defineTool({
      name: "search",
      description: "Search",
      inputSchema: z.object({
        query: z.string().describe("what to look for"),
        filters: z.object({ kind: z.enum(["doc", "code"]), tags: z.array(z.string()) }),
        limit: z.number().int().optional(),
      }),
      execute: () => [],
    });
    const [tool] = new ToolRegistry([search]).toModelTools();
    expect(tool?.inputSchema).toEqual({
      type: "object",
      properties: {
        query: { type: "string", description: "what to look for" },
        filters: {
          type: "object",
          properties: {
            kind: { type: "string", enum: ["doc", "code"] },
            tags: { type: "array", items: { type: "string" } },
          },
          required: ["kind", "tags"],
          additionalProperties: false,
        },
        limit: { type: "integer", minimum: expect.any(Number), maximum: expect.any(Number) },
      },
      required: ["query", "filters"],
      additionalProperties: false,
    });
  });
});

describe("defineTool", () => {
  it("has metadata the model needs (Go TestToolMetadata)", () => {
    expect(calculator.description).not.toBe("");
    expect(calculator.jsonSchema).toMatchObject({ type: "object", required: ["expression"] });
  });

  it("rejects names model APIs refuse, non-zod schemas and a missing execute", () => {
    const base = { description: "d", inputSchema: z.object({}), execute: () => 1 };
    expect(() => defineTool({ ...base, name: "has space" })).toThrow(/Invalid tool name "has space"/);
    expect(() => defineTool({ ...base, name: "ok", inputSchema: { type: "object" } as never })).toThrow(
      /inputSchema must be a zod schema/,
    );
    expect(() => defineTool({ ...base, name: "ok", execute: undefined as never })).toThrow(AgentError);
    expect(() => defineTool({ ...base, name: "ok", execute: undefined as never })).toThrow(
      /^Tool "ok": execute must be a function\.$/,
    );
  });

  it('refuses a missing name (the pattern alone took it as the text "undefined") and a description that is no string', () => {
    const base = { description: "d", inputSchema: z.object({}), execute: () => 1 };
    expect(() => defineTool({ ...base } as never)).toThrow(/^Invalid tool name undefined: use 1-64/);
    expect(() => defineTool({ ...base, name: 42 } as never)).toThrow(/^Invalid tool name 42: use 1-64/);
    expect(() => defineTool({ ...base, name: "ok", description: 42 } as never)).toThrow(
      /^Tool "ok": description must be a string\.$/,
    );
  });

  it("refuses a schema whose root is no object: model APIs send the arguments as one JSON object", () => {
    const base = { name: "t", description: "d", execute: () => 1 };
    for (const inputSchema of [
      z.string(),
      z.array(z.number()),
      z.union([z.object({ a: z.string() }), z.object({ b: z.number() })]),
    ])
      expect(() => defineTool({ ...base, inputSchema })).toThrow(
        /^Tool "t": inputSchema must describe an object of arguments \(z\.object\(\{ … \}\)\)/,
      );
    for (const inputSchema of [
      z.object({}),
      z.record(z.string(), z.number()),
      z.object({ a: z.string() }).strict(),
    ])
      expect(defineTool({ ...base, inputSchema }).jsonSchema.type).toBe("object");
  });

  it('takes execution "server" with an execute, and "client" only without one', () => {
    const base = { name: "page", description: "d", inputSchema: z.object({}) };
    expect(defineTool({ ...base, execution: "server", execute: () => 1 }).execution).toBe("server");
    expect(defineTool({ ...base, execution: "client" }).execution).toBe("client");
    expect(() => defineTool({ ...base, execution: "client", execute: () => 1 } as never)).toThrow(
      /^Tool "page": a client tool runs where the user is and has no execute\.$/,
    );
    expect(() => defineTool({ ...base, execution: "browser", execute: () => 1 } as never)).toThrow(
      /^Tool "page": execution must be "server" or "client", got "browser"\.$/,
    );
  });

  it("takes needsApproval as a boolean or a function, and refuses anything else", () => {
    const base = { name: "pay", description: "d", inputSchema: z.object({}), execute: () => 1 };
    for (const needsApproval of [true, false, () => true])
      expect(defineTool({ ...base, needsApproval }).needsApproval).toBe(needsApproval);
    for (const needsApproval of ["yes", 1, null]) {
      const defining = () => defineTool({ ...base, needsApproval } as never);
      expect(defining).toThrow(InvalidConfigError);
      expect(defining).toThrow(
        /^Tool "pay": needsApproval must be a boolean or a function of the arguments\.$/,
      );
    }
  });
});

describe("ToolRegistry.register, values that are not tools", () => {
  it.each([
    ["null", null],
    ["undefined", undefined],
    ["a string", "calculator"],
    ["a number", 7],
  ])("rejects %s with an InvalidConfigError", (_label, value) => {
    expect(() => new ToolRegistry().register(value as never)).toThrow(InvalidConfigError);
    expect(() => new ToolRegistry().register(value as never)).toThrow(
      "ToolRegistry.register() takes tools made with defineTool() or AI SDK ToolSets ({ name: tool({ … }) }).",
    );
  });

  it("rejects null given to the constructor the same way", () => {
    expect(() => new ToolRegistry(null as never)).toThrow(InvalidConfigError);
  });
});

describe("defineTool, schemas without a JSON Schema", () => {
  it.each([
    ["a bigint", z.object({ n: z.bigint() })],
    ["a date", z.object({ d: z.date() })],
  ])("rejects %s with an InvalidConfigError naming the tool", (_label, inputSchema) => {
    expect(() => defineTool({ name: "when", description: "d", inputSchema, execute: () => 1 })).toThrow(
      InvalidConfigError,
    );
    expect(() => defineTool({ name: "when", description: "d", inputSchema, execute: () => 1 })).toThrow(
      /^Tool "when": its inputSchema cannot be expressed as JSON Schema \(.+\)\.$/,
    );
  });
});

describe("ToolRegistry with AI SDK ToolSets", () => {
  const weather = tool({ inputSchema: z.object({ city: z.string() }), execute: ({ city }) => city });

  it("takes a ToolSet as it is, or beside defineTool() tools, keeping the order", () => {
    expect(new ToolRegistry({ weather }).names()).toEqual(["weather"]);
    expect(new ToolRegistry([calculator, { weather }]).names()).toEqual(["calculator", "weather"]);
    expect(new ToolRegistry().register({ weather }, time).names()).toEqual(["weather", "get_current_time"]);
  });

  it("refuses a taken name and then adds none of the tools it was given", () => {
    const registry = new ToolRegistry([calculator]);
    expect(() => registry.register({ weather, calculator: weather })).toThrow(DuplicateToolError);
    expect(() => registry.register({ weather }, { weather })).toThrow(/"weather" is already registered/);
    expect(registry.names()).toEqual(["calculator"]);
  });

  it("refuses a tool object that was not made with defineTool()", () => {
    expect(() =>
      new ToolRegistry().register({ name: "x", description: "d", inputSchema: z.object({}) } as never),
    ).toThrow(/takes tools made with defineTool\(\): "x" was not/);
  });
});
