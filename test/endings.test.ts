import "@agent-core/agentic";
import {
  AbortedError,
  Agent,
  type AgentEvent,
  defineTool,
  FatalToolError,
  InvalidConfigError,
  type Orchestrator,
  type RunResult,
  validateTranscript,
} from "@agent-core/core";
import { planExecute } from "@agent-core/plan-execute";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

// Regression tests for the endings adversarial testing broke: each fails without its fix.

const never = () => new Promise<never>(() => {});

/** Every event the agent's listeners heard, in order. */
function listen(agent: Agent): AgentEvent[] {
  const heard: AgentEvent[] = [];
  agent.on("*", (event) => heard.push(event));
  return heard;
}

const toolResults = (result: RunResult) =>
  result.messages.filter((message) => message.role === "toolResult") as {
    toolCallId: string;
    status: string;
  }[];

describe("parallel abort", () => {
  it("keeps a finished call's result and answers each call once", async () => {
    const quick = defineTool({
      name: "quick",
      description: "q",
      inputSchema: z.object({}),
      execute: () => "done",
    });
    const stubborn = defineTool({
      name: "stubborn",
      description: "s",
      inputSchema: z.object({}),
      execute: never,
    });
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("stubborn", {}, { id: "a" }), script.toolCall("quick", {}, { id: "b" })],
      ]),
      tools: [quick, stubborn],
      toolExecution: "parallel",
      limits: { abortGraceMs: 20 },
    });
    const run = agent.prompt("go");
    agent.on("tool_result", (event) => {
      if (event.toolCallId === "b") agent.abort();
    });
    const result = await run.result();
    expect(result.stopReason).toBe("aborted");
    const events = run.events;
    assertEventProtocol(events);
    expect(events.filter((e) => e.type === "tool_call").map((e) => e.toolCallId)).toEqual(["a", "b"]);
    const results = events.filter((e) => e.type === "tool_result");
    expect(results.map((e) => [e.toolCallId, e.status])).toEqual([
      ["b", "ok"],
      ["a", "aborted"],
    ]);
    expect(toolResults(result).map((r) => [r.toolCallId, r.status])).toEqual([
      ["a", "aborted"],
      ["b", "ok"],
    ]);
    expect(validateTranscript(result.messages)).toEqual([]);
  });

  it("answers two identical calls of one reply once each", async () => {
    const slow = defineTool({
      name: "slow",
      description: "s",
      inputSchema: z.object({}),
      execute: never,
    });
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("slow", {}), script.toolCall("slow", {})]]),
      tools: [slow],
      toolExecution: "parallel",
      limits: { abortGraceMs: 10 },
    });
    const run = agent.prompt("go");
    setTimeout(() => agent.abort(), 5);
    const result = await run.result();
    assertEventProtocol(run.events);
    expect(toolResults(result)).toHaveLength(2);
    expect(validateTranscript(result.messages)).toEqual([]);
  });
});

describe("agent_end is the last event anyone sees", () => {
  it("drops the tool_call of a sequential tool still waiting in a parallel batch when the run ends", async () => {
    const stubborn = defineTool({
      name: "stubborn",
      description: "s",
      inputSchema: z.object({}),
      execute: never,
    });
    const serial = defineTool({
      name: "serial",
      description: "s",
      inputSchema: z.object({}),
      sequential: true,
      execute: () => "ran",
    });
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("stubborn", {}), script.toolCall("serial", {})]]),
      tools: [stubborn, serial],
      toolExecution: "parallel",
      limits: { abortGraceMs: 10 },
    });
    const heard = listen(agent);
    const run = agent.prompt("go");
    setTimeout(() => agent.abort(), 5);
    await run.result();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(heard.at(-1)?.type).toBe("agent_end");
    expect(heard.filter((e) => e.type === "agent_end")).toHaveLength(1);
    assertEventProtocol(run.events);
  });

  it("cancels a model call an orchestrator did not await, and drops its output", async () => {
    let cancelled = false;
    const model = scriptedModel([[script.delay(20), script.reasoning("late"), script.text("late")]]);
    const doStream = model.doStream.bind(model);
    model.doStream = async (options) => {
      options.abortSignal?.addEventListener("abort", () => {
        cancelled = true;
      });
      return doStream(options);
    };
    const forgetful: Orchestrator = {
      name: "forgetful",
      async run(ctx) {
        void ctx.decide().catch(() => {});
      },
    };
    const agent = new Agent({ provider: model, orchestrator: forgetful });
    const heard = listen(agent);
    const run = agent.prompt("go");
    const result = await run.result();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(result.stopReason).toBe("completed");
    expect(cancelled).toBe(true);
    expect(heard.at(-1)?.type).toBe("agent_end");
    expect(heard.some((e) => e.type === "text_delta" || e.type === "thinking")).toBe(false);
    expect(run.droppedEvents).toBe(0);
  });
});

