import "@agent-core/agentic";
import {
  Agent,
  type AgentEvent,
  defineTool,
  InvalidConfigError,
  type Orchestrator,
  type RunContext,
  type ToolCall,
  type ToolResultMessage,
  validateTranscript,
} from "@agent-core/core";
import { planExecute } from "@agent-core/plan-execute";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

// `Orchestrator.resume`: a loop that keeps state across a suspended batch, and plan-execute on it.

const ran: string[] = [];
const pay = defineTool({
  name: "pay",
  description: "Pays.",
  inputSchema: z.object({ to: z.string() }),
  needsApproval: true,
  execute: ({ to }) => {
    ran.push(`pay ${to}`);
    return `paid ${to}`;
  },
});
const note = defineTool({
  name: "note",
  description: "Notes.",
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }) => {
    ran.push(`note ${text}`);
    return `noted ${text}`;
  },
});
const locate = defineTool({
  name: "locate",
  description: "Runs in the browser.",
  inputSchema: z.object({}),
  execution: "client",
});

function listen(agent: Agent): AgentEvent[] {
  const heard: AgentEvent[] = [];
  agent.on("*", (event) => heard.push(event));
  return heard;
}

/** An agent of `pay` and `note` under `orchestrator`, its model answering "done" each time. */
function agentOf(orchestrator: Orchestrator, answers = 1): Agent {
  const replies = Array.from({ length: answers }, () => [script.text("done")]);
  return new Agent({ provider: scriptedModel(replies), tools: [pay, note], orchestrator });
}

/** The history's tool results, as [call id, status]. */
const answered = (agent: Agent) =>
  agent.messages
    .filter((message): message is ToolResultMessage => message.role === "toolResult")
    .map((message) => [message.toolCallId, message.status]);

/**
 * Its first run appends two calls, one of which waits for approval; a later run only answers. Its
 * state across runs: how many batches ran, and how many runs it saw.
 */
class CountingLoop implements Orchestrator {
  readonly name = "counting";
  readonly resumed: (readonly string[])[] = [];
  #batches = 0;
  #runs = 0;
  readonly #calls: ToolCall[] = [
    { id: "c1", name: "pay", args: { to: "ann" } },
    { id: "c2", name: "note", args: { text: "x" } },
  ];
  constructor(private readonly resumes: "run them" | "leave them" | "none" = "run them") {
    if (resumes === "none") (this as { resume?: unknown }).resume = undefined;
  }

  async run(ctx: RunContext): Promise<void> {
    ctx.startTurn();
    if (this.#runs++ > 0) {
      ctx.endTurn((await ctx.decide({ tools: false })).message);
      return;
    }
    ctx.messages.append({
      role: "assistant",
      content: this.#calls.map((call) => ({ type: "toolCall", ...call })),
      stopReason: "toolUse",
      timestamp: 0,
    });
    await this.#batch(ctx, this.#calls);
  }

  async resume(ctx: RunContext, calls: readonly ToolCall[]): Promise<void> {
    this.resumed.push(calls.map((call) => call.id));
    ctx.startTurn();
    if (this.resumes === "run them") await this.#batch(ctx, calls);
    else ctx.endTurn((await ctx.decide({ tools: false })).message);
  }

  async #batch(ctx: RunContext, calls: readonly ToolCall[]): Promise<void> {
    await ctx.executeTools(calls, {
      beforeEach: (call) => ctx.emit({ type: "custom", name: `before ${call.id}` }),
    });
    this.#batches++;
    const decision = await ctx.decide({ tools: false });
    ctx.endTurn(decision.message);
    ctx.emit({ type: "custom", name: `batches ${this.#batches}` });
  }
}

