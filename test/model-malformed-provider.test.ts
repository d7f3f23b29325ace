import "@agent-core/agentic";
import { Agent, ProviderError } from "@agent-core/core";
import { eventsOf } from "@agent-core/testing";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

// A provider that breaks the v4 contract must end the run with a clear provider error, not crash
// the process with an unhandled rejection from the framework's own cleanup.

function providerWhoseDoStream(doStream: () => unknown): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: "broken",
    modelId: "broken-model",
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error("not used")),
    doStream,
  } as LanguageModelV4;
}

describe("a provider whose doStream() breaks the contract", () => {
  const unhandled = vi.fn();
  beforeEach(() => {
    unhandled.mockClear();
    process.on("unhandledRejection", unhandled);
  });
  afterEach(() => {
    process.off("unhandledRejection", unhandled);
  });

  it.each<[string, () => unknown, string]>([
    [
      "resolves to an object without a stream",
      async () => ({ response: { id: "x" } }),
      "The model's doStream() returned an object without a readable `stream` (keys: response).",
    ],
    [
      "returns a plain object instead of a promise",
      () => ({ stream: new ReadableStream() }),
      "The model's doStream() returned a non-promise value of type object.",
    ],
    [
      "throws synchronously",
      () => {
        throw new TypeError("provider bug");
      },
      "The model call failed: provider bug",
    ],
  ])("ends the run with a ProviderError when it %s", async (_name, doStream, message) => {
    for (const timeouts of [undefined, { stepMs: 60_000 }]) {
      const run = new Agent({ provider: providerWhoseDoStream(doStream), timeouts }).prompt("hello");
      const result = await run.result();
      expect(result.stopReason).toBe("error");
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({ code: "provider_error", message });
      expect(eventsOf(run.events, "error")).toEqual([
        expect.objectContaining({ code: "provider_error", message }),
      ]);
      // Unhandled rejections are reported once the microtasks of a macrotask have run.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).not.toHaveBeenCalled();
    }
  });
});
