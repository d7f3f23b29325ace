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

describe("extractJson, where the value is looked for", () => {
  it("reads a fence with any language tag, or none, on one line or several", () => {
    expect(extractJson('```JSON5\n{"a":1}\n```')).toEqual({ a: 1 });
    expect(extractJson('Result: ```{"a":2}``` done')).toEqual({ a: 2 });
    expect(extractJson('```json  {"a":3}```')).toEqual({ a: 3 });
    // A value only the fence can find: no brackets for the prose search.
    expect(extractJson('Here: ```"just text"``` ok')).toBe("just text");
    expect(extractJson('Here: ```json "a" ``` ok')).toBe("a");
  });

  it("prefers a fenced block to a value in the prose, and takes the first block that parses", () => {
    expect(extractJson('Like {"x":0} but: ```json\n{"y":1}\n```')).toEqual({ y: 1 });
    expect(extractJson('```\nnot json\n```\nthen\n```json\n{"z":2}\n```')).toEqual({ z: 2 });
  });

  it("takes the first balanced value in the prose that parses", () => {
    expect(extractJson('first {"a": 1} then {"b": 2}')).toEqual({ a: 1 });
    expect(extractJson("first {oops} then [1, 2]")).toEqual([1, 2]);
    expect(extractJson('a [broken} pair, then {"ok": 1}')).toEqual({ ok: 1 });
  });

  it("skips escaped quotes and brackets inside strings", () => {
    expect(extractJson('Note {"say": "a \\"}\\" and ]"} end')).toEqual({ say: 'a "}" and ]' });
  });

  it("finds nothing in an unclosed value", () => {
    expect(() => extractJson('The answer is {"a": [1, 2}')).toThrow("the reply contains no JSON value");
    expect(() => extractJson('{"a": "unterminated}')).toThrow("the reply contains no JSON value");
    expect(() => extractJson('Partial: {"a": 1')).toThrow("the reply contains no JSON value");
  });
});

describe("parseStructured with a schema that validates asynchronously", () => {
  it("answers with a promise: the value, or what the schema said or threw", async () => {
    const known = z.object({ city: z.string().refine(async (city) => city !== "Atlantis", "is not a city") });
    expect(await parseStructured(known, '{"city":"Oslo"}')).toEqual({
      success: true,
      value: { city: "Oslo" },
    });
    expect(await parseStructured(known, '{"city":"Atlantis"}')).toEqual({
      success: false,
      error: "The JSON does not match the schema: city: is not a city.",
    });
    const broken = z.object({ city: z.string().refine(async () => Promise.reject(new Error("no map"))) });
    expect(await parseStructured(broken, '{"city":"Oslo"}')).toEqual({
      success: false,
      error: "The JSON does not match the schema: the input schema threw: no map.",
    });
  });
});

describe("parseStructured, the error for a retry", () => {
  it("lists every issue, a whole-value one without a path", () => {
    const schema = z.object({ a: z.string(), b: z.number() });
    expect(parseStructured(schema, '{"a": 1, "b": "x"}')).toEqual({
      success: false,
      error:
        "The JSON does not match the schema: a: Invalid input: expected string, received number; b: Invalid input: expected number, received string.",
    });
    expect(parseStructured(schema, "[1]")).toEqual({
      success: false,
      error: "The JSON does not match the schema: Invalid input: expected object, received array.",
    });
  });
});
