import { Agent, defineTool, StructuredOutputError, type ToolCall } from "@agent-core/core";
import { eventsOf, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { orchestrator, runToEnd, sleep } from "./fixtures.js";

// The services any orchestrator builds on, driven through small inline orchestrators.

describe("ctx.generateObject", () => {
  const verdict = z.object({ ok: z.boolean(), reasons: z.array(z.string()) });

  it("asks for JSON with the schema, extracts it from prose, and leaves the history alone", async () => {
    const model = scriptedModel([
      [script.reasoning("judging"), script.text('Verdict:\n```json\n{"ok":true,"reasons":["fine"]}\n```')],
    ]);
    let object: unknown;
    const agent = new Agent({
      provider: model,
      orchestrator: orchestrator(async (ctx) => {
        ({ object } = await ctx.generateObject(verdict, { system: "Judge.", name: "verdict" }));
      }),
    });
    const { events, result } = await runToEnd(agent, "go");
    expect(object).toEqual({ ok: true, reasons: ["fine"] });
    expect(model.doStreamCalls[0]?.responseFormat).toMatchObject({
      type: "json",
      name: "verdict",
      schema: { type: "object", required: ["ok", "reasons"] },
    });
    expect(model.doStreamCalls[0]?.tools).toBeUndefined();
    expect(eventsOf(events, "thinking").map((e) => e.text)).toEqual(["judging"]);
    expect(eventsOf(events, "text_delta")).toEqual([]);
    expect(result.messages.map((m) => m.role)).toEqual(["user"]);
    expect(result.usage.totalTokens).toBe(15);
  });

  it("sends an invalid reply back with what was wrong, then succeeds", async () => {
    const model = scriptedModel([[script.text('{"ok":"yes"}')], [script.text('{"ok":false,"reasons":[]}')]]);
    let object: unknown;
    const agent = new Agent({
      provider: model,
      orchestrator: orchestrator(async (ctx) => {
        ({ object } = await ctx.generateObject(verdict));
      }),
    });
    await runToEnd(agent, "go");
    expect(object).toEqual({ ok: false, reasons: [] });
    const retry = model.prompts[1] ?? [];
    expect(retry.slice(-2)).toEqual([
      { role: "assistant", content: [{ type: "text", text: '{"ok":"yes"}' }] },
      {
        role: "user",
        content: [
          {
            type: "text",
            text: expect.stringMatching(
              /^The JSON does not match the schema: ok: .*reasons: .* Reply with only the corrected JSON\.$/,
            ),
          },
        ],
      },
    ]);
  });

  it("fails with a StructuredOutputError after its attempts, as an error event", async () => {
    const model = scriptedModel([
      [script.text("I will use the calculator.")],
      [script.text("Still no JSON")],
    ]);
    const agent = new Agent({
      provider: model,
      orchestrator: orchestrator(async (ctx) => {
        await ctx.generateObject(verdict);
      }),
    });
    const { events, result } = await runToEnd(agent, "go");
    expect(result.error).toBeInstanceOf(StructuredOutputError);
    expect(eventsOf(events, "error")[0]).toMatchObject({
      code: "invalid_structured_output",
      message:
        "The model did not return a valid object after 2 attempts: Not valid JSON: the reply contains no JSON value.",
    });
  });

  it("counts against maxCycles", async () => {
    const model = scriptedModel([[script.text("no")], [script.text("no")]]);
    const agent = new Agent({
      provider: model,
      limits: { maxCycles: 1 },
      orchestrator: orchestrator(async (ctx) => {
        await ctx.generateObject(verdict);
      }),
    });
    expect((await runToEnd(agent, "go")).result.stopReason).toBe("max_cycles");
  });
});

describe("ctx.decide", () => {
  it("adds per-call messages after the history without storing them, and counts cycles", async () => {
    const model = scriptedModel([[script.text("draft")], [script.text("better")]]);
    const seen: number[] = [];
    const agent = new Agent({
      provider: model,
      orchestrator: orchestrator(async (ctx) => {
        seen.push(ctx.cycles);
        await ctx.decide();
        seen.push(ctx.cycles);
        await ctx.decide({ messages: [{ role: "user", content: "Critique: too long." }] });
        seen.push(ctx.cycles);
      }),
    });
    const { result } = await runToEnd(agent, "go");
    expect(seen).toEqual([0, 1, 2]);
    expect(model.prompts[1]?.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(JSON.stringify(model.prompts[1]?.at(-1))).toContain("Critique: too long.");
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
  });
});

describe("ctx.executeTools with concurrency", () => {
  const sleepTool = defineTool({
    name: "sleep",
    description: "waits",
    inputSchema: z.object({ ms: z.number() }),
    execute: async ({ ms }) => {
      await sleep(ms);
      return ms;
    },
  });
  const calls: ToolCall[] = [
    // Far apart, so that a loaded machine keeps their order of completion: b, c, a.
    { id: "a", name: "sleep", args: { ms: 200 } },
    { id: "b", name: "sleep", args: { ms: 5 } },
    { id: "c", name: "sleep", args: { ms: 80 } },
  ];
  const callMessage = {
    role: "assistant" as const,
    content: calls.map((c) => ({ type: "toolCall" as const, id: c.id, name: c.name, args: c.args })),
  };

  it("runs calls at once: live events in completion order, history in call order, hooks around each", async () => {
    const hooks: string[] = [];
    const agent = new Agent({
      tools: [sleepTool],
      orchestrator: orchestrator(async (ctx) => {
        ctx.messages.append(callMessage);
        await ctx.executeTools(calls, {
          concurrency: 3,
          beforeEach: (call) => hooks.push(`before ${call.id}`),
          afterEach: (call, result) => hooks.push(`after ${call.id} ${result.status}`),
        });
      }),
    });
    const { events, result } = await runToEnd(agent, "go");
    // All three started before the first ended (the hooks below): they ran at once.
    expect(eventsOf(events, "tool_call").map((e) => e.toolCallId)).toEqual(["a", "b", "c"]);
    expect(eventsOf(events, "tool_result").map((e) => e.toolCallId)).toEqual(["b", "c", "a"]);
    expect(hooks).toEqual(["before a", "before b", "before c", "after b ok", "after c ok", "after a ok"]);
    expect(result.messages.slice(2).map((m) => (m as { toolCallId: string }).toolCallId)).toEqual([
      "a",
      "b",
      "c",
    ]);
  });

  it("bounds the number of calls in flight", async () => {
    let inFlight = 0;
    let peak = 0;
    const counted = defineTool({
      name: "sleep",
      description: "counts",
      inputSchema: z.object({ ms: z.number() }),
      execute: async ({ ms }) => {
        peak = Math.max(peak, ++inFlight);
        await sleep(ms);
        inFlight--;
        return ms;
      },
    });
    const agent = new Agent({
      tools: [counted],
      orchestrator: orchestrator(async (ctx) => {
        ctx.messages.append(callMessage);
        await ctx.executeTools(calls, { concurrency: 2 });
      }),
    });
    await runToEnd(agent, "go");
    expect(peak).toBe(2);
  });

  it("lets running calls finish and skips the queued ones when steering arrives", async () => {
    let agent: Agent | undefined;
    const steerer = defineTool({
      name: "sleep",
      description: "steers on the short call",
      inputSchema: z.object({ ms: z.number() }),
      execute: async ({ ms }) => {
        if (ms === 5) agent?.steer("stop that");
        await sleep(ms);
        return ms;
      },
    });
    const withFourth = {
      ...callMessage,
      content: [
        ...callMessage.content,
        { type: "toolCall" as const, id: "d", name: "sleep", args: { ms: 1 } },
      ],
    };
    agent = new Agent({
      tools: [steerer],
      orchestrator: orchestrator(async (ctx) => {
        ctx.messages.append(withFourth);
        await ctx.executeTools([...calls, { id: "d", name: "sleep", args: { ms: 1 } }], { concurrency: 2 });
      }),
    });
    const { events, result } = await runToEnd(agent, "go");
    expect(eventsOf(events, "tool_result").map((e) => [e.toolCallId, e.status])).toEqual([
      ["b", "ok"],
      ["c", "skipped"],
      ["d", "skipped"],
      ["a", "ok"],
    ]);
    expect(result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "toolResult",
      "toolResult",
      "user",
    ]);
  });
});
