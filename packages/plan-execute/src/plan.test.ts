import { defineTool, ToolRegistry } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { normalizePlan, refsIn, resolveRefs, validatePlan } from "./plan.js";

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