describe("Orchestrator.resume", () => {
  it("is called with the suspended calls instead of run; its executeTools takes the decisions, with its own hooks", async () => {
    ran.length = 0;
    const loop = new CountingLoop();
    const agent = agentOf(loop);
    const first = await agent.prompt("go").result();
    expect(first.stopReason).toBe("awaiting_approval");
    expect(ran).toEqual([]);
    const heard = listen(agent);
    const result = await agent.approve("c1")?.result();
    expect(result?.stopReason).toBe("completed");
    expect(loop.resumed).toEqual([["c1", "c2"]]);
    expect(ran).toEqual(["pay ann", "note x"]);
    // Its own hooks ran around the resumed calls, and its state (one batch) carried over.
    const names = heard
      .filter((event) => event.type === "custom")
      .map((event) => (event as { name: string }).name);
    expect(names).toEqual(["before c1", "before c2", "batches 1"]);
    assertEventProtocol(heard);
    expect(validateTranscript(agent.messages)).toEqual([]);
  });

  it("takes a denial too, as the run's own resume would", async () => {
    ran.length = 0;
    const loop = new CountingLoop();
    const agent = agentOf(loop);
    await agent.prompt("go").result();
    const result = await agent.deny("c1", "too much")?.result();
    expect(result?.stopReason).toBe("completed");
    expect(ran).toEqual(["note x"]);
    expect(answered(agent)).toEqual([
      ["c1", "denied"],
      ["c2", "ok"],
    ]);
  });

  it("answers the calls a resume left unrun when it calls the model instead, and the history stays valid", async () => {
    ran.length = 0;
    const loop = new CountingLoop("leave them");
    const agent = agentOf(loop);
    await agent.prompt("go").result();
    const result = await agent.approve("c1")?.result();
    expect(result?.stopReason).toBe("completed");
    expect(ran).toEqual([]);
    expect(validateTranscript(agent.messages)).toEqual([]);
    expect(answered(agent).map(([, status]) => status)).toEqual(["error", "error"]);
  });

  it("is not called when a new prompt goes on past the batch: the run resumes it and calls run", async () => {
    const loop = new CountingLoop();
    const agent = agentOf(loop, 2);
    await agent.prompt("go").result();
    const next = await agent.prompt("something else").result();
    expect(loop.resumed).toEqual([]);
    expect(next.stopReason).toBe("completed");
    // The run resumed the batch itself (denied: not approved before the conversation went on).
    expect(answered(agent)).toEqual([
      ["c1", "denied"],
      ["c2", "ok"],
    ]);
  });

  it("without resume, the run runs the batch and then calls run (the loop starts over)", async () => {
    ran.length = 0;
    const loop = new CountingLoop("none");
    const agent = agentOf(loop);
    await agent.prompt("go").result();
    const heard = listen(agent);
    const result = await agent.approve("c1")?.result();
    expect(result?.stopReason).toBe("completed");
    expect(ran).toEqual(["pay ann", "note x"]);
    // The run's own resume: no hook of the loop ran around the calls.
    expect(heard.filter((event) => event.type === "custom")).toEqual([]);
  });

  it("runs the resumed batch whole: steering sent while it waited skips no approved call, and reaches the next model call", async () => {
    ran.length = 0;
    const loop: Orchestrator = {
      name: "decide-then-run",
      async run(ctx) {
        const decision = await ctx.decide();
        if (decision.mode === "steer") await ctx.executeTools(decision.toolCalls);
      },
      async resume(ctx, calls) {
        await ctx.executeTools(calls);
        await ctx.decide({ tools: false });
      },
    };
    const model = scriptedModel([
      [
        script.toolCall("pay", { to: "ann" }, { id: "c1" }),
        script.toolCall("pay", { to: "bob" }, { id: "c2" }),
      ],
      [script.text("paid both, and thanks")],
    ]);
    const agent = new Agent({ provider: model, tools: [pay], orchestrator: loop });
    await agent.prompt("pay ann and bob").result();
    agent.steer("and say thanks");
    agent.approve("c1");
    const resumed = await agent.approve("c2")?.result();
    expect(resumed?.stopReason).toBe("completed");
    expect(ran).toEqual(["pay ann", "pay bob"]);
    expect(answered(agent)).toEqual([
      ["c1", "ok"],
      ["c2", "ok"],
    ]);
    expect(JSON.stringify(model.prompts[1])).toContain("and say thanks");
    expect(validateTranscript(agent.messages)).toEqual([]);
  });

  it("refuses an orchestrator whose resume is not a method", () => {
    expect(
      () => new Agent({ orchestrator: { name: "bad", run: async () => {}, resume: "later" } as never }),
    ).toThrow(InvalidConfigError);
  });

  it("an error thrown by resume ends the run as an error, with every call answered", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.text("done")]]),
      tools: [pay, note],
      orchestrator: {
        name: "throws",
        async run(ctx) {
          ctx.startTurn();
          ctx.messages.append({
            role: "assistant",
            content: [{ type: "toolCall", id: "c1", name: "pay", args: { to: "bo" } }],
            stopReason: "toolUse",
            timestamp: 0,
          });
          await ctx.executeTools([{ id: "c1", name: "pay", args: { to: "bo" } }]);
        },
        resume() {
          throw new Error("cannot resume");
        },
      },
    });
    expect((await agent.prompt("go").result()).stopReason).toBe("awaiting_approval");
    const result = await agent.approve("c1")?.result();
    expect(result?.stopReason).toBe("error");
    expect(result?.error?.message).toContain("cannot resume");
    expect(validateTranscript(agent.messages)).toEqual([]);
  });
});

