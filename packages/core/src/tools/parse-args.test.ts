import { describe, expect, it } from "vitest";
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
});
