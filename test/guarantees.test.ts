import "@agent-core/agentic";
import {
  AbortedError,
  Agent,
  AgentBusyError,
  type AgentRun,
  type AssistantMessage,
  DuplicateToolError,
  defineTool,
  eventSchemas,
  InvalidConfigError,
  InvalidHistoryError,
  MaxCyclesExceededError,
  NoProviderError,
  ProviderError,
  registerOrchestrator,
  stopReasonSchema,
  TimeoutError,
  UnknownOrchestratorError,
} from "@agent-core/core";
import { collectEvents, eventsOf, eventTypes, script, scriptedModel } from "@agent-core/testing";
import type { LanguageModelV4, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { add, apiError, finished } from "./fixtures.js";

/** What `fn` throws (undefined: nothing). */
function thrown(fn: () => void): Error | undefined {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  return undefined;
}

describe("limits", () => {
  it("maxCycles ends a model that never stops calling tools, with a valid history", async () => {
    const loop = Array.from({ length: 5 }, (_, i) => [script.toolCall("add", { a: i, b: 1 })]);
    const agent = new Agent({ provider: scriptedModel(loop), tools: [add], limits: { maxCycles: 3 } });
    const result = await finished(agent.prompt("count"));
    expect(result.stopReason).toBe("max_cycles");
    expect(result.error).toBeInstanceOf(MaxCyclesExceededError);
    expect(result.error?.message).toBe("The run reached its limit of 3 model calls (limits.maxCycles).");
    expect(result.messages.filter((m) => m.role === "toolResult")).toHaveLength(3);
  });

  it("names a limit of one model call in the singular", async () => {
    const loop = [[script.toolCall("add", { a: 1, b: 1 })], [script.text("never")]];
    const agent = new Agent({ provider: scriptedModel(loop), tools: [add], limits: { maxCycles: 1 } });
    const result = await finished(agent.prompt("count"));
    expect(result.error?.message).toBe("The run reached its limit of 1 model call (limits.maxCycles).");
  });

  it("defaults to 10 cycles and emits an error event with code max_cycles before agent_end", async () => {
    const loop = Array.from({ length: 12 }, (_, i) => [script.toolCall("add", { a: i, b: 1 })]);
    const model = scriptedModel(loop);
    const run = new Agent({ provider: model, tools: [add] }).prompt("go");
    const result = await finished(run);
    expect(model.doStreamCalls).toHaveLength(10);
    expect(eventTypes(run.events).slice(-2)).toEqual(["error", "agent_end"]);
    expect(eventsOf(run.events, "error")[0]).toMatchObject({ code: "max_cycles" });
    expect(result.stopReason).toBe("max_cycles");
  });

  it("rejects invalid limits at construction", () => {
    expect(() => new Agent({ limits: { maxCycles: 0 } })).toThrow(InvalidConfigError);
    expect(() => new Agent({ limits: { abortGraceMs: -1 } })).toThrow(/abortGraceMs/);
  });
});

/**
 * A provider whose doStream() ignores its abort signal and only settles when released: the wait
 * for the stream itself must be raced, not just the reading. `cancelled` settles when the stream
 * that arrives late is cancelled (so it does not leak).
 */
function stuckBeforeStream(): { model: LanguageModelV4; release(): void; cancelled: Promise<void> } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let markCancelled!: () => void;
  const cancelled = new Promise<void>((resolve) => {
    markCancelled = resolve;
  });
  const model: LanguageModelV4 = {
    specificationVersion: "v4",
    provider: "test",
    modelId: "stuck-before-stream",
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error("streams only")),
    doStream: async () => {
      await released;
      return { stream: new ReadableStream<LanguageModelV4StreamPart>({ cancel: () => markCancelled() }) };
    },
  };
  return { model, release, cancelled };
}

describe("prompts are serialized", () => {
  it("a prompt made from a listener of a run's first events waits for that run, and so do later ones", async () => {
    const model = scriptedModel([
      [script.text("first "), script.delay(20), script.text("answer")],
      [script.text("second answer")],
      [script.text("third answer")],
    ]);
    const agent = new Agent({ provider: model });
    const order: string[] = [];
    let second: AgentRun | undefined;
    agent.on("*", (event) => {
      order.push(`${event.runId} ${event.type}`);
      // The first run's agent_start is published before prompt() returns.
      second ??= agent.prompt("second prompt");
    });
    const first = agent.prompt("first prompt");
    await new Promise((resolve) => setTimeout(resolve, 5));
    const third = agent.prompt("third prompt");
    const runs = [first, second as AgentRun, third];
    const results = await Promise.all(runs.map((run) => run.result()));
    expect(results.map((r) => r.text)).toEqual(["first answer", "second answer", "third answer"]);
    const ends = order.filter((line) => / agent_(start|end)$/.test(line));
    expect(ends).toEqual(runs.flatMap((run) => [`${run.runId} agent_start`, `${run.runId} agent_end`]));
  });
});

describe("steering and follow-ups of an app's own kind", () => {
  it("enter the history once and are not queued again", async () => {
    const model = scriptedModel([[script.text("one")], [script.text("two")], [script.text("three")]]);
    const agent = new Agent({ provider: model });
    agent.steer({ role: "app-note", text: "steer-note" });
    agent.followUp({ role: "app-note", text: "follow-note" });
    const first = await agent.prompt("hello").result();
    expect(first.requeued).toBeUndefined();
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
    await agent.prompt("again").result();
    const notes = agent.messages
      .filter((m) => m.role === "app-note")
      .map((m) => (m as unknown as { text: string }).text);
    expect(notes).toEqual(["steer-note", "follow-note"]);
  });
});

