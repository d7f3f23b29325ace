import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { compileJsonSchema } from "./json-schema-validation.js";

const order = {
  type: "object",
  properties: {
    id: { type: "string" },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: { sku: { type: "string" }, qty: { type: "integer", minimum: 1 } },
        required: ["sku", "qty"],
      },
    },
  },
  required: ["id"],
  additionalProperties: false,
} as const;

describe("compileJsonSchema", () => {
  it("passes a conforming value with no issues", () => {
    expect(compileJsonSchema(order)({ id: "o1", items: [{ sku: "a", qty: 2 }] })).toEqual([]);
  });

  it("reports every issue at once, each at its path", () => {
    const issues = compileJsonSchema(order)({ items: [{ sku: 5, qty: 0 }, {}], note: "x" });
    expect(issues).toEqual(
      expect.arrayContaining([
        { path: ["id"], message: "is required" },
        { path: ["note"], message: "is not an allowed property" },
        { path: ["items", 0, "sku"], message: "must be string" },
        { path: ["items", 0, "qty"], message: "must be >= 1" },
        { path: ["items", 1, "sku"], message: "is required" },
        { path: ["items", 1, "qty"], message: "is required" },
      ]),
    );
    expect(issues).toHaveLength(6);
  });

  it("reports a wrong value itself at the empty path, and unescapes JSON Pointer segments", () => {
    expect(compileJsonSchema(order)("o1")).toEqual([{ path: [], message: "must be object" }]);
    const slashed = compileJsonSchema({ type: "object", properties: { "a/b~c": { type: "number" } } });
    expect(slashed({ "a/b~c": "1" })).toEqual([{ path: ["a/b~c"], message: "must be number" }]);
  });

  it("reads draft-07 by default and 2020-12 when $schema says so", () => {
    // Array-form `items` is draft-07's tuple; 2020-12 has `prefixItems` instead and refuses it.
    const tuple = { type: "array", items: [{ type: "string" }, { type: "number" }] } as const;
    expect(compileJsonSchema(tuple)(["a", "b"])).toEqual([{ path: [1], message: "must be number" }]);
    expect(() =>
      compileJsonSchema({ $schema: "https://json-schema.org/draft/2020-12/schema", ...tuple } as never),
    ).toThrow(/items/);
    const prefixed = compileJsonSchema({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "array",
      prefixItems: [{ type: "string" }],
    } as never);
    expect(prefixed([1])).toEqual([{ path: [0], message: "must be string" }]);
  });

  it("reads 2019-09 when $schema says so: its own keywords apply", () => {
    // `dependentRequired` is 2019-09's; draft-07 does not know it and would ignore it.
    const schema = {
      type: "object",
      properties: { card: { type: "string" }, cvc: { type: "string" } },
      dependentRequired: { card: ["cvc"] },
    };
    const issue = [{ path: [], message: "must have property cvc when property card is present" }];
    expect(
      compileJsonSchema({ $schema: "https://json-schema.org/draft/2019-09/schema", ...schema } as never)({
        card: "4111",
      }),
    ).toEqual(issue);
    expect(compileJsonSchema(schema as never)({ card: "4111" })).toEqual([]);
  });

  it("reads a $schema that names a dialect in any spelling: http or https, with or without #", () => {
    const tuple = { type: "array", items: [{ type: "string" }, { type: "number" }] };
    for (const draft7 of [
      "http://json-schema.org/draft-07/schema#",
      "http://json-schema.org/draft-07/schema",
      "https://json-schema.org/draft-07/schema#",
      "https://json-schema.org/draft-07/schema",
    ])
      expect(compileJsonSchema({ $schema: draft7, ...tuple } as never)(["a", "b"])).toEqual([
        { path: [1], message: "must be number" },
      ]);
    const prefixed = { type: "array", prefixItems: [{ type: "string" }] };
    for (const draft2020 of [
      "https://json-schema.org/draft/2020-12/schema#",
      "http://json-schema.org/draft/2020-12/schema",
    ])
      expect(compileJsonSchema({ $schema: draft2020, ...prefixed } as never)([1])).toEqual([
        { path: [0], message: "must be string" },
      ]);
    const dependent = { type: "object", dependentRequired: { card: ["cvc"] } };
    expect(
      compileJsonSchema({ $schema: "http://json-schema.org/draft/2019-09/schema#", ...dependent } as never)({
        card: "4111",
      }),
    ).toEqual([{ path: [], message: "must have property cvc when property card is present" }]);
  });

  it("turns array indexes in a path into numbers, and only those", () => {
    const keyed = compileJsonSchema({
      type: "object",
      additionalProperties: { type: "array", items: { type: "number" } },
    });
    // A segment of digits without a leading zero reads as an index (a key "10" too: a pointer
    // does not say which); "01", "1x" and "x1" stay keys. (Integer-like keys come first in an object.)
    expect(keyed({ "01": ["x"], "1x": ["x"], x1: ["x"], "10": ["x"] })).toEqual([
      { path: [10, 0], message: "must be number" },
      { path: ["01", 0], message: "must be number" },
      { path: ["1x", 0], message: "must be number" },
      { path: ["x1", 0], message: "must be number" },
    ]);
  });

  it("ignores unknown keywords and formats, as annotations", () => {
    const validate = compileJsonSchema({
      type: "object",
      "x-ui": { widget: "email" },
      properties: { mail: { type: "string", format: "email" } },
    } as never);
    expect(validate({ mail: "not an address" })).toEqual([]);
  });

  it("lets go of a schema and its validator once they are dropped, however many are compiled", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const compileDropped = () => {
      const properties = { name: { type: "string" } };
      expect(compileJsonSchema({ type: "object", properties } as never)({ name: 1 })).toHaveLength(1);
      return new WeakRef(properties);
    };
    const first = compileDropped();
    // As many as tools are compiled again and again: an MCP server's, listed for each new agent.
    for (let i = 0; i < 1500; i++) compileDropped();
    for (let i = 0; i < 5 && first.deref() !== undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
    }
    expect(first.deref()).toBeUndefined();
  });

  it('resolves "$ref": "#" to the schema itself (a recursive schema), with or without an $id of its own', () => {
    const tree = {
      type: "object",
      properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } },
      required: ["name"],
    } as const;
    for (const schema of [
      tree,
      { ...tree, $id: "https://example.com/tree" },
      { ...tree, $schema: "https://json-schema.org/draft/2020-12/schema" },
    ]) {
      const validate = compileJsonSchema(schema as never);
      expect(validate({ name: "a", children: [{ name: "b", children: [{ name: "c" }] }] })).toEqual([]);
      expect(validate({ name: "a", children: [{ name: "b", children: [{ name: 3 }] }] })).toEqual([
        { path: ["children", 0, "children", 0, "name"], message: "must be string" },
      ]);
    }
  });

  it("compiles schemas that share an $id side by side", () => {
    const first = compileJsonSchema({ $id: "https://example.com/args", type: "string" });
    const second = compileJsonSchema({ $id: "https://example.com/args", type: "number" });
    expect([first("a"), second(1)]).toEqual([[], []]);
  });

  it.each([
    ["an invalid schema", { type: "nope" }],
    ["an unknown $schema", { $schema: "http://json-schema.org/draft-04/schema#", type: "object" }],
    ["a $ref to nowhere", { $ref: "#/definitions/missing" }],
  ])("throws for %s", (_label, schema) => {
    expect(() => compileJsonSchema(schema as never)).toThrow(Error);
  });

  it("takes the boolean schemas: true accepts anything, false nothing", () => {
    expect(compileJsonSchema(true as never)("anything")).toEqual([]);
    expect(compileJsonSchema(false as never)("anything")).toEqual([
      { path: [], message: "boolean schema is false" },
    ]);
  });
});