describe("a late writer (writing-an-orchestrator.md)", () => {
  it("has its events dropped and counted, and its appends and calls refused with AbortedError", async () => {
    const late: Record<string, unknown> = {};
    const refusal = (call: () => unknown) => {
      try {
        call();
      } catch (error) {
        return error;
      }
    };
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const writer: Orchestrator = {
      name: "late-writer",
      async run(ctx) {
        await new Promise((resolve) => setTimeout(resolve, 50)); // past the abort's grace period
        ctx.emit({ type: "custom", name: "late.note", data: 1 });
        late.append = refusal(() => ctx.messages.append({ role: "user", content: "late", timestamp: 1 }));
        late.decide = await ctx.decide().catch((error: unknown) => error);
        late.steering = await ctx.steering.take();
        wrote();
      },
    };
    const agent = new Agent({
      provider: scriptedModel([]),
      orchestrator: writer,
      limits: { abortGraceMs: 5 },
    });
    const heard = listen(agent);
    const run = agent.prompt("go");
    setTimeout(() => agent.abort(), 5);
    const result = await run.result();
    await written;
    expect(result.stopReason).toBe("aborted");
    expect(heard.some((e) => e.type === "custom")).toBe(false);
    expect(run.droppedEvents).toBe(1);
    expect(late.append).toEqual(new AbortedError("the run has already ended"));
    expect(late.append).toBeInstanceOf(AbortedError);
    expect(late.decide).toBeInstanceOf(AbortedError);
    expect(late.steering).toEqual([]);
    expect(agent.messages.map((m) => m.role)).toEqual(["user"]);
  });
});

describe("abort ends a resumed run", () => {
  /** Two calls; the first needs approval. Once resumed, `hang` picks the hook that never returns. */
  function approvalAgent(hang: "beforeToolCall" | "afterToolCall", extra: { totalMs?: number } = {}) {
    const work = defineTool({
      name: "work",
      description: "w",
      inputSchema: z.object({}),
      execute: () => "ok",
    });
    let resumed = false;
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("work", {}, { id: "w1" }), script.toolCall("work", {}, { id: "w2" })],
        [script.text("fine")],
      ]),
      tools: [work],
      limits: { abortGraceMs: 10 },
      ...(extra.totalMs ? { timeouts: { totalMs: extra.totalMs } } : {}),
      beforeToolCall: ({ call }) => {
        if (!resumed) return call.id === "w1" ? { requireApproval: true } : undefined;
        return hang === "beforeToolCall" ? never() : undefined;
      },
      afterToolCall: () => (resumed && hang === "afterToolCall" ? never() : undefined),
    });
    return {
      agent,
      resume: () => {
        resumed = true;
        return agent.approve("w1");
      },
    };
  }

  for (const hook of ["beforeToolCall", "afterToolCall"] as const) {
    it(`even when ${hook} hangs after approve()`, async () => {
      const { agent, resume } = approvalAgent(hook);
      expect((await agent.prompt("go").result()).stopReason).toBe("awaiting_approval");
      const run = resume();
      expect(run).toBeDefined();
      setTimeout(() => agent.abort(), 5);
      const result = await run?.result();
      expect(result?.stopReason).toBe("aborted");
      expect(validateTranscript(result?.messages ?? [])).toEqual([]);
      expect(agent.busy).toBe(false);
      expect((await agent.prompt("still there?").result()).stopReason).not.toBe("awaiting_approval");
    });
  }

  it("ends a resumed run at its total timeout when a hook hangs", async () => {
    const { agent, resume } = approvalAgent("beforeToolCall", { totalMs: 30 });
    expect((await agent.prompt("go").result()).stopReason).toBe("awaiting_approval");
    const result = await resume()?.result();
    expect(result?.stopReason).toBe("timeout");
    expect(validateTranscript(result?.messages ?? [])).toEqual([]);
  });
});