describe("bad messages", () => {
  it("a malformed prompt, steering or follow-up message is refused at once and leaves the agent as it was", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    for (const bad of [{ role: "user" }, 42, null, { role: "user", content: 5 }])
      expect(() => agent.prompt(bad as never)).toThrow(InvalidConfigError);
    expect(() => agent.prompt(["fine", { role: 5 }] as never)).toThrow(
      /^Invalid prompt: message must be a string or an AgentMessage .*, got \{"role":5\}\.$/,
    );
    expect(() => agent.steer(null as never)).toThrow(/^Invalid steering message: /);
    expect(() => agent.followUp({} as never)).toThrow(/^Invalid follow-up message: /);
    expect(agent.messages).toEqual([]);
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
    expect(agent.busy).toBe(false);
    const result = await agent.prompt("hello").result();
    expect(result).toMatchObject({ stopReason: "completed", text: "hi" });
    // An app's own kind of message needs only its role.
    agent.followUp({ role: "app-note", text: "kept" });
    expect(agent.queued.followUps).toEqual([{ role: "app-note", text: "kept" }]);
  });
});

describe("a promise of a message", () => {
  it("is refused at once as a message, not as settings", () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    const promised =
      "message must be the message itself, not a promise of it (await it first), got a promise.";
    const message = Promise.resolve({ role: "user", content: "hi" });
    expect(() => agent.prompt(message as never)).toThrow(`Invalid prompt: ${promised}`);
    expect(() => agent.followUp(message as never)).toThrow(`Invalid follow-up message: ${promised}`);
    expect(agent.messages).toEqual([]);
  });
});

describe("bad messages, field by field", () => {
  it("a message of a role the model reads is refused naming its bad field and what it must be", () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    const cases = [
      [{ role: "assistant" }, "message.content must be an array, got undefined."],
      [
        { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "add", arguments: {} }] },
        "message.content.0.args must be present, got undefined.",
      ],
      [
        { role: "assistant", content: [{ type: "txt", text: "x" }] },
        'message.content.0.type must be one of "text", "thinking", "toolCall", got "txt".',
      ],
      [{ role: "user", content: 5 }, "message.content must be a string or an array of text blocks, got 5."],
      [
        { role: "toolResult", toolCallId: "c1", toolName: "add", content: "3", isError: false },
        'message.status must be one of "ok", "error", "skipped", "timeout", "aborted", "denied", got undefined.',
      ],
    ] as const;
    for (const [message, problem] of cases) {
      expect(() => agent.prompt(message as never)).toThrow(`Invalid prompt: ${problem}`);
      expect(() => agent.steer(message as never)).toThrow(`Invalid steering message: ${problem}`);
    }
    expect(agent.messages).toEqual([]);
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
  });
});

describe("an assistant message with nothing in it", () => {
  it("stays in the history but never reaches the model, which refuses one", async () => {
    const empty = [
      { role: "assistant", content: [] },
      { role: "assistant", content: [{ type: "text", text: "" }] },
    ] as const;
    const model = scriptedModel([[script.text("here")]]);
    const agent = new Agent({ provider: model, messages: [{ role: "user", content: "hi" }, ...empty] });
    expect((await agent.prompt("still there?").result()).text).toBe("here");
    expect(model.prompts[0]?.map((message) => message.role)).toEqual(["system", "user", "user"]);
    expect(agent.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "assistant",
      "user",
      "assistant",
    ]);
  });

  it("a user message is sent as it was given, even an empty prompt", async () => {
    const model = scriptedModel([[script.text("here")]]);
    await new Agent({ provider: model }).prompt("").result();
    expect(model.prompts[0]?.at(-1)).toEqual({ role: "user", content: [{ type: "text", text: "" }] });
  });
});

describe("a prompt without a message", () => {
  // A strict provider (Anthropic) refuses a request with no message, and the history would start
  // with the model's reply.
  it("on a history the model reads nothing of fails the run before the model call, leaving the history as it was", async () => {
    const model = scriptedModel([[script.text("hi")]]);
    const agent = new Agent({ provider: model });
    for (const prompt of [[], [{ role: "app-note", text: "user opened settings" }]]) {
      const before = agent.messages;
      const { stopReason, error } = await agent.prompt(prompt).result();
      expect(stopReason).toBe("error");
      expect(error).toBeInstanceOf(InvalidHistoryError);
      expect(error?.message).toMatch(/^Invalid history: the model call has no message to answer/);
      expect(agent.messages).toEqual([...before, ...prompt]);
    }
    expect(model.prompts).toEqual([]);
    expect((await agent.prompt("hello").result()).text).toBe("hi");
  });

  it("continues a history that ends with a user message", async () => {
    const model = scriptedModel([[script.text("hi")]]);
    const agent = new Agent({ provider: model, messages: [{ role: "user", content: "hello" }] });
    expect(await agent.prompt([]).result()).toMatchObject({ stopReason: "completed", text: "hi" });
    expect(agent.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
  });
});

describe("a tool result as a steering or follow-up message", () => {
  const result = {
    role: "toolResult",
    toolCallId: "c1",
    toolName: "add",
    content: "3",
    isError: false,
    status: "ok",
    timestamp: 1,
  } as const;
  const refused =
    'message must not be a tool result: only a run answers the model\'s tool calls, got the result of "c1".';

  it("is refused at once, as a malformed one is: it could never enter the history, and would fail every run", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    for (const [queue, what] of [
      [() => agent.steer(result), "steering message"],
      [() => agent.followUp(result), "follow-up message"],
    ] as const) {
      const error = thrown(queue);
      expect(error, what).toBeInstanceOf(InvalidConfigError);
      expect(error?.message, what).toBe(`Invalid ${what}: ${refused}`);
    }
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
    expect((await agent.prompt("hello").result()).stopReason).toBe("completed");
  });

  it("from a callback ends that run with the same error, and not the next one", async () => {
    let asked = 0;
    const agent = new Agent({
      provider: scriptedModel([[script.text("hi")]]),
      getSteeringMessages: () => (asked++ === 0 ? [result] : []),
    });
    const first = await agent.prompt("hello").result();
    expect(first.error).toBeInstanceOf(InvalidConfigError);
    expect(first.error?.message).toBe(`Invalid message from getSteeringMessages: ${refused}`);
    expect(first.messages.map((m) => m.role)).toEqual(["user"]);
    expect((await agent.prompt("again").result()).stopReason).toBe("completed");
  });
});

