import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { parseArgs, parseArgsNow } from "./parse-args.js";

describe("parseArgsNow", () => {
  it("checks synchronously when the schema allows it", () => {
    const schema = z.object({ n: z.number() });
    expect(parseArgsNow(schema, { n: 1 })).toMatchObject({ success: true, data: { n: 1 } });
    expect(parseArgsNow(schema, { n: "1" })).toMatchObject({ success: false });
  });

  it("answers undefined for a schema that validates asynchronously, and parseArgs then gives a promise", async () => {
    const schema = z.string().refine(async (text) => text.length > 1);
    expect(parseArgsNow(schema, "ab")).toBeUndefined();
    const parsed = parseArgs(schema, "ab");
    expect(parsed).toBeInstanceOf(Promise);
    expect(await parsed).toMatchObject({ success: true, data: "ab" });
  });

  it("fails the arguments with what a schema's own code throws, synchronously or not", async () => {
    const broken = () => {
      throw new Error("refinement broke");
    };
    const issues = [{ code: "custom", message: "the input schema threw: refinement broke", path: [] }];
    const sync = z.string().refine(broken);
    expect(parseArgsNow(sync, "x")).toMatchObject({ success: false, error: { issues } });
    expect(parseArgs(sync, "x")).toMatchObject({ success: false, error: { issues } });
    const async = z.string().refine(async () => broken());
    expect(parseArgsNow(async, "x")).toBeUndefined();
    expect(await parseArgs(async, "x")).toMatchObject({ success: false, error: { issues } });
  });

  describe("an async refinement that rejects", () => {
    const unhandled = vi.fn();
    afterEach(() => {
      process.off("unhandledRejection", unhandled);
    });

    it("leaves no unhandled rejection, whether the answer is wanted now or later", async () => {
      process.on("unhandledRejection", unhandled);
      const schema = z.object({
        city: z.string().refine(async () => Promise.reject(new Error("lookup failed"))),
      });
      expect(parseArgsNow(schema, { city: "Oslo" })).toBeUndefined();
      expect(await parseArgs(schema, { city: "Oslo" })).toMatchObject({
        success: false,
        error: { issues: [{ message: "the input schema threw: lookup failed" }] },
      });
      // Unhandled rejections are reported once the microtasks of a macrotask have run.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).not.toHaveBeenCalled();
    });
  });

  it("reports issues as zod's safeParse does, synchronously, and the transformed value", () => {
    const schema = z.object({ a: z.string().min(2), n: z.string().transform(Number) });
    const failed = parseArgsNow(schema, { a: "x", n: "1" });
    const expected = schema.safeParse({ a: "x", n: "1" });
    expect(failed?.success).toBe(false);
    expect(failed?.error?.issues).toEqual(expected.error?.issues);
    expect(failed?.error).toBeInstanceOf(z.ZodError);
    expect(parseArgs(schema, { a: "xy", n: "7" })).toEqual({ success: true, data: { a: "xy", n: 7 } });
  });
});