describe("steering and follow-ups are never lost", () => {
  it("queues steering taken by a parallel batch again when the run is aborted", async () => {
    const slow = defineTool({
      name: "slow",
      description: "s",
      inputSchema: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((resolve) => signal.addEventListener("abort", () => resolve("stopped"))),
    });
    const quick = defineTool({
      name: "quick",
      description: "q",
      inputSchema: z.object({}),
      execute: () => "ok",
    });
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("slow", {}), script.toolCall("quick", {})],
        [script.text("next")],
      ]),
      tools: [slow, quick],
      toolExecution: "parallel",
    });
    agent.on("tool_call", (event) => {
      if (event.toolName === "quick") agent.steer("change of plan");
    });
    agent.on("tool_result", (event) => {
      if (event.toolName === "quick") setTimeout(() => agent.abort(), 1);
    });
    const result = await agent.prompt("go").result();
    expect(result.stopReason).toBe("aborted");
    expect(result.requeued?.map((m) => (m as { content: string }).content)).toEqual(["change of plan"]);
    expect(agent.queued.steering.map((m) => (m as { content: string }).content)).toEqual(["change of plan"]);
    const next = await agent.prompt("again").result();
    expect(next.newMessages.some((m) => (m as { content?: string }).content === "change of plan")).toBe(true);
  });

  it("takeQueued() removes what waits and returns it: the next run does not get it", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("Hi.")]]) });
    agent.steer("steer me");
    agent.followUp("follow me");
    const taken = agent.takeQueued();
    expect(taken.steering.map((m) => (m as { content: string }).content)).toEqual(["steer me"]);
    expect(taken.followUps.map((m) => (m as { content: string }).content)).toEqual(["follow me"]);
    expect(agent.queued).toEqual({ steering: [], followUps: [] });
    const result = await agent.prompt("hello").result();
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("queues again what an async getSteeringMessages returned when the run is aborted", async () => {
    const tool = defineTool({ name: "t", description: "t", inputSchema: z.object({}), execute: () => "ok" });
    let asked = 0;
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("t", {}), script.toolCall("t", { n: 2 })],
        [script.text("done")],
      ]),
      tools: [tool],
      // Asked before the model call (nothing), then after the first tool: a message, and an abort.
      getSteeringMessages: async () => {
        asked++;
        if (asked !== 2) return [];
        agent.abort();
        return ["from the callback"];
      },
    });
    const result = await agent.prompt("go").result();
    expect(result.stopReason).toBe("aborted");
    expect(result.messages.some((m) => (m as { content?: string }).content === "from the callback")).toBe(
      false,
    );
    expect(agent.queued.steering.map((m) => (m as { content: string }).content)).toEqual([
      "from the callback",
    ]);
  });

  it("keeps what steer() and followUp() queued when the callback beside the queue throws or rejects", async () => {
    const down = () => {
      throw new Error("inbox down");
    };
    const rejects = async () => down();
    const cases = [
      { kind: "steering", getSteeringMessages: down },
      { kind: "steering", getSteeringMessages: rejects },
      { kind: "followUps", getFollowUpMessages: down },
      { kind: "followUps", getFollowUpMessages: rejects },
    ] as const;
    for (const { kind, ...callback } of cases) {
      const agent = new Agent({ provider: scriptedModel([[script.text("Hi.")]]), ...callback });
      if (kind === "steering") agent.steer("keep me");
      else agent.followUp("keep me");
      const result = await agent.prompt("go").result();
      expect(result.stopReason, kind).toBe("error");
      expect(result.error?.message, kind).toBe('Orchestrator "agentic" failed: inbox down');
      expect(
        agent.queued[kind].map((m) => (m as { content: string }).content),
        kind,
      ).toEqual(["keep me"]);
    }
  });

  it("takes the answer of a callback that returns a thenable that is no native promise", async () => {
    for (const kind of ["steering", "followUps"] as const) {
      // A hand-written thenable: its `then` calls back and returns nothing.
      const thenable = (answer: string[]) => ({
        // biome-ignore lint/suspicious/noThenProperty: a thenable that is no promise is what is tested.
        then(resolve: (messages: string[]) => void): void {
          resolve(answer);
        },
      });
      let asked = 0;
      const callback = () => thenable(asked++ === 0 ? ["from the thenable"] : []);
      const agent = new Agent({
        provider: scriptedModel([[script.text("Hi.")], [script.text("Hi again.")]]),
        ...(kind === "steering" ? { getSteeringMessages: callback } : { getFollowUpMessages: callback }),
      } as never);
      const result = await agent.prompt("go").result();
      expect(result.stopReason, kind).toBe("completed");
      expect(
        result.messages.filter((m) => (m as { content?: string }).content === "from the thenable"),
        kind,
      ).toHaveLength(1);
    }
  });

  it("keeps what steer() and followUp() queued when the run is aborted while the callback beside the queue hangs", async () => {
    for (const kind of ["steering", "followUps"] as const) {
      const callback = kind === "steering" ? { getSteeringMessages: never } : { getFollowUpMessages: never };
      const agent = new Agent({
        provider: scriptedModel([[script.text("Hi.")]]),
        limits: { abortGraceMs: 5 },
        ...callback,
      });
      if (kind === "steering") agent.steer("keep me");
      else agent.followUp("keep me");
      const run = agent.prompt("go");
      setTimeout(() => run.abort(), 20);
      const result = await run.result();
      expect(result.stopReason, kind).toBe("aborted");
      expect(
        agent.queued[kind].map((m) => (m as { content: string }).content),
        kind,
      ).toEqual(["keep me"]);
    }
  });

  it("refuses a malformed message from a callback before it enters the history or a queue, naming the callback", async () => {
    const message = 'must be a string or an AgentMessage (e.g. { role: "user", content: "…" })';
    const cases = [
      [[42], "getSteeringMessages", `Invalid message from getSteeringMessages: message ${message}, got 42.`],
      [
        [{ role: "user" }],
        "getSteeringMessages",
        "Invalid message from getSteeringMessages: message.content must be a string or an array of text blocks, got undefined.",
      ],
      [
        [null],
        "getFollowUpMessages",
        `Invalid message from getFollowUpMessages: message ${message}, got null.`,
      ],
      [
        "hi",
        "getFollowUpMessages",
        'Invalid getFollowUpMessages result: result must be an array of messages or undefined, got "hi".',
      ],
    ] as const;
    for (const [returned, callback, error] of cases) {
      let asked = 0;
      const agent = new Agent({
        provider: scriptedModel([[script.text("Hi.")], [script.text("Hello again.")]]),
        // Bad once, then nothing: the next run must not meet it again.
        [callback]: () => (asked++ === 0 ? returned : []),
      });
      agent.steer("queued beside it");
      const result = await agent.prompt("go").result();
      expect(result.stopReason, error).toBe("error");
      expect(result.error, error).toBeInstanceOf(InvalidConfigError);
      expect(result.error?.message).toBe(error);
      expect(validateTranscript(result.messages), error).toEqual([]);
      expect(JSON.stringify(result.messages), error).not.toContain(JSON.stringify(returned));
      // What steer() queued beside the steering callback goes back to the queue, unused.
      const { steering, followUps } = agent.takeQueued();
      expect(
        steering.map((m) => (m as { content: string }).content),
        error,
      ).toEqual(callback === "getSteeringMessages" ? ["queued beside it"] : []);
      expect(followUps, error).toEqual([]);
      expect((await agent.prompt("again").result()).stopReason, error).toBe("completed");
    }
  });

  it("does not let the abandoned orchestrator of an aborted run take the next run's follow-up", async () => {
    // Ignores the abort for 30 ms (abandoned after 5), then looks for follow-ups.
    const stubborn: Orchestrator = {
      name: "stubborn",
      async run(ctx) {
        await new Promise((resolve) => setTimeout(resolve, 30));
        await ctx.followUps.take();
      },
    };
    const agent = new Agent({
      provider: scriptedModel([]),
      orchestrator: stubborn,
      limits: { abortGraceMs: 5 },
    });
    const first = agent.prompt("one");
    first.abort();
    expect((await first.result()).stopReason).toBe("aborted");
    agent.followUp("and then?");
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(agent.queued.followUps.map((m) => (m as { content: string }).content)).toEqual(["and then?"]);
  });
});