describe("a tool call in a steering or follow-up message", () => {
  const call = {
    role: "assistant",
    content: [{ type: "toolCall", id: "t1", name: "add", args: { a: 1, b: 2 } }],
  } as AssistantMessage;
  const refused =
    'message must not hold a tool call: only the model\'s replies make tool calls, got the call "t1".';

  it("is refused at once: queued, it would fail every run (its id taken, or its call never answered)", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("add", { a: 1, b: 2 }, { id: "t1" })], [script.text("3")]]),
      tools: [add],
    });
    await agent.prompt("add").result();
    for (const [queue, what] of [
      [() => agent.steer(call), "steering message"],
      [() => agent.followUp(call), "follow-up message"],
    ] as const) {
      const error = thrown(queue);
      expect(error, what).toBeInstanceOf(InvalidConfigError);
      expect(error?.message, what).toBe(`Invalid ${what}: ${refused}`);
    }
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
  });

  it("from a callback ends that run with the same error, and not the next one", async () => {
    let asked = 0;
    const agent = new Agent({
      provider: scriptedModel([[script.text("hi")], [script.text("hi again")]]),
      getFollowUpMessages: () => (asked++ === 0 ? [call] : []),
    });
    const first = await agent.prompt("hello").result();
    expect(first.error).toBeInstanceOf(InvalidConfigError);
    expect(first.error?.message).toBe(`Invalid message from getFollowUpMessages: ${refused}`);
    expect((await agent.prompt("again").result()).stopReason).toBe("completed");
  });
});

describe("a tool result given to prompt()", () => {
  const resultOf = (toolCallId: string) =>
    ({
      role: "toolResult",
      toolCallId,
      toolName: "add",
      content: "3",
      isError: false,
      status: "ok",
      timestamp: 1,
    }) as const;
  /** Checks that `prompt` throws the refusal of the result of `toolCallId`. */
  const expectRefused = (prompt: () => void, toolCallId: string) => {
    let error: unknown;
    try {
      prompt();
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(InvalidConfigError);
    expect((error as Error).message).toBe(
      `Invalid prompt: message must answer a tool call of an assistant message before it in the prompt (only a run answers the calls of the history), got the result of "${toolCallId}".`,
    );
  };

  it("that answers no call is refused at once, before any of the prompt enters the history", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    for (const input of [[resultOf("nope")], ["hello", resultOf("nope")]]) {
      expectRefused(() => agent.prompt(input), "nope");
      expect(agent.messages).toEqual([]);
    }
    expect((await agent.prompt("hello").result()).stopReason).toBe("completed");
  });

  it("that answers a call waiting for approval is refused, and the call still waits", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("add", { a: 1, b: 2 }, { id: "t1" })], [script.text("3")]]),
      tools: [add],
      beforeToolCall: () => ({ requireApproval: true }),
    });
    expect((await agent.prompt("add").result()).stopReason).toBe("awaiting_approval");
    expectRefused(() => agent.prompt([resultOf("t1")]), "t1");
    expect(agent.pendingApprovals.map((pending) => pending.toolCallId)).toEqual(["t1"]);
  });

  it("that answers a call of the prompt's own assistant message enters the history with it", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("it was 3")]]) });
    const call: AssistantMessage = {
      role: "assistant",
      content: [{ type: "toolCall", id: "c1", name: "add", args: { a: 1, b: 2 } }],
      stopReason: "toolUse",
      timestamp: 1,
    } as AssistantMessage;
    const result = await agent.prompt([call, resultOf("c1"), "what was it?"]).result();
    expect(result.stopReason).toBe("completed");
    expect(agent.messages.map((message) => message.role)).toEqual([
      "assistant",
      "toolResult",
      "user",
      "assistant",
    ]);
    // Answered once: a second result for the same call answers nothing.
    expectRefused(() => agent.prompt([call, resultOf("c1"), resultOf("c1")]), "c1");
  });
});

