import {
  APICallError,
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4StreamPart,
} from "@ai-sdk/provider";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AbortedError, ProviderError, TimeoutError } from "../errors.js";
import { AbortScope } from "./abortable.js";
import type { RetryOptions } from "./retry.js";
import type { StepTimeouts } from "./step-watchdog.js";
import { type ModelStepResult, streamModelStep } from "./stream-step.js";

const noRetry: RetryOptions = { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0 };

/** A v4 model whose `doStream` is the given function (it may break the contract on purpose). */
function modelOf(doStream: (options: LanguageModelV4CallOptions) => unknown): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: "test",
    modelId: "test-model",
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error("not used")),
    doStream,
  } as LanguageModelV4;
}

/** A stream the test feeds part by part; it stays open until closed or cancelled. */
function openStream(parts: readonly LanguageModelV4StreamPart[] = []) {
  let controller!: ReadableStreamDefaultController<LanguageModelV4StreamPart>;
  const cancel = vi.fn();
  const stream = new ReadableStream<LanguageModelV4StreamPart>({
    start(c) {
      controller = c;
      for (const part of parts) c.enqueue(part);
    },
    cancel,
  });
  return {
    stream,
    cancel,
    push: (part: LanguageModelV4StreamPart) => controller.enqueue(part),
    close: () => controller.close(),
  };
}

function closedStream(
  parts: readonly LanguageModelV4StreamPart[],
): ReadableStream<LanguageModelV4StreamPart> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const finish: LanguageModelV4StreamPart = {
  type: "finish",
  finishReason: { unified: "stop", raw: "stop" },
  usage,
};

function step(
  model: LanguageModelV4,
  scope: AbortScope,
  options: { timeouts?: StepTimeouts; retry?: RetryOptions } = {},
) {
  return streamModelStep({ model, prompt: [], tools: [], abortScope: scope, retry: noRetry, ...options });
}

/** What a promise settled with, without leaving a rejection unhandled meanwhile. */
function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );
}