describe("aborting a queued run", () => {
  it("settles it at once as aborted, and its prompt never reaches the history or the model", async () => {
    const model = scriptedModel([[script.delay(30), script.text("first")], [script.text("third")]]);
    const agent = new Agent({ provider: model });
    const first = agent.prompt("one");
    const queued = agent.prompt("two");
    queued.abort();
    const settled = await Promise.race([
      queued.result(),
      new Promise<"late">((resolve) => setTimeout(() => resolve("late"), 15)),
    ]);
    expect(settled).not.toBe("late");
    expect((settled as RunResult).stopReason).toBe("aborted");
    expect((await first.result()).stopReason).toBe("completed");
    const third = await agent.prompt("three").result();
    const contents = third.messages.map((m) => (m as { content?: unknown }).content);
    expect(contents).not.toContain("two");
    expect(model.doStreamCalls).toHaveLength(2);
    expect(queued.events.map((e) => e.type)).toEqual(["agent_start", "error", "agent_end"]);
  });

  it("a prompt whose signal is already aborted ends the same way on an idle agent: its prompt never reaches the history or the model", async () => {
    const model = scriptedModel([[script.text("answer")]]);
    const agent = new Agent({ provider: model });
    const called = agent.prompt("called off", { signal: AbortSignal.abort("not now") });
    const result = await called.result();
    expect(result).toMatchObject({ stopReason: "aborted", newMessages: [], messages: [] });
    expect(called.events.map((e) => e.type)).toEqual(["agent_start", "error", "agent_end"]);
    const next = await agent.prompt("hello").result();
    expect(next.messages.map((m) => (m as { content?: unknown }).content)).not.toContain("called off");
    expect(model.doStreamCalls).toHaveLength(1);
  });

  it("a prompt that never starts denies none of the calls waiting for approval", async () => {
    const pay = defineTool({
      name: "pay",
      description: "Pays",
      inputSchema: z.object({}),
      needsApproval: true,
      execute: () => "paid",
    });
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("pay", {}, { id: "p" })], [script.text("done")]]),
      tools: [pay],
    });
    expect((await agent.prompt("pay").result()).stopReason).toBe("awaiting_approval");
    await agent.prompt("never mind", { signal: AbortSignal.abort() }).result();
    expect(agent.pendingApprovals.map((call) => call.toolCallId)).toEqual(["p"]);
    expect(await agent.approve("p")?.result()).toMatchObject({ stopReason: "completed", text: "done" });
  });
});