describe("a prompt's tool call whose id is already used", () => {
  const callOf = (id: string) =>
    ({
      role: "assistant",
      content: [{ type: "toolCall", id, name: "add", args: { a: 1, b: 1 } }],
      stopReason: "toolUse",
      timestamp: 1,
    }) as AssistantMessage;
  const resultOf = (toolCallId: string) =>
    ({
      role: "toolResult",
      toolCallId,
      toolName: "add",
      content: "2",
      isError: false,
      status: "ok",
    }) as const;
  const refusal = (id: string) =>
    `Invalid history: the prompt's tool call id "${id}" is already used by a tool call of the history; every call needs its own id.`;

  it("by the history is refused when its run starts (the prompt waited its turn): nothing of it enters the history", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("add", { a: 1, b: 2 }, { id: "t1" })], [script.text("3")]]),
      tools: [add],
    });
    const first = agent.prompt("add");
    // Made while the first run has not yet made call "t1": prompt() cannot know.
    const second = agent.prompt(["look", callOf("t1"), resultOf("t1"), "and this?"]);
    const before = (await first.result()).messages;
    const result = await finished(second);
    expect(eventTypes(second.events)).toEqual(["agent_start", "error", "agent_end"]);
    expect(result.stopReason).toBe("error");
    expect(result.error).toBeInstanceOf(InvalidHistoryError);
    expect(result.error?.message).toBe(refusal("t1"));
    expect(result.newMessages).toEqual([]);
    expect(agent.messages).toEqual(before);
  });

  it("by another call of the prompt is refused at once by prompt(), before any of the prompt enters the history", () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    const twice = {
      ...callOf("c1"),
      content: [...callOf("c1").content, ...callOf("c1").content],
    } as AssistantMessage;
    for (const input of [
      ["look", callOf("c1"), resultOf("c1"), callOf("c1"), resultOf("c1")],
      ["look", twice, resultOf("c1"), resultOf("c1")],
    ]) {
      const error = thrown(() => agent.prompt(input));
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect(error?.message).toBe(
        'Invalid prompt: message must give each tool call its own id, got a second call of id "c1".',
      );
      expect(agent.messages).toEqual([]);
    }
  });

  it("by the history is refused, and a batch waiting for approval still waits", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("add", { a: 1, b: 2 }, { id: "t1" })], [script.text("3")]]),
      tools: [add],
      beforeToolCall: () => ({ requireApproval: true }),
    });
    expect((await agent.prompt("add").result()).stopReason).toBe("awaiting_approval");
    const before = agent.messages;
    // The history waits for the call's result: not yet a valid transcript.
    const result = await finished(agent.prompt(["look", callOf("t1"), resultOf("t1")]), { valid: false });
    expect(result.error?.message).toBe(refusal("t1"));
    expect(agent.messages).toEqual(before);
    expect(agent.pendingApprovals.map((pending) => pending.toolCallId)).toEqual(["t1"]);
  });
});

describe("a provider that ignores its signal before its stream arrives", () => {
  it("abort ends the run at once (not after the grace period), and the late stream is cancelled", async () => {
    const { model, release, cancelled } = stuckBeforeStream();
    const agent = new Agent({ provider: model, limits: { abortGraceMs: 60_000 } });
    const run = agent.prompt("x");
    setTimeout(() => agent.abort(), 10);
    const result = await finished(run);
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeInstanceOf(AbortedError);
    expect(result.messages.map((m) => m.role)).toEqual(["user"]);
    release();
    await cancelled;
  });

  it("firstChunkMs ends the call while doStream() is still pending, and the late stream is cancelled", async () => {
    const { model, release, cancelled } = stuckBeforeStream();
    const result = await finished(new Agent({ provider: model, timeouts: { firstChunkMs: 20 } }).prompt("x"));
    expect(result.stopReason).toBe("timeout");
    expect(result.error).toBeInstanceOf(TimeoutError);
    expect(result.error?.message).toBe(
      "The model's first chunk took longer than 20 ms (timeouts.firstChunkMs).",
    );
    release();
    await cancelled;
  });
});

describe("abort", () => {
  it("ends a model stream that ignores its signal, promptly, with an error event code aborted", async () => {
    const model = scriptedModel([[script.text("partial"), script.hang()]]);
    const agent = new Agent({ provider: model });
    const run = agent.prompt("x");
    const events: string[] = [];
    for await (const event of run) {
      events.push(event.type);
      if (event.type === "text_delta") agent.abort();
    }
    const result = await finished(run);
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeInstanceOf(AbortedError);
    expect(eventsOf(run.events, "error")[0]).toEqual(expect.objectContaining({ code: "aborted" }));
    expect(events.slice(-2)).toEqual(["error", "agent_end"]);
    expect(result.messages.map((m) => m.role)).toEqual(["user"]);
  });

  it("abandons a tool that ignores its signal after the grace period, with status aborted", async () => {
    let signalSeen: AbortSignal | undefined;
    const stuck = defineTool({
      name: "stuck",
      description: "never returns",
      inputSchema: z.object({}),
      execute: (_args, { signal }) => {
        signalSeen = signal;
        return new Promise(() => {});
      },
    });
    const model = scriptedModel([
      [script.toolCall("stuck", {}, { id: "s1" }), script.toolCall("add", { a: 1, b: 1 }, { id: "s2" })],
    ]);
    const agent = new Agent({ provider: model, tools: [stuck, add], limits: { abortGraceMs: 30 } });
    const run = agent.prompt("x");
    agent.on("tool_call", () => setTimeout(() => agent.abort("user pressed stop"), 5));
    const started = Date.now();
    const result = await finished(run);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(signalSeen?.aborted).toBe(true);
    expect(result.stopReason).toBe("aborted");
    expect(result.error?.message).toBe("The run was aborted: user pressed stop");
    expect(eventsOf(run.events, "tool_result").map((e) => [e.toolCallId, e.status])).toEqual([
      ["s1", "aborted"],
      ["s2", "aborted"],
    ]);
    expect(result.messages.filter((m) => m.role === "toolResult")).toHaveLength(2);
  });

  it("a tool that honours its signal ends as aborted without waiting for the grace period", async () => {
    const polite = defineTool({
      name: "polite",
      description: "waits for abort",
      inputSchema: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener("abort", () => reject(new Error("stopped"))),
        ),
    });
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("polite")]]),
      tools: [polite],
      limits: { abortGraceMs: 5_000 },
    });
    const run = agent.prompt("x");
    agent.on("tool_call", () => setTimeout(() => run.abort(), 5));
    const started = Date.now();
    const result = await finished(run);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(eventsOf(run.events, "tool_result")[0]).toMatchObject({ status: "aborted", error: "stopped" });
    expect(result.stopReason).toBe("aborted");
  });

  it("honours the prompt's signal, also when it is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const model = scriptedModel([[script.text("never")]]);
    const result = await finished(new Agent({ provider: model }).prompt("x", { signal: controller.signal }));
    expect(result.stopReason).toBe("aborted");
    expect(model.doStreamCalls).toHaveLength(0);
    // It never started: its prompt is not in the history, as with a queued run aborted (endings.test.ts).
    expect(result.messages).toHaveLength(0);
  });

  it("aborts the running run and the queued ones, but not runs prompted after the abort", async () => {
    const model = scriptedModel([[script.text("streaming"), script.hang()], [script.text("fresh")]]);
    const agent = new Agent({ provider: model });
    const first = agent.prompt("one");
    const second = agent.prompt("two");
    let third: ReturnType<Agent["prompt"]> | undefined;
    const off = agent.on("text_delta", () => {
      off();
      agent.abort();
      third = agent.prompt("three");
    });
    expect((await first.result()).stopReason).toBe("aborted");
    expect((await second.result()).stopReason).toBe("aborted");
    expect(third).toBeDefined();
    const last = await finished(third as ReturnType<Agent["prompt"]>);
    expect(last).toMatchObject({ stopReason: "completed", text: "fresh" });
    expect(model.doStreamCalls).toHaveLength(2);
  });
});

