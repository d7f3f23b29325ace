import { describe, expect, it } from "vitest";
import { z } from "zod";
import { extractJson, parseStructured } from "./structured-output.js";

describe("extractJson", () => {
  it("reads plain JSON, a fenced block (Go TestParsePlanMarkdownBlock), or a value inside prose", () => {
    expect(extractJson('{"steps":[]}')).toEqual({ steps: [] });
    expect(extractJson('Here is the plan:\n```json\n{"steps":[{"tool":"calculator"}]}\n```\nDone.')).toEqual({
      steps: [{ tool: "calculator" }],
    });
    expect(extractJson("```\n[1, 2]\n```")).toEqual([1, 2]);
    expect(extractJson('Sure! {"a": "brace } in a string", "b": [1, {"c": 2}]} Hope it helps.')).toEqual({
      a: "brace } in a string",
      b: [1, { c: 2 }],
    });
  });

  it("skips a bracketed aside that is not JSON and finds the value after it", () => {
    expect(extractJson('I will [maybe] answer: {"ok": true}')).toEqual({ ok: true });
  });

  it("fails clearly on text without JSON (Go TestParsePlanInvalidJSONFallbackToEmpty no longer silent)", () => {
    expect(() => extractJson("I will use the calculator.")).toThrow("the reply contains no JSON value");
    expect(() => extractJson("   ")).toThrow("the reply was empty");
  });
});

describe("parseStructured", () => {
  const schema = z.object({ steps: z.array(z.object({ tool: z.string() })) });

  it("validates against the schema and says what is wrong", () => {
    expect(parseStructured(schema, '{"steps":[{"tool":"x"}]}')).toEqual({
      success: true,
      value: { steps: [{ tool: "x" }] },
    });
    expect(parseStructured(schema, '{"steps":[{"tool":1}]}')).toEqual({
      success: false,
      error:
        "The JSON does not match the schema: steps.0.tool: Invalid input: expected string, received number.",
    });
    expect(parseStructured(schema, "no")).toEqual({
      success: false,
      error: "Not valid JSON: the reply contains no JSON value.",
    });
  });
});
