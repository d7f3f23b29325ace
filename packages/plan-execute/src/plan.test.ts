import { defineTool, ToolRegistry } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { normalizePlan, type PlanStep, parseRef, refsIn, resolveRefs, validatePlan } from "./plan.js";

const tools = new ToolRegistry([
  defineTool({
    name: "add",
    description: "a+b",
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => a + b,
  }),
]);

describe("normalizePlan", () => {
  it("numbers steps without ids, keeps good ids, renames clashes, and turns $refs into dependencies", () => {
    const steps = normalizePlan(
      {
        steps: [
          { tool: "add", args: { a: 1, b: 2 } },
          { id: "x y!", tool: "add", args: { a: { $ref: "steps.s1.result" }, b: 1 } },
          { id: "done1", tool: "add", args: { a: { $ref: "steps.xy.result" }, b: 1 }, dependsOn: ["s1"] },
        ],
      },
      new Set(["done1"]),
    );
    expect(steps.map((s) => s.id)).toEqual(["s1", "xy", "s3"]);
    expect(steps[1]?.dependsOn).toEqual(["s1"]);
    expect(steps[2]?.dependsOn).toEqual(["s1", "xy"]);
  });
});

describe("validatePlan", () => {
  it("reports unknown tools, bad arguments, missing dependencies and cycles", () => {
    const steps = normalizePlan({
      steps: [
        { id: "a", tool: "nope" },
        { id: "b", tool: "add", args: { a: "1", b: 2 } },
        { id: "c", tool: "add", args: { a: 1, b: 2 }, dependsOn: ["zz"] },
        { id: "d", tool: "add", args: { a: { $ref: "steps.e.result" }, b: 1 } },
        { id: "e", tool: "add", args: { a: { $ref: "steps.d.result" }, b: 1 } },
      ],
    });
    expect(validatePlan(steps, tools, new Set())).toEqual([
      'step a: unknown tool "nope" (available: add)',
      'step b: invalid arguments for "add": a: Invalid input: expected number, received string',
      'step c: depends on "zz", which is not a step of the plan',
      "steps d, e depend on each other",
    ]);
  });

  it("leaves the arguments of a tool whose schema validates asynchronously to the check when it runs", () => {
    const lookup = defineTool({
      name: "lookup",
      description: "finds a city",
      inputSchema: z.object({ city: z.string().refine(async (city) => city.length > 0) }),
      execute: ({ city }) => city,
    });
    const steps = normalizePlan({ steps: [{ id: "a", tool: "lookup", args: { city: "" } }] });
    expect(validatePlan(steps, new ToolRegistry([lookup]), new Set())).toEqual([]);
  });

  it("accepts references to steps completed by an earlier plan", () => {
    const steps = normalizePlan(
      { steps: [{ tool: "add", args: { a: { $ref: "steps.old.result" }, b: 1 } }] },
      new Set(["old"]),
    );
    expect(validatePlan(steps, tools, new Set(["old"]))).toEqual([]);
  });
});

describe("$ref", () => {
  const results = new Map<string, unknown>([["s1", { items: [{ name: "Oslo" }], total: 3 }]]);

  it("resolves whole results and paths, deep inside arguments", () => {
    expect(
      resolveRefs(
        { city: { $ref: "steps.s1.result.items.0.name" }, all: [{ $ref: "steps.s1.result" }] },
        results,
      ),
    ).toEqual({
      city: "Oslo",
      all: [{ items: [{ name: "Oslo" }], total: 3 }],
    });
    expect(refsIn({ x: [{ $ref: "steps.a.result" }], y: { $ref: "not a ref" } })).toEqual([
      { stepId: "a", path: [] },
    ]);
  });

  it("fails clearly for a step without result or a path that does not exist", () => {
    expect(() => resolveRefs({ $ref: "steps.s9.result" }, results)).toThrow(
      "refers to the result of step s9, which has none",
    );
    expect(() => resolveRefs({ $ref: "steps.s1.result.items.5.name" }, results)).toThrow(
      "refers to steps.s1.result.items.5.name, which does not exist",
    );
  });
});

const greet = defineTool({
  name: "greet",
  description: "hello",
  inputSchema: z
    .object({ who: z.object({ name: z.string() }) })
    .refine((args) => args.who.name !== "nobody", "nobody to greet"),
  execute: ({ who }) => `hello ${who.name}`,
});
const withGreet = new ToolRegistry([...tools.all(), greet]);

