import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  type ChatCompletionRequest,
  type FakeOpenAIServer,
  type FakeReply,
  startFakeOpenAIServer,
} from "./fake-openai-server.js";

const TOOL_WITHOUT_CALL =
  "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

let server: FakeOpenAIServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Starts a server that answers the n-th request with the n-th reply. */
async function serve(...replies: FakeReply[]): Promise<FakeOpenAIServer> {
  server = await startFakeOpenAIServer({
    reply: (_request, index) => {
      const reply = replies[index];
      if (!reply) throw new Error(`no reply scripted for request ${index}`);
      return reply;
    },
  });
  return server;
}

function modelOf(fake: FakeOpenAIServer) {
  const provider = createOpenAICompatible({
    name: "fake",
    baseURL: fake.baseURL,
    apiKey: "test-key",
    includeUsage: true,
  });
  return provider("fake-model");
}

const weather = tool({
  description: "Current weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, temperatureC: 21 }),
});

function postCompletion(fake: FakeOpenAIServer, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${fake.baseURL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...init,
  });
}

/** The JSON payloads of an SSE body, with the terminating `[DONE]` kept as a string. */
function sseEvents(body: string): unknown[] {
  return body
    .split("\n\n")
    .filter((event) => event !== "")
    .map((event) => {
      expect(event.startsWith("data: ")).toBe(true);
      const data = event.slice("data: ".length);
      return data === "[DONE]" ? data : JSON.parse(data);
    });
}

describe("fake OpenAI server through the AI SDK", () => {
  it("streams a tool call in fragments, then the answer, across two steps", async () => {
    const fake = await serve(
      {
        toolCalls: [{ id: "call_1", name: "weather", arguments: ['{"city"', ':"Par', 'is"}'] }],
        usage: { prompt_tokens: 10, completion_tokens: 5 },
      },
      { text: ["It is 21°C ", "in Paris."], usage: { prompt_tokens: 20, completion_tokens: 6 } },
    );

    const result = streamText({
      model: modelOf(fake),
      tools: { weather },
      stopWhen: stepCountIs(3),
      prompt: "What is the weather in Paris?",
    });

    expect(await result.text).toBe("It is 21°C in Paris.");
    const steps = await result.steps;
    expect(steps).toHaveLength(2);
    expect(steps[0]?.toolCalls[0]?.input).toEqual({ city: "Paris" });
    expect((await result.totalUsage).inputTokens).toBe(30);

    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]).toMatchObject({ model: "fake-model", stream: true });
    const followUp = fake.requests[1]?.messages ?? [];
    expect(followUp.slice(-2)).toEqual([
      expect.objectContaining({
        role: "assistant",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } },
        ],
      }),
      expect.objectContaining({
        role: "tool",
        tool_call_id: "call_1",
        content: JSON.stringify({ city: "Paris", temperatureC: 21 }),
      }),
    ]);
  });

  it("delivers reasoning chunks as reasoning parts", async () => {
    const fake = await serve({ reasoning: ["Six times ", "seven."], text: "42" });

    const result = streamText({ model: modelOf(fake), prompt: "6*7?" });
    const reasoning: string[] = [];
    for await (const part of result.fullStream) {
      if (part.type === "reasoning-delta") reasoning.push(part.text);
    }

    expect(reasoning).toEqual(["Six times ", "seven."]);
    expect(await result.text).toBe("42");
  });

  it("answers non-streaming requests, tool calls included, for generateText", async () => {
    const fake = await serve(
      { toolCalls: [{ id: "call_a", name: "weather", arguments: '{"city":"Oslo"}' }] },
      { text: "Mild in Oslo.", usage: { prompt_tokens: 7, completion_tokens: 3 } },
    );

    const result = await generateText({
      model: modelOf(fake),
      tools: { weather },
      stopWhen: stepCountIs(3),
      prompt: "Weather in Oslo?",
    });

    expect(result.text).toBe("Mild in Oslo.");
    expect(result.usage.inputTokens).toBe(7);
    expect(result.steps[0]?.toolResults[0]?.output).toEqual({ city: "Oslo", temperatureC: 21 });
    expect(fake.requests.some((request) => request.stream)).toBe(false);
    expect(fake.requests[1]?.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_a" });
  });

  it("surfaces an error reply as an SDK error", async () => {
    const fake = await serve({ error: { status: 500, message: "The server had an error" } });

    await expect(generateText({ model: modelOf(fake), prompt: "Hi", maxRetries: 0 })).rejects.toMatchObject({
      statusCode: 500,
      message: "The server had an error",
    });
    expect(fake.requests).toHaveLength(1);
  });

  it("lets the SDK retry a 429 and succeed on the next reply", async () => {
    const fake = await serve(
      { error: { status: 429, message: "Rate limit reached", headers: { "retry-after-ms": "0" } } },
      { text: "Recovered." },
    );

    const result = await generateText({ model: modelOf(fake), prompt: "Hi" });

    expect(result.text).toBe("Recovered.");
    expect(fake.requests).toHaveLength(2);
  });

  it("keeps serving after a client aborts mid-stream", async () => {
    const fake = await serve(
      { text: Array.from({ length: 50 }, () => "tick "), chunkDelayMs: 10 },
      { text: "Still here." },
    );
    const abort = new AbortController();

    const aborted = streamText({ model: modelOf(fake), prompt: "Count", abortSignal: abort.signal });
    const received: string[] = [];
    for await (const text of aborted.textStream) {
      received.push(text);
      abort.abort();
    }
    // Give the server time to hit its next chunk delays on the dead connection.
    await new Promise((resolve) => setTimeout(resolve, 50));

    expect(received.length).toBeLessThan(50);
    const next = await generateText({ model: modelOf(fake), prompt: "Again" });
    expect(next.text).toBe("Still here.");
  });
});