describe("plan-execute across a suspended wave", () => {
  const plan = (steps: unknown[]) => [script.text(JSON.stringify({ steps }))];
  const steps = [
    { id: "a", tool: "pay", args: { to: "ann" } },
    { id: "b", tool: "note", args: { text: "b" } },
    { id: "c", tool: "note", args: { text: { $ref: "steps.a.result" } } },
  ];

  it("after an approval, runs the waiting wave with its step events, then the rest of the plan, without planning again", async () => {
    ran.length = 0;
    const model = scriptedModel([plan(steps), [script.text("all done")]]);
    const agent = new Agent({ provider: model, tools: [pay, note], orchestrator: planExecute() });
    const heard = listen(agent);
    const first = await agent.prompt("pay ann and note it").result();
    expect(first.stopReason).toBe("awaiting_approval");
    const resumed = await agent.approve(first.pendingApprovals?.[0]?.toolCallId as string)?.result();
    expect(resumed?.stopReason).toBe("completed");
    expect(resumed?.text).toBe("all done");
    expect(ran).toEqual(["pay ann", "note b", "note paid ann"]);
    // Two model calls in all: the plan and the answer.
    expect(model.doStreamCalls).toHaveLength(2);
    const second = heard.filter((event) => event.runId === resumed?.runId);
    const order = second
      .filter((event) => /^(plan_step|tool_)/.test(event.type))
      .map((event) => `${event.type} ${"index" in event ? event.index : ""}`.trim());
    expect(order).toEqual([
      "plan_step_start 0",
      "tool_call",
      "tool_result",
      "plan_step_end 0",
      "plan_step_start 1",
      "tool_call",
      "tool_result",
      "plan_step_end 1",
      "plan_step_start 2",
      "tool_call",
      "tool_result",
      "plan_step_end 2",
    ]);
    expect(second.filter((event) => event.type === "plan_created")).toEqual([]);
    assertEventProtocol(heard.filter((event) => event.runId === first.runId));
    assertEventProtocol(second);
    expect(validateTranscript(agent.messages)).toEqual([]);
  });

  it("runs the waiting wave inside the resumed run's own turn (events.md, rule 4), where the default resumption runs it before", async () => {
    const turnAndCalls = (events: AgentEvent[]) =>
      events.filter((event) => event.type === "turn_start" || event.type === "tool_call").map((e) => e.type);
    const resumedEvents = async (agent: Agent) => {
      const first = await agent.prompt("pay ann").result();
      const heard = listen(agent);
      const resumed = await agent.approve(first.pendingApprovals?.[0]?.toolCallId as string)?.result();
      expect(resumed?.stopReason).toBe("completed");
      return heard.filter((event) => event.runId === resumed?.runId);
    };
    const planned = new Agent({
      provider: scriptedModel([plan([steps[0]]), [script.text("paid")]]),
      tools: [pay, note],
      orchestrator: planExecute(),
    });
    expect(turnAndCalls(await resumedEvents(planned))).toEqual(["turn_start", "tool_call"]);
    const agentic = new Agent({
      provider: scriptedModel([[script.toolCall("pay", { to: "ann" })], [script.text("paid")]]),
      tools: [pay, note],
    });
    expect(turnAndCalls(await resumedEvents(agentic))).toEqual(["tool_call", "turn_start"]);
  });

  it("after a client tool's result (clientTools: suspend), goes on with the plan that uses it", async () => {
    ran.length = 0;
    const model = scriptedModel([
      plan([
        { id: "where", tool: "locate", args: {} },
        { id: "say", tool: "note", args: { text: { $ref: "steps.where.result" } } },
      ]),
      [script.text("noted")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [locate, note],
      orchestrator: planExecute(),
      clientTools: "suspend",
    });
    const first = await agent.prompt("where am I").result();
    expect(first.stopReason).toBe("awaiting_client_tool");
    const call = first.pendingClientTools?.[0]?.toolCallId as string;
    const resumed = await agent.submitToolResult(call, { result: "Lisbon" })?.result();
    expect(resumed?.stopReason).toBe("completed");
    expect(ran).toEqual(["note Lisbon"]);
    expect(model.doStreamCalls).toHaveLength(2);
  });

  it("after a denial, revises the rest of the plan, as after any failed step", async () => {
    ran.length = 0;
    const model = scriptedModel([
      plan(steps),
      plan([{ id: "d", tool: "note", args: { text: "instead" } }]),
      [script.text("did what I could")],
    ]);
    const agent = new Agent({ provider: model, tools: [pay, note], orchestrator: planExecute() });
    const heard = listen(agent);
    const first = await agent.prompt("pay ann").result();
    const resumed = await agent.deny(first.pendingApprovals?.[0]?.toolCallId as string, "no")?.result();
    expect(resumed?.stopReason).toBe("completed");
    expect(ran).toEqual(["note b", "note instead"]);
    const ends = heard.filter((event) => event.type === "plan_step_end");
    expect(ends[0]).toMatchObject({ tool: "pay", index: 0 });
    expect("error" in (ends[0] as object)).toBe(true);
    expect(heard.filter((event) => event.type === "plan_created")).toHaveLength(2);
  });

  it("runs the whole approved wave when steering came while it waited, then revises the rest of the plan for it", async () => {
    ran.length = 0;
    const model = scriptedModel([
      plan([
        { id: "a", tool: "pay", args: { to: "ann" } },
        { id: "b", tool: "pay", args: { to: "bob" } },
      ]),
      plan([{ id: "t", tool: "note", args: { text: "thanks" } }]),
      [script.text("paid both")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [pay, note],
      orchestrator: planExecute({ maxConcurrency: 1 }),
    });
    const first = await agent.prompt("pay ann and bob").result();
    const [a, b] = first.pendingApprovals ?? [];
    agent.steer("and note thanks");
    agent.approve(a?.toolCallId as string);
    const resumed = await agent.approve(b?.toolCallId as string)?.result();
    expect(resumed?.stopReason).toBe("completed");
    expect(ran).toEqual(["pay ann", "pay bob", "note thanks"]);
    expect(JSON.stringify(model.prompts[1]?.at(-1))).toContain("The user sent new instructions");
    expect(validateTranscript(agent.messages)).toEqual([]);
  });

  it("drops the waiting plan when a new prompt goes on instead, and plans that prompt", async () => {
    ran.length = 0;
    const model = scriptedModel([
      plan(steps),
      plan([{ id: "n", tool: "note", args: { text: "new" } }]),
      [script.text("new done")],
    ]);
    const agent = new Agent({ provider: model, tools: [pay, note], orchestrator: planExecute() });
    await agent.prompt("pay ann").result();
    const next = await agent.prompt("just note").result();
    expect(next.stopReason).toBe("completed");
    expect(ran).toEqual(["note b", "note new"]);
    expect(validateTranscript(agent.messages)).toEqual([]);
  });
});