const step = (id: string, dependsOn: string[] = []): PlanStep => ({
  id,
  tool: "add",
  args: { a: 1, b: 2 },
  dependsOn,
});

describe("normalizePlan ids", () => {
  it("keeps letters, digits, _ and -, trims, and cuts an id at 16 characters", () => {
    const steps = normalizePlan({
      steps: [
        { id: "  a_B-9  ", tool: "add" },
        { id: "abcdefghijklmnopqrstu", tool: "add" },
      ],
    });
    expect(steps.map((s) => s.id)).toEqual(["a_B-9", "abcdefghijklmnop"]);
  });

  it("numbers a step whose id is empty, unusable or already taken by its position", () => {
    const steps = normalizePlan(
      {
        steps: [
          { id: "", tool: "add" },
          { id: "!!!", tool: "add" },
          { id: "s1", tool: "add" },
          { tool: "add" },
        ],
      },
      new Set(["s2"]),
    );
    // s1 is the first step's, s2 was taken by an earlier plan, so the third step's "s1" becomes s4
    // and the fourth (s4 taken) s5.
    expect(steps.map((s) => s.id)).toEqual(["s1", "s3", "s4", "s5"]);
  });

  it("keeps null and other plain values in the arguments as they are", () => {
    const [only] = normalizePlan({ steps: [{ id: "a", tool: "add", args: { a: null, b: [1, null, "x"] } }] });
    expect(only?.args).toEqual({ a: null, b: [1, null, "x"] });
  });

  it("gives steps without args or dependencies empty ones, and lists each dependency once", () => {
    const [first, second] = normalizePlan({
      steps: [
        { id: "a", tool: "add" },
        {
          id: "b",
          tool: "add",
          args: { a: { $ref: "steps.a.result" }, b: { $ref: "steps.a.result" } },
          dependsOn: ["a"],
        },
      ],
    });
    expect(first).toEqual({ id: "a", tool: "add", args: {}, dependsOn: [] });
    expect(second?.dependsOn).toEqual(["a"]);
  });

  it("renames a clashing id in the $refs and dependencies that point to it, paths and arrays included", () => {
    const steps = normalizePlan(
      {
        steps: [
          { id: "old", tool: "add" },
          {
            id: "b",
            tool: "add",
            args: { list: [{ $ref: "steps.old.result.items.0" }], keep: { $ref: "steps.zz.result" }, n: 1 },
            dependsOn: ["old"],
          },
        ],
      },
      new Set(["old"]),
    );
    expect(steps[0]?.id).toBe("s1");
    expect(steps[1]?.args).toEqual({
      list: [{ $ref: "steps.s1.result.items.0" }],
      keep: { $ref: "steps.zz.result" },
      n: 1,
    });
    expect(steps[1]?.dependsOn).toEqual(["s1", "zz"]);
  });
});

