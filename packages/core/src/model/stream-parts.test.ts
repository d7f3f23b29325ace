import type { LanguageModelV4Usage } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { ProviderError } from "../errors.js";
import { parseArgs, toUsage, unifiedFinishReason } from "./stream-parts.js";

/** What `read` threw (nothing if it returned). */
function thrownBy(read: () => unknown): unknown {
  try {
    read();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("parseArgs", () => {
  it("reads tool arguments: JSON parsed, blank as no arguments, anything else kept as text", () => {
    expect(['{"x":1}', "", "   ", "not json", "[1,2]"].map(parseArgs)).toEqual([
      { x: 1 },
      {},
      {},
      "not json",
      [1, 2],
    ]);
  });

  it("takes arguments nested 1,000 levels deep, brackets in strings not counted; refuses one level more", () => {
    // The arguments' own object is the first level.
    const nested = (levels: number) => `${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}`;
    const brackets = JSON.stringify("[[[{{{".repeat(1000));
    expect(() => parseArgs(`{"text":${brackets},"deep":${nested(1000)}}`)).not.toThrow();
    expect(() => parseArgs(`{"text":${brackets},"deep":${nested(1001)}}`)).toThrow(
      'The model streamed a malformed "tool-call" part: its `input` nests more than 1000 levels deep.',
    );
  });
});

describe("toUsage", () => {
  it("reads the totals, the reasoning tokens and the cached input tokens", () => {
    const usage: LanguageModelV4Usage = {
      inputTokens: { total: 10, noCache: 4, cacheRead: 6, cacheWrite: 0 },
      outputTokens: { total: 5, text: 2, reasoning: 3 },
    };
    expect(toUsage(usage)).toEqual({
      inputTokens: 10,
      outputTokens: 5,
      totalTokens: 15,
      reasoningTokens: 3,
      cachedInputTokens: 6,
    });
  });

  it("reports a token count given as null as unknown", () => {
    const counts = {
      inputTokens: { total: 1, noCache: null, cacheRead: null, cacheWrite: null },
      outputTokens: { total: null, text: null, reasoning: null },
    };
    expect(toUsage(counts as unknown as LanguageModelV4Usage)).toEqual({
      inputTokens: 1,
      outputTokens: 0,
      totalTokens: 1,
    });
  });

  it("reports a token count left out as unknown, as the v4 spec allows", () => {
    const usage = { inputTokens: { total: 3 }, outputTokens: {} } as LanguageModelV4Usage;
    expect(toUsage(usage)).toEqual({ inputTokens: 3, outputTokens: 0, totalTokens: 3 });
  });

  it.each<[string, unknown, string]>([
    ["missing", undefined, "its `usage` must be an object but is missing."],
    ["null", null, "its `usage` must be an object but is null."],
    [
      "without input tokens",
      { outputTokens: { total: 1 } },
      "its `usage.inputTokens` must be an object but is missing.",
    ],
    [
      "whose input tokens are a number",
      { inputTokens: 3, outputTokens: { total: 1 } },
      "its `usage.inputTokens` must be an object but is of type number.",
    ],
    [
      "whose output tokens are null",
      { inputTokens: { total: 1 }, outputTokens: null },
      "its `usage.outputTokens` must be an object but is null.",
    ],
  ])("refuses usage %s, as the v4 spec requires it and its two groups", (_name, usage, reason) => {
    const error = thrownBy(() => toUsage(usage as LanguageModelV4Usage));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      message: `The model streamed a malformed "finish" part: ${reason}`,
      retryable: false,
    });
  });
});

describe("unifiedFinishReason", () => {
  it("reads the unified reason", () => {
    expect(unifiedFinishReason({ unified: "tool-calls", raw: "tool_use" })).toBe("tool-calls");
  });

  it.each<[string, unknown, string]>([
    ["missing", undefined, "its `finishReason` must be an object but is missing."],
    ["a bare string", "stop", "its `finishReason` must be an object but is of type string."],
    [
      "without a unified reason",
      { raw: "stop" },
      "its `finishReason.unified` must be a string but is missing.",
    ],
    [
      "with a unified number",
      { unified: 1 },
      "its `finishReason.unified` must be a string but is of type number.",
    ],
  ])("refuses a finish reason %s, as the v4 spec requires it", (_name, reason, message) => {
    const error = thrownBy(() => unifiedFinishReason(reason));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      message: `The model streamed a malformed "finish" part: ${message}`,
      retryable: false,
    });
  });
});