describe("provider failures", () => {
  it("an error part becomes an error event and stopReason error, never an answer", async () => {
    const model = scriptedModel([[script.text("Hal"), script.error(new Error("upstream exploded"))]]);
    const run = new Agent({ provider: model }).prompt("x");
    const result = await finished(run);
    expect(result.stopReason).toBe("error");
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(eventsOf(run.events, "error")[0]).toEqual(
      expect.objectContaining({
        code: "provider_error",
        message: "The model call failed: upstream exploded",
      }),
    );
    expect(result.messages.map((m) => m.role)).toEqual(["user"]);
    expect(result.text).toBe("");
  });

  it("retries a retryable error with backoff, then succeeds", async () => {
    const model = scriptedModel([
      { throws: apiError(429, true) },
      { throws: apiError(503, true) },
      [script.text("ok")],
    ]);
    const agent = new Agent({ provider: model, retry: { initialDelayMs: 1 } });
    const result = await finished(agent.prompt("x"));
    expect(result).toMatchObject({ stopReason: "completed", text: "ok" });
    expect(model.doStreamCalls).toHaveLength(3);
  });

  it("gives up after maxRetries and says how often it tried", async () => {
    const model = scriptedModel([{ throws: apiError(500, true) }, { throws: apiError(500, true) }]);
    const result = await finished(
      new Agent({ provider: model, retry: { maxRetries: 1, initialDelayMs: 1 } }).prompt("x"),
    );
    expect(result.error?.message).toBe("The model call failed (after 1 retry): HTTP 500");
    expect(result.error).toMatchObject({ code: "provider_error", retryable: true });
  });

  it("does not retry a non-retryable error, nor after text was already shown", async () => {
    const badRequest = scriptedModel([{ throws: apiError(400, false) }, [script.text("unused")]]);
    expect((await finished(new Agent({ provider: badRequest }).prompt("x"))).stopReason).toBe("error");
    expect(badRequest.doStreamCalls).toHaveLength(1);
    const midStream = scriptedModel([
      [script.text("half"), script.error(apiError(503, true))],
      [script.text("unused")],
    ]);
    expect(
      (await finished(new Agent({ provider: midStream, retry: { initialDelayMs: 1 } }).prompt("x")))
        .stopReason,
    ).toBe("error");
    expect(midStream.doStreamCalls).toHaveLength(1);
  });

  it("an abort during the retry backoff ends the run at once", async () => {
    const model = scriptedModel([{ throws: apiError(429, true) }, [script.text("late")]]);
    const agent = new Agent({ provider: model, retry: { initialDelayMs: 10_000 } });
    const run = agent.prompt("x");
    setTimeout(() => agent.abort(), 10);
    const started = Date.now();
    expect((await finished(run)).stopReason).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("without a provider, the run ends with a clear no_provider error", async () => {
    const run = new Agent({}).prompt("x");
    const result = await finished(run);
    expect(result.error).toBeInstanceOf(NoProviderError);
    expect(result.error?.message).toMatch(/has no provider/);
    expect(result.messages).toEqual([expect.objectContaining({ role: "user", content: "x" })]);
  });
});

describe("configuration errors", () => {
  it("an unknown orchestrator name is an error naming it and the registered ones", () => {
    expect(() => new Agent({ orchestrator: "nope" })).toThrow(UnknownOrchestratorError);
    expect(() => new Agent({ orchestrator: "nope" })).toThrow(
      /Unknown orchestrator "nope"\. Registered orchestrators: "agentic"/,
    );
  });

  it("two tools of one name are refused at new Agent() with a DuplicateToolError (code duplicate_tool)", () => {
    let caught: unknown;
    try {
      new Agent({ tools: [add, add] });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DuplicateToolError);
    expect(caught).toMatchObject({ code: "duplicate_tool" });
    expect(new UnknownOrchestratorError("nope", [])).toMatchObject({ code: "unknown_orchestrator" });
  });

  it("resolves registered orchestrators by name, and the agentic one is the default", () => {
    registerOrchestrator("named-echo", () => ({ name: "named-echo", run: async () => {} }));
    expect(new Agent({ orchestrator: "named-echo" }).orchestrator.name).toBe("named-echo");
    expect(new Agent({}).orchestrator.name).toBe("agentic");
  });

  it("rejects a provider that is not a language model object, and a malformed orchestrator", () => {
    expect(() => new Agent({ provider: "openai/gpt-4o" as never })).toThrow(
      /provider must be an AI SDK LanguageModel/,
    );
    expect(() => new Agent({ orchestrator: { name: "x" } as never })).toThrow(/needs a run\(ctx\) method/);
  });
});

describe("the agent", () => {
  it("starts with an empty history (Go TestAgentConfigMinimal)", () => {
    expect(new Agent({ systemPrompt: "You are helpful." }).messages).toEqual([]);
  });

  it("keeps the prompt even when the run fails, and reset empties it (Go TestAgentResetClearsHistory)", async () => {
    const agent = new Agent({});
    const result = await agent.prompt("test").result();
    expect(result.stopReason).toBe("error");
    expect(agent.messages).toHaveLength(1);
    agent.reset();
    expect(agent.messages).toHaveLength(0);
  });

  it("exports a schema for every core event type and the closed vocabularies (Go TestEventTypeConstants, TestSteeringModeConstants)", () => {
    expect(Object.keys(eventSchemas)).toEqual([
      "agent_start",
      "turn_start",
      "steering_mode",
      "thinking",
      "tool_call",
      "tool_result",
      "text_delta",
      "turn_end",
      "steering_applied",
      "context_truncated",
      "custom",
      "error",
      "agent_end",
    ]);
    expect(eventSchemas.steering_mode.shape.mode.options).toEqual(["respond", "steer"]);
    expect(stopReasonSchema.options).toEqual([
      "completed",
      "aborted",
      "max_cycles",
      "timeout",
      "stalled",
      "awaiting_client_tool",
      "awaiting_approval",
      "error",
    ]);
  });

  it("serializes prompts: the second run starts after the first has ended", async () => {
    const model = scriptedModel([[script.delay(20), script.text("first")], [script.text("second")]]);
    const agent = new Agent({ provider: model });
    const one = agent.prompt("1");
    const two = agent.prompt("2");
    expect(agent.busy).toBe(true);
    const [a, b] = await Promise.all([one.result(), two.result()]);
    expect(a.text).toBe("first");
    expect(b.text).toBe("second");
    expect(b.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(eventsOf(two.events, "agent_start")[0]?.ts).toBeGreaterThanOrEqual(
      eventsOf(one.events, "agent_end")[0]?.ts ?? 0,
    );
    expect(agent.busy).toBe(false);
  });

  it("result() alone never deadlocks, however many events nobody reads", async () => {
    const chunks = Array.from({ length: 500 }, (_, i) => `${i} `);
    const result = await new Agent({ provider: scriptedModel([[script.text(...chunks)]]) })
      .prompt("x")
      .result();
    expect(result.text).toBe(chunks.join(""));
  });

  it("reset clears the history and queues, and is refused while a run is in progress", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.delay(10), script.text("a")], [script.text("b")]]),
    });
    const run = agent.prompt("x");
    expect(() => agent.reset()).toThrow(AgentBusyError);
    await run.result();
    agent.followUp("stale");
    agent.reset();
    expect(agent.messages).toEqual([]);
    const next = await agent.prompt("y").result();
    expect(next.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("reset also drops the queued messages and the calls waiting for approval, and is refused while a run waits its turn", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })],
        [script.delay(10), script.text("a")],
        [script.text("b")],
        [script.text("c")],
      ]),
      tools: [add],
      beforeToolCall: ({ call }) => (call.id === "c1" ? { requireApproval: true } : undefined),
    });
    expect((await agent.prompt("add").result()).stopReason).toBe("awaiting_approval");
    agent.steer("stale steering");
    agent.followUp("stale follow-up");
    agent.reset();
    expect(agent.messages).toEqual([]);
    expect(agent.pendingApprovals).toEqual([]);
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
    expect(() => agent.approve("c1")).toThrow('No tool call "c1" is waiting for approval.');
    const running = agent.prompt("x");
    const waiting = agent.prompt("y");
    await running.result();
    expect(() => agent.reset()).toThrow(new AgentBusyError("reset the agent").message);
    await waiting.result();
    agent.reset();
    expect((await agent.prompt("z").result()).messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("starts from the history in config.messages: the model sees it, and its call ids stay taken", async () => {
    const saved = await new Agent({
      provider: scriptedModel([[script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })], [script.text("3")]]),
      tools: [add],
    })
      .prompt("1+2?")
      .result();
    const model = scriptedModel([[script.toolCall("add", { a: 2, b: 2 }, { id: "c1" })], [script.text("4")]]);
    const agent = new Agent({ provider: model, tools: [add], messages: saved.messages });
    expect(agent.messages).toEqual(saved.messages);
    const next = await agent.prompt("and 2+2?").result();
    expect(model.prompts[0]?.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
    // The model repeated "c1": the keeper knows the loaded call and gives the new one a fresh id.
    const calls = next.newMessages.flatMap((m) =>
      m.role === "assistant"
        ? (m.content as { type: string; id?: string }[]).filter((c) => c.type === "toolCall")
        : [],
    );
    expect(calls.map((call) => call.id)).toEqual(["c1_2"]);
    expect(next.messages).toHaveLength(saved.messages.length + 4);
  });

  it("refuses config.messages that break the transcript rules, naming the setting", () => {
    const unanswered = [
      { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "add", args: {} }] },
    ];
    expect(() => new Agent({ messages: unanswered as never })).toThrow(
      /messages must be an array of messages/,
    );
    expect(() => new Agent({ messages: [{ role: "user", content: 5 }] as never })).toThrow(
      InvalidConfigError,
    );
  });

  it("messages is a copy: changing it does not change the history", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("a")]]) });
    await agent.prompt("x").result();
    agent.messages.length = 0;
    expect(agent.messages).toHaveLength(2);
  });

  it("on() delivers typed events and '*' delivers all; a throwing listener does not break the run", async () => {
    const onListenerError = vi.fn();
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("add", { a: 1, b: 2 })], [script.text("3")]]),
      tools: [add],
      onListenerError,
    });
    const results: unknown[] = [];
    const all: string[] = [];
    agent.on("tool_result", (event) => results.push(event.result));
    const off = agent.on("*", (event) => all.push(event.type));
    agent.on("turn_start", () => {
      throw new Error("listener bug");
    });
    const run = agent.prompt("1+2");
    const events = await collectEvents(run);
    expect(results).toEqual([3]);
    expect(all).toEqual(eventTypes(events));
    expect(onListenerError).toHaveBeenCalledWith(
      expect.objectContaining({ message: "listener bug" }),
      expect.objectContaining({ type: "turn_start" }),
    );
    expect((await run.result()).stopReason).toBe("completed");
    off();
    await agent
      .prompt("again")
      .result()
      .catch(() => {});
    expect(all.filter((t) => t === "agent_start")).toHaveLength(1);
  });
});