describe("streamModelStep time limits", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each<LanguageModelV4StreamPart>([
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "resp-1", modelId: "served-model" },
    { type: "raw", rawValue: { any: "thing" } },
  ])("a $type part is not a chunk: firstChunkMs still applies after it", async (part) => {
    const { stream } = openStream([part]);
    const result = outcome(
      step(
        modelOf(async () => ({ stream })),
        new AbortScope(),
        { timeouts: { firstChunkMs: 50, chunkMs: 1000 } },
      ),
    );
    await vi.advanceTimersByTimeAsync(50);
    expect(await result).toMatchObject({ kind: "firstChunk", ms: 50 });
  });

  it("ends the call of a stream lookalike whose read ignores the cancel", async () => {
    // Not a web stream (another realm's, a provider's own object): its reader does not settle the
    // pending read when cancelled, as a web stream's does.
    const cancel = vi.fn(() => new Promise<void>(() => {}));
    const parts: LanguageModelV4StreamPart[] = [];
    const reader = {
      read: () => {
        const part = parts.shift();
        return part === undefined ? new Promise(() => {}) : Promise.resolve({ done: false, value: part });
      },
      cancel,
      releaseLock: () => {},
    };
    const lookalike = { getReader: () => reader, cancel };
    for (const timeouts of [{ stepMs: 500 }, { chunkMs: 500 }]) {
      parts.push({ type: "text-delta", id: "t", delta: "hi" });
      const result = outcome(
        step(
          modelOf(async () => ({ stream: lookalike })),
          new AbortScope(),
          { timeouts },
        ),
      );
      await vi.advanceTimersByTimeAsync(500);
      expect(await result).toBeInstanceOf(TimeoutError);
    }
    expect(cancel).toHaveBeenCalledTimes(2);
  });

  it("a text delta is a chunk: firstChunkMs stops applying, chunkMs starts", async () => {
    const { stream, push, close } = openStream([{ type: "stream-start", warnings: [] }]);
    const result = outcome(
      step(
        modelOf(async () => ({ stream })),
        new AbortScope(),
        { timeouts: { firstChunkMs: 50, chunkMs: 1000 } },
      ),
    );
    await vi.advanceTimersByTimeAsync(10);
    push({ type: "text-delta", id: "t", delta: "hi" });
    await vi.advanceTimersByTimeAsync(999);
    push(finish);
    close();
    expect(await result).toMatchObject({ resolved: { content: [{ type: "text", text: "hi" }] } });
  });

  it("a keep-alive ping is a chunk: a long silent reasoning that pings is not stopped by chunkMs", async () => {
    const { stream, push, close } = openStream([{ type: "stream-start", warnings: [] }]);
    const result = outcome(
      step(
        modelOf(async () => ({ stream })),
        new AbortScope(),
        { timeouts: { firstChunkMs: 50, chunkMs: 50 } },
      ),
    );
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(40);
      push({ type: "ping" });
    }
    push({ type: "text-delta", id: "t", delta: "thought it through" });
    push(finish);
    close();
    expect(await result).toMatchObject({
      resolved: { content: [{ type: "text", text: "thought it through" }] },
    });
  });

  it("a timeout before doStream() settles aborts the provider's signal, not the run's", async () => {
    const signals: AbortSignal[] = [];
    const model = modelOf((options) => {
      if (options.abortSignal) signals.push(options.abortSignal);
      return new Promise(() => {});
    });
    const scope = new AbortScope();
    const result = outcome(
      step(model, scope, {
        timeouts: { firstChunkMs: 50 },
        retry: { maxRetries: 2, initialDelayMs: 0, maxDelayMs: 0, retryTimeouts: true },
      }),
    );
    await vi.advanceTimersByTimeAsync(200);
    expect(await result).toBeInstanceOf(TimeoutError);
    expect(signals).toHaveLength(3);
    for (const signal of signals) {
      expect(signal).not.toBe(scope.signal);
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toMatchObject({ kind: "firstChunk" });
    }
    expect(scope.aborted).toBe(false);
  });

  it("aborting the run aborts a timed call's signal", async () => {
    let signal: AbortSignal | undefined;
    const scope = new AbortScope();
    const result = outcome(
      step(
        modelOf((options) => {
          signal = options.abortSignal;
          return new Promise(() => {});
        }),
        scope,
        { timeouts: { stepMs: 1000 } },
      ),
    );
    await vi.advanceTimersByTimeAsync(10);
    scope.abort("stop");
    expect(await result).toBeInstanceOf(AbortedError);
    expect(signal?.aborted).toBe(true);
  });

  it("a timed call that settled lets go of the run's scope", async () => {
    let signal: AbortSignal | undefined;
    const scope = new AbortScope();
    const model = modelOf(async (options) => {
      signal = options.abortSignal;
      return { stream: closedStream([{ type: "text-delta", id: "t", delta: "ok" }, finish]) };
    });
    await step(model, scope, { timeouts: { stepMs: 1000 } });
    scope.abort();
    expect(signal?.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("streamModelStep cancels the provider's request", () => {
  it("passes the run's own signal when the call has no time limit (no scope per call)", async () => {
    let signal: AbortSignal | undefined;
    const scope = new AbortScope();
    const model = modelOf(async (options) => {
      signal = options.abortSignal;
      return { stream: closedStream([finish]) };
    });
    await step(model, scope);
    expect(signal).toBe(scope.signal);
  });

  it.each<[string, StepTimeouts | undefined]>([
    ["without time limits", undefined],
    ["with time limits", { stepMs: 60_000 }],
  ])("an error part cancels the stream %s", async (_name, timeouts) => {
    const failure = new Error("bad chunk");
    const { stream, cancel } = openStream([
      { type: "stream-start", warnings: [] },
      { type: "error", error: failure },
    ]);
    const error = await outcome(
      step(
        modelOf(async () => ({ stream })),
        new AbortScope(),
        { timeouts },
      ),
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ message: "The model call failed: bad chunk", cause: failure });
    expect(cancel).toHaveBeenCalledWith(failure);
  });
});

describe("streamModelStep with a provider that breaks the v4 contract", () => {
  const unhandled = vi.fn();
  beforeEach(() => {
    unhandled.mockClear();
    process.on("unhandledRejection", unhandled);
  });
  afterEach(() => {
    process.off("unhandledRejection", unhandled);
  });

  /** Unhandled rejections are reported once the microtasks of a macrotask have run. */
  async function expectNoUnhandledRejection(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).not.toHaveBeenCalled();
  }

  it.each<[string, () => unknown, string]>([
    [
      "a plain object, not a promise",
      () => ({ stream: closedStream([finish]) }),
      "The model's doStream() returned a non-promise value of type object.",
    ],
    ["undefined", () => undefined, "The model's doStream() returned a non-promise value of type undefined."],
    [
      "a promise of an object without a stream",
      async () => ({ response: {}, request: {} }),
      "The model's doStream() returned an object without a readable `stream` (keys: response, request).",
    ],
    [
      "a promise of an object whose stream is not readable",
      async () => ({ stream: "text" }),
      "The model's doStream() returned an object without a readable `stream` (keys: stream).",
    ],
    [
      "a promise of undefined",
      async () => undefined,
      "The model's doStream() resolved to undefined, not an object with a readable `stream`.",
    ],
    [
      "a promise of null",
      async () => null,
      "The model's doStream() resolved to null, not an object with a readable `stream`.",
    ],
    ["null", () => null, "The model's doStream() returned a non-promise value of type null."],
    [
      "a promise of an object whose stream is null",
      async () => ({ stream: null }),
      "The model's doStream() returned an object without a readable `stream` (keys: stream).",
    ],
    [
      "a synchronous throw",
      () => {
        throw new Error("boom");
      },
      "The model call failed: boom",
    ],
  ])("doStream() returning %s fails with a ProviderError", async (_name, doStream, message) => {
    for (const timeouts of [undefined, { stepMs: 60_000 }]) {
      const scope = new AbortScope();
      const error = await outcome(step(modelOf(doStream), scope, { timeouts }));
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: "provider_error", message });
      await expectNoUnhandledRejection();
    }
  });

  it("a malformed result arriving after a timeout is let go without an unhandled rejection", async () => {
    let respond!: (value: unknown) => void;
    const model = modelOf(() => new Promise((resolve) => (respond = resolve)));
    const error = await outcome(step(model, new AbortScope(), { timeouts: { firstChunkMs: 1 } }));
    expect(error).toMatchObject({ kind: "firstChunk" });
    respond({ notAStream: true });
    await expectNoUnhandledRejection();
  });
});