describe("duplicate step ids", () => {
  it("are kept, not renamed, so the plan is sent back instead of its $refs silently changing", () => {
    const steps = normalizePlan({
      steps: [
        { id: "a", tool: "add", args: { a: 1, b: 2 } },
        { id: "a", tool: "add", args: { a: 3, b: 4 } },
        { id: "b", tool: "add", args: { a: { $ref: "steps.a.result" }, b: 1 } },
      ],
    });
    expect(steps.map((s) => s.id)).toEqual(["a", "a", "b"]);
    expect(validatePlan(steps, tools, new Set())).toEqual([
      'more than one step has the id "a"; give every step its own id',
    ]);
  });

  it("are reported once each, without a made-up cycle through the shared id", () => {
    const steps = normalizePlan({
      steps: [
        { id: "a", tool: "add", args: { a: 1, b: 2 } },
        { id: "a", tool: "add", args: { a: { $ref: "steps.a.result" }, b: 1 } },
        { id: "a", tool: "add", args: { a: 1, b: 2 } },
        { id: "c", tool: "add", args: { a: 1, b: 2 } },
        { id: "c", tool: "add", args: { a: 1, b: 2 } },
      ],
    });
    expect(validatePlan(steps, tools, new Set())).toEqual([
      'more than one step has the id "a"; give every step its own id',
      'more than one step has the id "c"; give every step its own id',
    ]);
  });

  it("are reported when the id has no usable character, rather than a dependency silently meaning the last such step", () => {
    const steps = normalizePlan({
      steps: [
        { id: "!!", tool: "add", args: { a: 1, b: 2 } },
        { id: "!!", tool: "add", args: { a: 3, b: 4 } },
        { id: "sum", tool: "add", args: { a: 5, b: 6 }, dependsOn: ["!!"] },
      ],
    });
    expect(validatePlan(steps, tools, new Set())).toEqual([
      'more than one step has the id "s1"; give every step its own id',
    ]);
  });

  it("do not count a blank id, which is no id: a dependency on it is on no step", () => {
    const steps = normalizePlan({
      steps: [
        { id: "", tool: "add", args: { a: 1, b: 2 } },
        { id: " ", tool: "add", args: { a: 3, b: 4 } },
        { id: "sum", tool: "add", args: { a: 5, b: 6 }, dependsOn: [""] },
      ],
    });
    expect(steps.map((s) => s.id)).toEqual(["s1", "s2", "sum"]);
    expect(validatePlan(steps, tools, new Set())).toEqual([
      'step sum: depends on "", which is not a step of the plan',
    ]);
  });

  it("include the id of a step that already succeeded, rather than its $refs silently meaning the new step", () => {
    const completed = new Set(["a"]);
    const steps = normalizePlan(
      {
        steps: [
          { id: "a", tool: "add", args: { a: 1, b: 2 } },
          { id: "b", tool: "add", args: { a: { $ref: "steps.a.result" }, b: 1 } },
        ],
      },
      completed,
      completed,
    );
    expect(steps.map((s) => s.args)).toEqual([
      { a: 1, b: 2 },
      { a: { $ref: "steps.a.result" }, b: 1 },
    ]);
    expect(validatePlan(steps, tools, completed)).toEqual([
      'a step of an earlier plan has the id "a"; give every new step a new id',
    ]);
  });

  it("are told apart from ids that only become equal once cleaned or cut, which are renamed", () => {
    const steps = normalizePlan({
      steps: [
        { id: "lookup_population_oslo", tool: "add", args: { a: 1, b: 2 } },
        { id: "lookup_population_bergen", tool: "add", args: { a: 3, b: 4 } },
        { id: "sum", tool: "add", args: { a: { $ref: "steps.lookup_population_bergen.result" }, b: 1 } },
      ],
    });
    expect(steps.map((s) => s.id)).toEqual(["lookup_populatio", "s2", "sum"]);
    expect(steps[2]?.dependsOn).toEqual(["s2"]);
    expect(validatePlan(steps, tools, new Set())).toEqual([]);
  });
});

describe("validatePlan, each problem alone", () => {
  it("lists every available tool, or says there are none", () => {
    const [unknown] = normalizePlan({ steps: [{ id: "a", tool: "nope" }] });
    expect(validatePlan([unknown as PlanStep], withGreet, new Set())).toEqual([
      'step a: unknown tool "nope" (available: add, greet)',
    ]);
    expect(validatePlan([unknown as PlanStep], new ToolRegistry(), new Set())).toEqual([
      'step a: unknown tool "nope" (available: none)',
    ]);
  });

  it("reports nothing else for a step whose tool is unknown", () => {
    const steps = normalizePlan({ steps: [{ id: "a", tool: "nope", args: { x: 1 }, dependsOn: ["zz"] }] });
    expect(validatePlan(steps, withGreet, new Set())).toHaveLength(1);
  });

  it("accepts a valid plan, and dependencies on steps of the plan", () => {
    expect(validatePlan([step("a"), step("b", ["a"])], withGreet, new Set())).toEqual([]);
  });

  it("leaves arguments holding a $ref to be checked once resolved", () => {
    const steps = normalizePlan({
      steps: [
        { id: "a", tool: "add", args: { a: 1, b: 2 } },
        { id: "b", tool: "add", args: { a: { $ref: "steps.a.result" }, b: "not a number" } },
      ],
    });
    expect(validatePlan(steps, withGreet, new Set())).toEqual([]);
  });

  it("names nested paths, and reports problems of the whole arguments and several issues at once", () => {
    const steps = normalizePlan({
      steps: [
        { id: "a", tool: "greet", args: { who: { name: 5 } } },
        { id: "b", tool: "greet", args: { who: { name: "nobody" } } },
        { id: "c", tool: "add", args: {} },
      ],
    });
    expect(validatePlan(steps, withGreet, new Set())).toEqual([
      'step a: invalid arguments for "greet": who.name: Invalid input: expected string, received number',
      'step b: invalid arguments for "greet": nobody to greet',
      'step c: invalid arguments for "add": a: Invalid input: expected number, received undefined; b: Invalid input: expected number, received undefined',
    ]);
  });
});

