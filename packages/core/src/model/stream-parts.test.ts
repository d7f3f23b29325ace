import type { LanguageModelV4Usage } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { parseArgs, toUsage } from "./stream-parts.js";

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
});