describe("streamModelStep reads the v4 stream part by part", () => {
  const text = (delta: string): LanguageModelV4StreamPart => ({ type: "text-delta", id: "t", delta });
  const reasoning = (delta: string): LanguageModelV4StreamPart => ({
    type: "reasoning-delta",
    id: "r",
    delta,
  });
  const toolCall = (id: string, input: string, providerExecuted?: boolean): LanguageModelV4StreamPart => ({
    type: "tool-call",
    toolCallId: id,
    toolName: "t",
    input,
    ...(providerExecuted ? { providerExecuted } : {}),
  });
  const run = (
    parts: LanguageModelV4StreamPart[],
    request: { onText?: (delta: string) => void; onReasoning?: (delta: string) => void } = {},
  ) =>
    streamModelStep<ModelStepResult>({
      model: modelOf(async () => ({ stream: closedStream(parts) })),
      prompt: [],
      tools: [],
      abortScope: new AbortScope(),
      retry: noRetry,
      ...request,
    });

  it("offers the tools, with or without settings, and no `tools` key when there are none", async () => {
    const tool = { type: "function" as const, name: "t", description: "t", inputSchema: {} };
    const seen: LanguageModelV4CallOptions[] = [];
    const model = modelOf(async (options) => {
      seen.push(options);
      return { stream: closedStream([finish]) };
    });
    const scope = new AbortScope();
    const base = { model, prompt: [], abortScope: scope, retry: noRetry };
    await streamModelStep({ ...base, tools: [tool], settings: { temperature: 0.5 } });
    await streamModelStep({ ...base, tools: [], settings: { temperature: 0.5 } });
    await streamModelStep({ ...base, tools: [tool] });
    await streamModelStep({ ...base, tools: [] });
    expect(seen.map((options) => [options.temperature, options.tools])).toEqual([
      [0.5, [tool]],
      [0.5, undefined],
      [undefined, [tool]],
      [undefined, undefined],
    ]);
    expect(seen.map((options) => "tools" in options)).toEqual([true, false, true, false]);
    for (const options of seen) expect(options.abortSignal).toBe(scope.signal);
  });

  it("passes on the calls the model asked for, their arguments parsed, not those the provider ran", async () => {
    const result = await run([
      toolCall("a", '{"x":1}'),
      toolCall("server", "{}", true),
      toolCall("b", "not json"),
      finish,
    ]);
    expect(result.toolCalls.map((call) => [call.id, call.args])).toEqual([
      ["a", { x: 1 }],
      ["b", "not json"],
    ]);
    // A call the provider ran itself is neither a call to run nor a block of the message.
    expect(result.content.map((block) => (block.type === "toolCall" ? block.id : block.type))).toEqual([
      "a",
      "b",
    ]);
  });

  it("keeps reasoning and text apart, in their order, skipping empty deltas, and passes them on", async () => {
    const onText = vi.fn();
    const onReasoning = vi.fn();
    const result = await run(
      [
        reasoning(""),
        reasoning("Let me "),
        reasoning("think."),
        text(""),
        text("Hi"),
        reasoning("More."),
        text("!"),
        finish,
      ],
      { onText, onReasoning },
    );
    expect(result.content).toEqual([
      { type: "thinking", text: "Let me think." },
      { type: "text", text: "Hi" },
      { type: "thinking", text: "More." },
      { type: "text", text: "!" },
    ]);
    expect(onReasoning.mock.calls.map(([delta]) => delta)).toEqual(["Let me ", "think.", "More."]);
    expect(onText.mock.calls.map(([delta]) => delta)).toEqual(["Hi", "!"]);
  });

  it("keeps reasoning without an onReasoning callback, and text without onText", async () => {
    const result = await run([reasoning("Hmm."), text("Yes."), finish]);
    expect(result.content).toEqual([
      { type: "thinking", text: "Hmm." },
      { type: "text", text: "Yes." },
    ]);
  });

  it("reports the model id the response names, else the model's own", async () => {
    const served = await run([{ type: "response-metadata", id: "resp-1", modelId: "served-model" }, finish]);
    expect(served.modelId).toBe("served-model");
    const unnamed = await run([{ type: "response-metadata", id: "resp-2" }, finish]);
    expect(unnamed.modelId).toBe("test-model");
  });

  it("reports no usage as zeros when the stream ends without a finish part", async () => {
    const result = await run([text("cut short")]);
    expect(result.usage).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });
  });

  it("reads any stream with getReader and cancel, and refuses one without cancel", async () => {
    const web = closedStream([text("ok"), finish]);
    const lookalike = { getReader: () => web.getReader(), cancel: () => Promise.resolve() };
    const read = await streamModelStep({
      model: modelOf(async () => ({ stream: lookalike })),
      prompt: [],
      tools: [],
      abortScope: new AbortScope(),
      retry: noRetry,
    });
    expect(read.content).toEqual([{ type: "text", text: "ok" }]);
    for (const stream of [{ getReader: () => web.getReader() }, { getReader: "no", cancel: () => {} }]) {
      const error = await outcome(
        streamModelStep({
          model: modelOf(async () => ({ stream })),
          prompt: [],
          tools: [],
          abortScope: new AbortScope(),
          retry: noRetry,
        }),
      );
      expect(error).toMatchObject({ message: expect.stringContaining("without a readable `stream`") });
    }
  });

  it("an abort while the stream is read ends the call as aborted, not as a provider failure", async () => {
    const feed = openStream([text("Hel")]);
    const scope = new AbortScope();
    const call = outcome(
      step(
        modelOf(async () => ({ stream: feed.stream })),
        scope,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    scope.abort(new Error("stop"));
    expect(await call).toBeInstanceOf(AbortedError);
  });

  it("an abort from a timer ends the read of a stream whose parts are always ready", async () => {
    // No I/O between the parts: without a turn of the event loop now and then, the timer would
    // only run once the million parts were read, and the call would succeed.
    let left = 1_000_000;
    const stream = new ReadableStream<LanguageModelV4StreamPart>(
      {
        pull(controller) {
          if (left-- > 0) controller.enqueue(text("x"));
          else {
            controller.enqueue(finish);
            controller.close();
          }
        },
      },
      { highWaterMark: 0 },
    );
    const scope = new AbortScope();
    setTimeout(() => scope.abort(new Error("stop")), 0);
    expect(
      await outcome(
        step(
          modelOf(async () => ({ stream })),
          scope,
        ),
      ),
    ).toBeInstanceOf(AbortedError);
  });

  it("reads a long stream of ready parts under fake timers, which do not hold its turns back", async () => {
    vi.useFakeTimers();
    try {
      const parts = Array.from({ length: 3000 }, () => text("x"));
      const read = await step(
        modelOf(async () => ({ stream: closedStream([...parts, finish]) })),
        new AbortScope(),
      );
      expect(read.content).toEqual([{ type: "text", text: "x".repeat(3000) }]);
    } finally {
      vi.useRealTimers();
    }
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      "a tool-call without a toolCallId",
      { type: "tool-call", toolName: "t", input: "{}" },
      'The model streamed a malformed "tool-call" part: its `toolCallId` must be a string but is missing.',
    ],
    [
      "a tool-call with a numeric toolCallId",
      { type: "tool-call", toolCallId: 7, toolName: "t", input: "{}" },
      'The model streamed a malformed "tool-call" part: its `toolCallId` must be a string but is of type number.',
    ],
    [
      "a tool-call with a null toolName",
      { type: "tool-call", toolCallId: "a", toolName: null, input: "{}" },
      'The model streamed a malformed "tool-call" part: its `toolName` must be a string but is null.',
    ],
    [
      "a tool-call whose input is an object",
      { type: "tool-call", toolCallId: "a", toolName: "t", input: { x: 1 } },
      'The model streamed a malformed "tool-call" part: its `input` must be a string but is of type object.',
    ],
    [
      "a text-delta without a delta",
      { type: "text-delta", id: "t" },
      'The model streamed a malformed "text-delta" part: its `delta` must be a string but is missing.',
    ],
    [
      "a reasoning-delta with a numeric delta",
      { type: "reasoning-delta", id: "r", delta: 1 },
      'The model streamed a malformed "reasoning-delta" part: its `delta` must be a string but is of type number.',
    ],
    [
      "a response-metadata with a numeric modelId",
      { type: "response-metadata", id: "r", modelId: 5 },
      'The model streamed a malformed "response-metadata" part: its `modelId` must be a string but is of type number.',
    ],
    [
      "a finish whose token count is text",
      { ...finish, usage: { ...usage, inputTokens: { ...usage.inputTokens, total: "3" } } },
      'The model streamed a malformed "finish" part: its `usage.inputTokens.total` must be a number but is of type string.',
    ],
    [
      "a finish without usage",
      { type: "finish", finishReason: finish.finishReason },
      'The model streamed a malformed "finish" part: its `usage` must be an object but is missing.',
    ],
    [
      "a finish without a finish reason",
      { type: "finish", usage },
      'The model streamed a malformed "finish" part: its `finishReason` must be an object but is missing.',
    ],
  ])("%s fails the call with a ProviderError that is not retried", async (_name, part, message) => {
    const retry = { maxRetries: 2, initialDelayMs: 0, maxDelayMs: 0 };
    // Before anything was passed on, and after text was: the provider is asked once either way.
    for (const before of [[], [text("Hi")]]) {
      let calls = 0;
      const onText = vi.fn();
      const model = modelOf(async () => {
        calls++;
        return { stream: closedStream([...before, part as LanguageModelV4StreamPart, text("ok"), finish]) };
      });
      const error = await outcome(
        streamModelStep({ model, prompt: [], tools: [], abortScope: new AbortScope(), retry, onText }),
      );
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: "provider_error", message, retryable: false });
      expect(calls).toBe(1);
      expect(onText.mock.calls).toEqual(before.length > 0 ? [["Hi"]] : []);
    }
  });

  it.each<[string, LanguageModelV4StreamPart, string]>([
    ["text-delta", text("late"), 'The model streamed a "text-delta" part after its "finish" part.'],
    [
      "reasoning-delta",
      reasoning("late"),
      'The model streamed a "reasoning-delta" part after its "finish" part.',
    ],
    ["tool-call", toolCall("late", "{}"), 'The model streamed a "tool-call" part after its "finish" part.'],
    [
      "response-metadata",
      { type: "response-metadata", id: "resp-2", modelId: "other-model" },
      'The model streamed a "response-metadata" part after its "finish" part.',
    ],
    [
      "finish",
      { ...finish, finishReason: { unified: "length", raw: "length" } },
      'The model streamed a "finish" part after its "finish" part.',
    ],
  ])(
    "a %s part after the finish part fails the call with a ProviderError that is not retried",
    async (_name, late, message) => {
      const retry = { maxRetries: 2, initialDelayMs: 0, maxDelayMs: 0 };
      // Before anything was passed on, and after text was: the provider is asked once either way.
      for (const before of [[], [text("Hi")]]) {
        let calls = 0;
        const model = modelOf(async () => {
          calls++;
          return { stream: closedStream([...before, finish, late]) };
        });
        const error = await outcome(
          streamModelStep({ model, prompt: [], tools: [], abortScope: new AbortScope(), retry }),
        );
        expect(error).toBeInstanceOf(ProviderError);
        expect(error).toMatchObject({ code: "provider_error", message, retryable: false });
        expect(calls).toBe(1);
      }
    },
  );

  it("ignores the parts after the finish part that change nothing", async () => {
    const result = await run([
      text("Hi"),
      finish,
      { type: "raw", rawValue: { any: "thing" } },
      { type: "text-end", id: "t" },
      text(""),
      toolCall("server", "{}", true),
      { type: "response-metadata", id: "resp-2" },
    ]);
    expect(result).toMatchObject({
      content: [{ type: "text", text: "Hi" }],
      toolCalls: [],
      finishReason: "stop",
      modelId: "test-model",
    });
  });

  it("retries a retryable failure before anything was passed on, and says how often in its error", async () => {
    const failing = (): LanguageModelV4StreamPart => ({
      type: "error",
      error: new APICallError({
        message: "busy",
        url: "u",
        requestBodyValues: {},
        statusCode: 503,
        isRetryable: true,
      }),
    });
    const retry = { maxRetries: 2, initialDelayMs: 0, maxDelayMs: 0 };
    let calls = 0;
    const model = modelOf(async () => {
      calls++;
      return { stream: closedStream([failing()]) };
    });
    const error = await outcome(
      streamModelStep({ model, prompt: [], tools: [], abortScope: new AbortScope(), retry }),
    );
    expect(calls).toBe(3);
    expect(error).toMatchObject({ message: "The model call failed (after 2 retries): busy" });
    calls = 0;
    const once = await outcome(
      streamModelStep({
        model,
        prompt: [],
        tools: [],
        abortScope: new AbortScope(),
        retry: { ...retry, maxRetries: 1 },
      }),
    );
    expect(once).toMatchObject({ message: "The model call failed (after 1 retry): busy" });
    // Reasoning already passed on: the call is not made again (the listener saw its start).
    calls = 0;
    const forwarded = modelOf(async () => {
      calls++;
      return { stream: closedStream([reasoning("Hmm"), failing()]) };
    });
    await outcome(
      streamModelStep({ model: forwarded, prompt: [], tools: [], abortScope: new AbortScope(), retry }),
    );
    expect(calls).toBe(1);
  });
});
