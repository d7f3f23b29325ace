import { describe, expect, it } from "vitest";
import type { ToolResultMessage } from "../messages.js";
import { withOverride } from "./result-override.js";

const ok: ToolResultMessage = {
  role: "toolResult",
  toolCallId: "a",
  toolName: "echo",
  content: '{"v":1}',
  details: { v: 1 },
  isError: false,
  status: "ok",
  timestamp: 5,
};
const timedOut: ToolResultMessage = {
  ...ok,
  content: "timed out",
  details: undefined,
  isError: true,
  status: "timeout",
};

describe("withOverride", () => {
  it("keeps the result when the hook returns nothing", () => {
    expect(withOverride(ok, undefined)).toBe(ok);
    expect(withOverride(ok, null)).toBe(ok);
  });

  it("replaces the fields given, and only the four a hook may replace", () => {
    const changed = withOverride(ok, {
      content: "[redacted]",
      details: "[redacted]",
      role: "user",
      toolCallId: "x",
    });
    expect(changed).toEqual({ ...ok, content: "[redacted]", details: "[redacted]" });
    expect(withOverride(ok, { details: undefined })).toEqual({ ...ok, details: undefined });
  });

  it("keeps isError true exactly when status is not ok, whichever the hook set", () => {
    expect(withOverride(ok, { status: "error", content: "withheld" })).toMatchObject({
      status: "error",
      isError: true,
      content: "withheld",
    });
    expect(withOverride(ok, { isError: true })).toMatchObject({ status: "error", isError: true });
    expect(withOverride(timedOut, { isError: true })).toMatchObject({ status: "timeout", isError: true });
    expect(withOverride(timedOut, { isError: false })).toMatchObject({ status: "ok", isError: false });
    expect(withOverride(timedOut, { status: "ok" })).toMatchObject({ status: "ok", isError: false });
    expect(withOverride(ok, { status: "denied", isError: true })).toMatchObject({
      status: "denied",
      isError: true,
    });
  });

  it.each([
    [42, "expected an object of fields to replace, got number"],
    [{ content: 42 }, "content must be a string, got number"],
    [{ isError: "yes" }, "isError must be a boolean, got string"],
    [{ status: "bogus" }, "status must be one of ok, error, skipped, timeout, aborted, denied, got bogus"],
    [{ status: "error", isError: false }, "isError false contradicts status error"],
  ])("refuses %j: %s", (override, problem) => {
    expect(() => withOverride(ok, override)).toThrow(
      new TypeError(`afterToolCall returned an invalid override: ${problem}.`),
    );
  });

  it("refuses details that are not JSON, which no event could carry", () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => withOverride(ok, { details: circular })).toThrow(
      /^afterToolCall returned an invalid override: details must be JSON, but .*circular/i,
    );
  });

  it("refuses details that JSON would write as something else (a Map as {}), as a tool's own result is", () => {
    expect(() => withOverride(ok, { details: { tags: new Map([["a", 1]]) } })).toThrow(
      /^afterToolCall returned an invalid override: details must be JSON, but a Map at "tags", which JSON writes as \{\}/,
    );
    expect(() => withOverride(ok, { details: { at: Number.NaN } })).toThrow(
      /NaN at "at", which JSON writes as null/,
    );
    expect(withOverride(ok, { details: { tags: ["a"], note: undefined } }).details).toEqual({ tags: ["a"] });
  });
});