describe("agent.on() given what is no listener", () => {
  it("throws an InvalidConfigError at once, not an error at each event that the silent logger hides", () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("a")]]) });
    for (const [type, handler] of [
      ["*", 42],
      ["turn_start", undefined],
      [undefined, () => {}],
    ] as const) {
      const error = thrown(() => agent.on(type as never, handler as never));
      expect(error, `${String(type)}, ${String(handler)}`).toBeInstanceOf(InvalidConfigError);
      expect(error?.message).toMatch(
        /^agent\.on\(type, handler\) takes an event type .* and a function, got /,
      );
    }
  });
});

describe("reading a run (events.md: any number of for await loops)", () => {
  it("gives every loop every event, at once or late; a loop left early stops neither the run nor the others", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hello there")]]) });
    const run = agent.prompt("hi");
    const types = async (limit = Number.POSITIVE_INFINITY) => {
      const seen: string[] = [];
      for await (const event of run) {
        seen.push(event.type);
        if (seen.length === limit) break;
      }
      return seen;
    };
    const [early, first, second] = await Promise.all([types(2), types(), types()]);
    const late = await types();
    expect(early).toEqual(["agent_start", "turn_start"]);
    expect(first.at(0)).toBe("agent_start");
    expect(first.at(-1)).toBe("agent_end");
    expect(second).toEqual(first);
    expect(late).toEqual(first);
    expect((await run.result()).stopReason).toBe("completed");
  });
});