describe("repeated tool-call ids", () => {
  it("gives a repeated id a fresh one, says so in tool_call, and keeps the history valid", async () => {
    const echo = defineTool({
      name: "echo",
      description: "e",
      inputSchema: z.object({ n: z.number() }),
      execute: ({ n }) => n,
    });
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("echo", { n: 1 }, { id: "same" }),
          script.toolCall("echo", { n: 2 }, { id: "same" }),
        ],
        [script.toolCall("echo", { n: 3 }, { id: "same" })],
        [script.text("ok")],
      ]),
      tools: [echo],
    });
    const run = agent.prompt("go");
    const result = await run.result();
    expect(result.stopReason).toBe("completed");
    const calls = run.events.filter((e) => e.type === "tool_call");
    expect(calls.map((e) => [e.toolCallId, e.originalToolCallId])).toEqual([
      ["same", undefined],
      ["same_2", "same"],
      ["same_3", "same"],
    ]);
    expect(validateTranscript(result.messages)).toEqual([]);
    assertEventProtocol(run.events);
  });
});

describe("empty tool-call ids", () => {
  it("gives an empty id a fresh one, as a repeated id gets, so no empty id reaches the history or the provider", async () => {
    const echo = defineTool({
      name: "echo",
      description: "e",
      inputSchema: z.object({ n: z.number() }),
      execute: ({ n }) => n,
    });
    const provider = scriptedModel([
      [script.toolCall("echo", { n: 1 }, { id: "" }), script.toolCall("echo", { n: 2 }, { id: "" })],
      [script.toolCall("echo", { n: 3 }, { id: "" })],
      [script.text("ok")],
    ]);
    const agent = new Agent({ provider, tools: [echo] });
    const run = agent.prompt("go");
    const result = await run.result();
    expect(result.stopReason).toBe("completed");
    const calls = run.events.filter((e) => e.type === "tool_call");
    expect(calls.map((e) => [e.toolCallId, e.originalToolCallId])).toEqual([
      ["call_1", ""],
      ["call_2", ""],
      ["call_3", ""],
    ]);
    expect(validateTranscript(result.messages)).toEqual([]);
    const sentIds = (provider.prompts[2] ?? []).flatMap((message) =>
      Array.isArray(message.content)
        ? message.content.flatMap((part) => ("toolCallId" in part ? [part.toolCallId] : []))
        : [],
    );
    expect(sentIds).toEqual(["call_1", "call_2", "call_1", "call_2", "call_3", "call_3"]);
    assertEventProtocol(run.events);
  });
});

