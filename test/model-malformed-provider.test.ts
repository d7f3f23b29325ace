import "@agent-core/agentic";
import { Agent, defineTool, ProviderError } from "@agent-core/core";
import { assertEventProtocol, assertValidTranscript, eventsOf } from "@agent-core/testing";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";

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
    [
      "returns a thenable whose then() throws",
      () => ({
        // biome-ignore lint/suspicious/noThenProperty: a provider's broken promise is the case under test
        then() {
          throw new TypeError("not a real promise");
        },
      }),
      "The model call failed: not a real promise",
    ],
    [
      "resolves to an object whose stream getter throws",
      async () => ({
        get stream() {
          throw new TypeError("stream unavailable");
        },
      }),
      "The model call failed: stream unavailable",
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

describe("a provider whose stream parts break the v4 types", () => {
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  const finish = (reason: string) => ({
    type: "finish",
    finishReason: { unified: reason, raw: reason },
    usage,
  });
  const echo = defineTool({
    name: "echo",
    description: "d",
    inputSchema: z.object({ x: z.string() }),
    execute: ({ x }) => x,
  });

  it.each<[string, unknown[], string]>([
    [
      "two tool calls without an id",
      [
        { type: "tool-call", toolName: "echo", input: '{"x":"a"}' },
        { type: "tool-call", toolName: "echo", input: '{"x":"b"}' },
        finish("tool-calls"),
      ],
      'The model streamed a malformed "tool-call" part: its `toolCallId` must be a string but is missing.',
    ],
    [
      "a tool call with a numeric id",
      [{ type: "tool-call", toolCallId: 7, toolName: "echo", input: '{"x":"a"}' }, finish("tool-calls")],
      'The model streamed a malformed "tool-call" part: its `toolCallId` must be a string but is of type number.',
    ],
    [
      'a reply that ends with finish reason "error" (no error part), its text a partial answer',
      [{ type: "text-delta", id: "t", delta: "The answer is" }, finish("error")],
      'The model\'s reply ended with finish reason "error" (raw: "error"): a reply cut short by an error is no answer.',
    ],
    [
      "tool-call arguments nested deeper than 1,000 levels (writing them out again would overflow the stack)",
      [
        {
          type: "tool-call",
          toolCallId: "deep",
          toolName: "echo",
          input: `{"x":"a","y":${"[".repeat(1000)}${"]".repeat(1000)}}`,
        },
        finish("tool-calls"),
      ],
      'The model streamed a malformed "tool-call" part: its `input` nests more than 1000 levels deep.',
    ],
    ["a null part", [null, finish("stop")], "The model streamed a part that is no object: null."],
    ["a number as a part", [42, finish("stop")], "The model streamed a part that is no object: number."],
    [
      "a text delta without its delta, then text",
      [{ type: "text-delta", id: "t" }, { type: "text-delta", id: "t", delta: "ok" }, finish("stop")],
      'The model streamed a malformed "text-delta" part: its `delta` must be a string but is missing.',
    ],
    ...(
      [
        [
          "a NaN",
          { inputTokens: { total: Number.NaN }, outputTokens: { total: 1 } },
          "inputTokens.total",
          "NaN",
        ],
        [
          "a negative",
          { inputTokens: { total: 1 }, outputTokens: { total: -5 } },
          "outputTokens.total",
          "-5",
        ],
        [
          "a finite but impossible",
          { inputTokens: { total: 1e308 }, outputTokens: { total: 1e308 } },
          "inputTokens.total",
          "1e+308",
        ],
        [
          "an infinite",
          { inputTokens: { total: 1, cacheRead: Number.POSITIVE_INFINITY }, outputTokens: { total: 1 } },
          "inputTokens.cacheRead",
          "Infinity",
        ],
      ] as const
    ).map(([name, badUsage, field, shown]): [string, unknown[], string] => [
      `${name} token count`,
      [
        { type: "text-delta", id: "t", delta: "ok" },
        { ...finish("stop"), usage: badUsage },
      ],
      `The model streamed a malformed "finish" part: its \`usage.${field}\` must be a count from 0 to 2^53 - 1 but is ${shown}.`,
    ]),
  ])(
    "ends the run with a ProviderError on %s, its events and history still valid",
    async (_name, parts, message) => {
      const provider = providerWhoseDoStream(async () => ({
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      }));
      const agent = new Agent({ provider, tools: [echo] });
      const run = agent.prompt("go");
      const result = await run.result();
      expect(result.stopReason).toBe("error");
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error?.message).toBe(message);
      expect(eventsOf(run.events, "tool_call")).toEqual([]);
      assertEventProtocol(JSON.parse(JSON.stringify(run.events)));
      // The history saved as JSON loads again.
      const saved = JSON.parse(JSON.stringify(agent.messages));
      assertValidTranscript(saved);
      expect(() => new Agent({ messages: saved })).not.toThrow();
    },
  );
});

describe("a provider whose modelId getter throws after new Agent() read it", () => {
  it("ends the run with a ProviderError naming the getter's error, not the orchestrator's", async () => {
    const provider = providerWhoseDoStream(() => Promise.reject(new Error("not reached")));
    let reads = 0;
    Object.defineProperty(provider, "modelId", {
      get() {
        if (++reads > 1) throw new Error("model id unavailable");
        return "flaky-model";
      },
    });
    const result = await new Agent({ provider }).prompt("hello").result();
    expect(result.stopReason).toBe("error");
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error?.message).toBe("The model call failed: model id unavailable");
  });
});