describe("validatePlan cycles", () => {
  it("finds no cycle in a diamond, nor through a step of an earlier plan", () => {
    const diamond = [step("a", ["b", "c"]), step("b", ["d"]), step("c", ["d"]), step("d", ["old"])];
    expect(validatePlan(diamond, withGreet, new Set(["old"]))).toEqual([]);
  });

  it("names only the steps on the cycle", () => {
    const steps = [step("x", ["z"]), step("z", ["y", "w"]), step("y"), step("w", ["z"])];
    expect(validatePlan(steps, withGreet, new Set())).toEqual(["steps z, w depend on each other"]);
  });

  it("finds a step that depends on itself", () => {
    expect(validatePlan([step("a"), step("b", ["b"])], withGreet, new Set())).toEqual([
      "steps b depend on each other",
    ]);
  });
});

describe("parseRef", () => {
  it("takes the step id and the path", () => {
    expect(parseRef({ $ref: "steps.s_1-a.result" })).toEqual({ stepId: "s_1-a", path: [] });
    expect(parseRef({ $ref: "steps.s1.result.items.0.name" })).toEqual({
      stepId: "s1",
      path: ["items", "0", "name"],
    });
  });

  it("is nothing for anything but an object whose one key $ref holds a whole reference", () => {
    for (const value of [
      null,
      undefined,
      "steps.s1.result",
      ["steps.s1.result"],
      [{ $ref: "steps.s1.result" }],
      {},
      { $ref: 1 },
      { $ref: ["steps.s1.result"] },
      { $ref: "steps.s1.result", note: "x" },
      { ref: "steps.s1.result" },
      { $ref: "xsteps.s1.result" },
      { $ref: "steps.s1.resultx" },
      { $ref: "steps.s1.result." },
      { $ref: "steps..result" },
      { $ref: "steps.s 1.result" },
      { $ref: "steps.s1.outcome" },
    ])
      expect(parseRef(value), JSON.stringify(value)).toBeUndefined();
  });
});

describe("refsIn and resolveRefs", () => {
  it("finds refs in arrays and objects, and none in other values", () => {
    expect(refsIn([1, null, "x", { a: [{ $ref: "steps.a.result.x" }] }, { $ref: "steps.b.result" }])).toEqual(
      [
        { stepId: "a", path: ["x"] },
        { stepId: "b", path: [] },
      ],
    );
    expect(refsIn(null)).toEqual([]);
    expect(refsIn("steps.a.result")).toEqual([]);
  });

  it("resolves refs in arrays and objects and leaves other values as they are", () => {
    const results = new Map<string, unknown>([
      ["a", { x: 0, y: null }],
      ["b", undefined],
    ]);
    expect(
      resolveRefs(
        { list: [{ $ref: "steps.a.result.x" }, 2, null], n: "t", b: { $ref: "steps.b.result" } },
        results,
      ),
    ).toEqual({ list: [0, 2, null], n: "t", b: undefined });
    expect(resolveRefs(null, results)).toBeNull();
  });

  it("fails for a path through null, through a primitive, or to a missing key", () => {
    const results = new Map<string, unknown>([["a", { x: 1, y: null, s: "text" }]]);
    for (const path of ["y.z", "x.toFixed", "s.length", "missing"])
      expect(() => resolveRefs({ $ref: `steps.a.result.${path}` }, results)).toThrow(
        `refers to steps.a.result.${path}, which does not exist`,
      );
  });

  it("follows only own properties: an inherited one (__proto__, constructor) does not exist", () => {
    const results = new Map<string, unknown>([["a", { list: [1], nested: { x: 1 } }]]);
    for (const path of ["__proto__", "constructor", "hasOwnProperty", "nested.__proto__", "list.map"])
      expect(() => resolveRefs({ $ref: `steps.a.result.${path}` }, results)).toThrow(
        `refers to steps.a.result.${path}, which does not exist`,
      );
  });

  it("follows an own property whatever its name, in objects without a prototype too", () => {
    const results = new Map<string, unknown>([
      ["a", JSON.parse('{"__proto__":{"x":1},"constructor":"c"}')],
      ["b", Object.assign(Object.create(null), { x: 2 })],
    ]);
    expect(
      resolveRefs(
        {
          proto: { $ref: "steps.a.result.__proto__.x" },
          ctor: { $ref: "steps.a.result.constructor" },
          bare: { $ref: "steps.b.result.x" },
        },
        results,
      ),
    ).toEqual({ proto: 1, ctor: "c", bare: 2 });
  });
});