describe("ts", () => {
  it("is the emit time and never goes backwards against seq", async () => {
    const hooked = defineTool({
      name: "hooked",
      description: "h",
      inputSchema: z.object({}),
      execute: () => "h",
    });
    const slow = defineTool({
      name: "slow",
      description: "s",
      inputSchema: z.object({}),
      execute: () => new Promise((resolve) => setTimeout(() => resolve("slow"), 10)),
    });
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("hooked", {}), script.toolCall("slow", {})],
        [script.text("ok")],
      ]),
      tools: [hooked, slow],
      toolExecution: "parallel",
      // The hooked call's result is made at once and published 20 ms later, after slow's.
      afterToolCall: ({ call }) =>
        call.name === "hooked"
          ? new Promise((resolve) => setTimeout(() => resolve(undefined), 20))
          : undefined,
    });
    const run = agent.prompt("go");
    await run.result();
    const ts = run.events.map((e) => e.ts);
    expect(ts).toEqual([...ts].sort((a, b) => a - b));
    const results = run.events.filter((e) => e.type === "tool_result").map((e) => e.toolName);
    expect(results).toEqual(["slow", "hooked"]);
  });
});

describe("plan-execute after abort", () => {
  it("ends every started step, even one whose tool ignores its signal", async () => {
    const stubborn = defineTool({
      name: "stubborn",
      description: "s",
      inputSchema: z.object({}),
      execute: never,
    });
    const plan = JSON.stringify({ steps: [{ id: "s1", tool: "stubborn", args: {} }] });
    const agent = new Agent({
      provider: scriptedModel([[script.text(plan)]]),
      tools: [stubborn],
      orchestrator: planExecute(),
      limits: { abortGraceMs: 10 },
    });
    const run = agent.prompt("go");
    agent.on("plan_step_start", () => setTimeout(() => agent.abort(), 1));
    const result = await run.result();
    expect(result.stopReason).toBe("aborted");
    const types = run.events.map((e) => e.type);
    expect(types.filter((t) => t === "plan_step_start")).toHaveLength(1);
    expect(types.filter((t) => t === "plan_step_end")).toHaveLength(1);
    expect(types.indexOf("plan_step_end")).toBeLessThan(types.indexOf("agent_end"));
  });

  it("reports its planning call as a model decision: steering_mode steer with the plan's steps", async () => {
    const echo = defineTool({
      name: "echo",
      description: "e",
      inputSchema: z.object({}),
      execute: () => "hi",
    });
    const plan = JSON.stringify({
      steps: [
        { id: "a", tool: "echo", args: {} },
        { id: "b", tool: "echo", args: {} },
      ],
    });
    const run = new Agent({
      provider: scriptedModel([[script.text(plan)], [script.text("answer")]]),
      tools: [echo],
      orchestrator: planExecute(),
    }).prompt("go");
    await run.result();
    const modes = run.events.filter((e) => e.type === "steering_mode").map((e) => [e.mode, e.queueSize]);
    expect(modes).toEqual([
      ["steer", 2],
      ["respond", 0],
    ]);
  });
});