describe("events are handed out, not copied (events.md)", () => {
  it("a tool_call's args is the history's arguments object; the tool runs with a copy of its own", async () => {
    let given: { tags: string[] } | undefined;
    const tagger = defineTool({
      name: "tag",
      description: "Adds a tag",
      inputSchema: z.object({ tags: z.array(z.string()) }),
      execute: (args) => {
        given = args;
        args.tags.push("added by the tool");
        return "tagged";
      },
    });
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("tag", { tags: ["a"] })], [script.text("done")]]),
      tools: [tagger],
    });
    const run = agent.prompt("tag it");
    const result = await finished(run);
    const [event] = eventsOf(run.events, "tool_call");
    const reply = result.messages[1] as AssistantMessage;
    const call = reply.content.find((block) => block.type === "toolCall");
    expect(event?.args).toBe(call?.type === "toolCall" ? call.args : "no call");
    expect(given).not.toBe(event?.args);
    expect(event?.args).toEqual({ tags: ["a"] });
  });
});

describe("the settings new Agent() checked are the agent's own", () => {
  it("a config object changed afterwards (shared by two agents, say) changes neither the agent's timeouts nor its other settings", async () => {
    const stubborn = defineTool({
      name: "stubborn",
      description: "ignores its signal",
      inputSchema: z.object({}),
      execute: () => new Promise(() => {}),
    });
    const config = {
      provider: scriptedModel([[script.toolCall("stubborn")], [script.text("went on")]]),
      tools: [stubborn],
      systemPrompt: "first agent",
      timeouts: { toolMs: 20, tools: { stubborn: 20 } },
      limits: { abortGraceMs: 10 },
    };
    const agent = new Agent(config);
    // Values new Agent() would refuse, and one it would take: none reaches the first agent.
    config.timeouts.toolMs = 3e9;
    config.timeouts.tools.stubborn = -1;
    config.systemPrompt = "second agent";
    // Nor a change of what agent.timeouts returns.
    (agent.timeouts.tools as Record<string, number>).stubborn = -1;
    expect(agent.timeouts).toEqual({ toolMs: 20, tools: { stubborn: 20 } });
    const result = await finished(agent.prompt("x"));
    expect(result.stopReason).toBe("completed");
    expect(result.messages[2]).toMatchObject({
      status: "timeout",
      content: 'The tool "stubborn" timed out after 20 ms and was stopped.',
    });
    const [system] = (config.provider as ReturnType<typeof scriptedModel>).prompts[0] ?? [];
    expect(system).toMatchObject({ role: "system", content: expect.stringMatching(/^first agent\n/) });
  });

  it("each setting is read once, by a getter too: the value checked is the value the agent keeps", async () => {
    const reads = new Map<string, number>();
    /** `settings` with `key` a getter that gives `checked` first and `refused` after (reads counted). */
    function changing<T extends object>(settings: T, key: string, checked: unknown, refused: unknown): T {
      return Object.defineProperty(settings, key, {
        enumerable: true,
        get: () => {
          const count = reads.get(key) ?? 0;
          reads.set(key, count + 1);
          return count === 0 ? checked : refused;
        },
      });
    }
    const agent = new Agent(
      changing(
        {
          provider: scriptedModel([[script.text("ok")]]),
          timeouts: changing({}, "totalMs", 60_000, -5),
          limits: changing({}, "maxCycles", 1, 0),
          retry: changing({}, "maxRetries", 0, -1),
          stall: changing({}, "repeatedCalls", 2, 1),
          contextBudget: changing({}, "maxTokens", 5000, -5),
          modelSettings: changing({}, "temperature", 0, "hot"),
        },
        "systemPrompt",
        "checked",
        5,
      ),
    );
    expect(agent.timeouts).toEqual({ totalMs: 60_000 });
    const options = changing(
      { timeouts: changing({}, "stepMs", 60_000, -5) },
      "clientTools",
      "wait",
      "never",
    );
    const result = await finished(agent.prompt("x", options));
    expect(result.stopReason).toBe("completed");
    expect(Object.fromEntries(reads)).toEqual({
      systemPrompt: 1,
      totalMs: 1,
      maxCycles: 1,
      maxRetries: 1,
      repeatedCalls: 1,
      maxTokens: 1,
      temperature: 1,
      stepMs: 1,
      clientTools: 1,
    });
  });

  it("a setting whose getter throws (config, settings group, ToolSet, prompt options, provider) is an InvalidConfigError naming it, with the getter's error as cause", () => {
    const failure = new Error("getter");
    /** An object whose `key` cannot be read (typed as any settings object, the check's to refuse). */
    const unreadable = (key: string): Record<string, never> =>
      Object.defineProperty({}, key, {
        enumerable: true,
        get() {
          throw failure;
        },
      });
    const refusals = [
      [() => new Agent(unreadable("systemPrompt")), "systemPrompt"],
      [() => new Agent({ timeouts: unreadable("totalMs") }), "timeouts.totalMs"],
      [() => new Agent({ timeouts: { tools: unreadable("add") } }), "timeouts.tools.add"],
      [() => new Agent({ limits: unreadable("maxCycles") }), "limits.maxCycles"],
      [() => new Agent({ retry: unreadable("maxRetries") }), "retry.maxRetries"],
      [() => new Agent({ stall: unreadable("repeatedCalls") }), "stall.repeatedCalls"],
      [() => new Agent({ contextBudget: unreadable("maxTokens") }), "contextBudget.maxTokens"],
      [() => new Agent({ modelSettings: unreadable("temperature") }), "modelSettings.temperature"],
      [() => new Agent({ tools: unreadable("t") }), "tools.t"],
      [() => new Agent().prompt("x", unreadable("signal")), "signal"],
      [() => new Agent().prompt("x", { timeouts: unreadable("stepMs") }), "timeouts.stepMs"],
      // Read by the checks, not copied: the provider (messages: the next test; a logger is one
      // without its levels, logging.test.ts).
      [() => new Agent({ provider: unreadable("doStream") as never }), "provider"],
    ] as const;
    for (const [make, setting] of refusals) {
      const error = thrown(make);
      expect(error, setting).toBeInstanceOf(InvalidConfigError);
      expect(error?.message).toContain(`${setting} could not be read: getter.`);
      expect(error?.cause).toBe(failure);
    }
  });

  it("a provider whose modelId, provider or specificationVersion cannot be read (a getter or a proxy that throws) is refused at new Agent(), naming the field, with the error as cause", () => {
    const failure = new Error("getter");
    for (const field of ["modelId", "provider", "specificationVersion"]) {
      const withGetter = Object.defineProperty(scriptedModel([]), field, {
        get() {
          throw failure;
        },
      });
      const proxy = new Proxy(scriptedModel([]), {
        get: (target, key, receiver) => {
          if (key === field) throw failure;
          return Reflect.get(target, key, receiver);
        },
      });
      for (const provider of [withGetter, proxy]) {
        const error = thrown(() => new Agent({ provider }));
        expect(error, field).toBeInstanceOf(InvalidConfigError);
        expect(error?.message).toBe(`Invalid agent config: provider.${field} could not be read: getter.`);
        expect(error?.cause).toBe(failure);
      }
    }
  });

  it("a provider whose modelId is no string is refused at new Agent(), since the history's replies would carry it", () => {
    for (const [modelId, shown] of [
      [42, "42"],
      [{ name: "gpt" }, '{"name":"gpt"}'],
    ] as const) {
      const provider = Object.defineProperty(scriptedModel([]), "modelId", { value: modelId });
      const error = thrown(() => new Agent({ provider }));
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect(error?.message).toBe(`Invalid agent config: provider.modelId must be a string, got ${shown}.`);
    }
  });

  it("refuses a message that cannot be read (a getter or a proxy that throws) as a bad message, naming it", () => {
    const failure = new Error("getter");
    const unreadableMessage = () => ({
      role: "user",
      get content(): string {
        throw failure;
      },
    });
    const agent = new Agent({ provider: scriptedModel([]) });
    const refusals = [
      [() => agent.prompt(unreadableMessage() as never), "Invalid prompt: message"],
      [
        () =>
          agent.prompt(
            new Proxy(
              {},
              {
                ownKeys: () => {
                  throw failure;
                },
              },
            ) as never,
          ),
        "Invalid prompt: message",
      ],
      [
        () =>
          agent.prompt([
            {
              role: "app-note",
              get text(): string {
                throw failure;
              },
            },
          ]),
        "Invalid prompt: message",
      ],
      [() => agent.steer(unreadableMessage() as never), "Invalid steering message: message"],
      [() => agent.followUp(unreadableMessage() as never), "Invalid follow-up message: message"],
      [() => new Agent({ messages: [unreadableMessage() as never] }), "Invalid agent config: messages"],
    ] as const;
    for (const [make, named] of refusals) {
      const error = thrown(make);
      expect(error, named).toBeInstanceOf(InvalidConfigError);
      expect(error?.message).toBe(`${named} could not be read: getter.`);
      expect(error?.cause).toBe(failure);
    }
    expect(agent.messages).toEqual([]);
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
  });

  it("a contextBudget object changed afterwards changes nothing of the agent's budget", async () => {
    const contextBudget = { maxTokens: 5000 };
    const agent = new Agent({ provider: scriptedModel([[script.text("ok")]]), contextBudget });
    // A value new Agent() would refuse: it must not reach the agent's model calls.
    contextBudget.maxTokens = -5;
    expect((await finished(agent.prompt("x"))).stopReason).toBe("completed");
  });
});