describe("fake OpenAI server wire format", () => {
  it("streams chunks in the Chat Completions shape, ending with usage and [DONE]", async () => {
    const fake = await serve({
      text: ["Hel", "lo"],
      toolCalls: [{ id: "call_9", name: "weather", arguments: ['{"city":', '"Rome"}'] }],
      usage: { prompt_tokens: 3, completion_tokens: 4 },
    });

    const response = await postCompletion(fake, {
      model: "m",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Hi" }],
    });

    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const events = sseEvents(await response.text());
    const envelope = {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      model: "m",
      created: expect.any(Number),
    };
    const choice = (delta: object, finish_reason: string | null = null) => ({
      ...envelope,
      choices: [{ index: 0, delta, finish_reason }],
    });
    expect(events).toEqual([
      choice({ role: "assistant", content: "Hel" }),
      choice({ content: "lo" }),
      choice({
        tool_calls: [
          { index: 0, id: "call_9", type: "function", function: { name: "weather", arguments: "" } },
        ],
      }),
      choice({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      choice({ tool_calls: [{ index: 0, function: { arguments: '"Rome"}' } }] }),
      choice({}, "tool_calls"),
      { ...envelope, choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } },
      "[DONE]",
    ]);
  });

  it("answers 404 for other routes and 400 for a body that is not JSON", async () => {
    const fake = await serve();

    const notFound = await fetch(`${fake.baseURL}/models`);
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toMatchObject({ error: { type: "invalid_request_error" } });

    const badJson = await fetch(`${fake.baseURL}/chat/completions`, { method: "POST", body: "{nope" });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ error: { type: "invalid_request_error" } });
  });

  it("answers 500, saying so, when the reply callback returns no FakeReply", async () => {
    server = await startFakeOpenAIServer({ reply: () => undefined as unknown as FakeReply });

    const response = await postCompletion(server, {
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
    });

    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({
      error: {
        message: "Fake OpenAI server failed: the reply callback returned undefined, not a FakeReply object",
        type: "server_error",
      },
    });
  });

  it("answers 500 naming the field when the reply callback returns a malformed FakeReply, or throws", async () => {
    const cases: [() => unknown, string][] = [
      [
        () => ({ text: 5 }),
        "a malformed FakeReply: text must be a string or an array of strings, got number 5",
      ],
      [() => ({ kind: "text", text: "x" }), 'a malformed FakeReply: it has no field "kind"'],
      [() => ({ toolCalls: [{ id: "c", name: 1, arguments: "{}" }] }), "toolCalls[0].name must be a string"],
      [() => ({ finishReason: "done" }), 'finishReason must be one of stop, tool_calls, length, got "done"'],
      [() => ({ error: { status: 99999, message: "x" } }), "error.status must be an HTTP status"],
      [() => ({ text: "x", chunkDelayMs: "slow" }), 'chunkDelayMs must be a number >= 0, got "slow"'],
      [
        () => {
          throw new Error("no reply scripted");
        },
        "Fake OpenAI server failed: the reply callback threw: no reply scripted",
      ],
    ];
    for (const [reply, expected] of cases) {
      server = await startFakeOpenAIServer({ reply: reply as () => FakeReply });
      const fake = server;
      for (const stream of [false, true]) {
        const response = await postCompletion(fake, {
          model: "m",
          stream,
          messages: [{ role: "user", content: "Hi" }],
        });
        expect(response.status, expected).toBe(500);
        const { error } = (await response.json()) as { error: { message: string; type: string } };
        expect(error.type).toBe("server_error");
        expect(error.message).toContain(expected);
      }
      await fake.close();
    }
  });

  it("refuses to start without a reply function, naming what is wrong", async () => {
    await expect(startFakeOpenAIServer(undefined as never)).rejects.toThrow(
      new TypeError("startFakeOpenAIServer takes { reply }, got undefined."),
    );
    await expect(startFakeOpenAIServer({ replies: [] } as never)).rejects.toThrow(
      new TypeError('startFakeOpenAIServer has no option "replies" (known: reply).'),
    );
    await expect(startFakeOpenAIServer({ reply: 5 } as never)).rejects.toThrow(
      new TypeError("startFakeOpenAIServer: reply must be a function, got number."),
    );
  });

  it("ends open streams on close()", async () => {
    const fake = await serve({ text: ["slow"], chunkDelayMs: 60_000 });
    const response = await postCompletion(fake, {
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    });

    await fake.close();

    await expect(response.text()).rejects.toThrow();
  });
});

describe("fake OpenAI server, invalid histories", () => {
  it("makes the server answer 400 without calling the reply callback", async () => {
    const reply = vi.fn((): FakeReply => ({ text: "unreachable" }));
    server = await startFakeOpenAIServer({ reply });
    const body: ChatCompletionRequest = {
      model: "m",
      messages: [{ role: "tool", tool_call_id: "call_1", content: "x" }],
    };

    const response = await postCompletion(server, body);

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { message: TOOL_WITHOUT_CALL, type: "invalid_request_error", param: "messages", code: null },
    });
    expect(reply).not.toHaveBeenCalled();
    expect(server.requests).toEqual([body]);
  });
});