describe("bad tools", () => {
  it("turns any thrown value into a readable error result, and the run goes on", async () => {
    const throwers = [undefined, null, Symbol("s"), () => 1].map((value, n) =>
      defineTool({
        name: `throws${n}`,
        description: "t",
        inputSchema: z.object({}),
        execute: () => Promise.reject(value),
      }),
    );
    const agent = new Agent({
      provider: scriptedModel([throwers.map((tool) => script.toolCall(tool.name, {})), [script.text("ok")]]),
      tools: throwers,
    });
    const result = await agent.prompt("go").result();
    expect(result.stopReason).toBe("completed");
    const contents = toolResults(result).map((r) => (r as unknown as { content: unknown }).content);
    expect(
      contents.every((content) => typeof content === "string" && content.startsWith("Tool failed: ")),
    ).toBe(true);
    expect(contents[0]).toBe("Tool failed: undefined");
    expect(validateTranscript(result.messages)).toEqual([]);
  });

  it("reports a sibling stopped by a FatalToolError as aborted, even when it rejects with the abort reason", async () => {
    const fatal = defineTool({
      name: "fatal",
      description: "f",
      inputSchema: z.object({}),
      execute: () => new Promise((_, reject) => setTimeout(() => reject(new FatalToolError("disk gone")), 5)),
    });
    const sibling = defineTool({
      name: "sibling",
      description: "s",
      inputSchema: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    const run = new Agent({
      provider: scriptedModel([
        [script.toolCall("fatal", {}), script.toolCall("sibling", {})],
        [script.text("ok")],
      ]),
      tools: [fatal, sibling],
      toolExecution: "parallel",
    }).prompt("go");
    await run.result();
    const statuses = Object.fromEntries(
      run.events.filter((e) => e.type === "tool_result").map((e) => [e.toolName, e.status]),
    );
    expect(statuses).toEqual({ fatal: "error", sibling: "aborted" });
  });
});

describe("stall detection stops only what goes in circles", () => {
  const sendEmail = defineTool({
    name: "send_email",
    description: "Sends an email",
    inputSchema: z.object({ to: z.string() }),
    execute: () => "sent",
  });

  it("runs five calls of one reply that all return the same result", async () => {
    const people = ["ann", "bob", "cy", "dee", "eve"];
    const agent = new Agent({
      provider: scriptedModel([
        people.map((to) => script.toolCall("send_email", { to })),
        [script.text("All sent.")],
      ]),
      tools: [sendEmail],
    });
    const result = await agent.prompt("Email the team").result();
    expect(result.stopReason).toBe("completed");
    expect(toolResults(result).map((r) => r.status)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
  });

  it("lets the model see a nudge before it ends a run as stalled", async () => {
    const same = [script.toolCall("send_email", { to: "ann" })];
    const model = scriptedModel([same, same, same, [script.text("unreached")]]);
    const agent = new Agent({ provider: model, tools: [sendEmail] });
    const run = agent.prompt("Email Ann");
    const result = await run.result();
    expect(result.stopReason).toBe("stalled");
    const statuses = run.events.filter((e) => e.type === "tool_result").map((e) => e.status);
    expect(statuses).toEqual(["ok", "skipped", "error"]);
    // The nudge was in the prompt of the model call that repeated the call once more.
    expect(JSON.stringify(model.prompts[2])).toContain("You already called");
  });

  it("starts the window again at a follow-up: the same question may be asked again", async () => {
    const lookup = defineTool({
      name: "lookup",
      description: "l",
      inputSchema: z.object({ q: z.string() }),
      execute: ({ q }) => `answer to ${q}`,
    });
    const call = [script.toolCall("lookup", { q: "15*3" })];
    const agent = new Agent({
      provider: scriptedModel([call, [script.text("45")], call, [script.text("45 again")]]),
      tools: [lookup],
    });
    agent.followUp("And 15*3 once more?");
    const result = await agent.prompt("What is 15*3?").result();
    expect(result.stopReason).toBe("completed");
    expect(toolResults(result).map((r) => r.status)).toEqual(["ok", "ok"]);
  });
});

describe("bad settings", () => {
  it("are refused at new Agent() and at prompt(), naming the field", () => {
    const provider = scriptedModel([[script.text("ok")]]);
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { timeouts: { toolMs: -5 } },
        /timeouts\.toolMs must be a number > 0 and <= 2147483647 \(milliseconds\), got -5/,
      ],
      [{ timeouts: { totalMs: Number.NaN } }, /timeouts\.totalMs must be .*, got NaN/],
      [{ timeouts: { stepMs: 0 } }, /timeouts\.stepMs must be a number > 0/],
      [{ maxConcurrency: 0 }, /maxConcurrency must be a whole number >= 1, got 0/],
    ];
    for (const [config, message] of cases) {
      expect(() => new Agent({ provider, ...config })).toThrow(InvalidConfigError);
      expect(() => new Agent({ provider, ...config })).toThrow(message);
    }
    const agent = new Agent({ provider });
    expect(() => agent.prompt("x", { timeouts: { chunkMs: -1 } })).toThrow(
      /timeouts\.chunkMs must be a number > 0/,
    );
    expect(agent.busy).toBe(false);
  });
});
