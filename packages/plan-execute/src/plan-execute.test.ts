import "@agent-core/agentic";
import {
  Agent,
  AgentConfigError,
  type AgentEvent,
  defineTool,
  ID_SOURCE,
  InvalidConfigError,
  NoProviderError,
  type ToolResultMessage,
} from "@agent-core/core";
import {
  assertEventProtocol,
  assertValidTranscript,
  collectEvents,
  eventsOf,
  eventTypes,
  type ScriptStep,
  script,
  scriptedModel,
} from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PlanError, planExecute } from "./index.js";

const calculator = defineTool({
  name: "calculator",
  description: "Evaluates a simple product or sum",
  inputSchema: z.object({ expression: z.string() }),
  execute: ({ expression }) => {
    const [a, op, b] = expression.split(/([*+])/).map((part) => part.trim());
    return { result: op === "*" ? Number(a) * Number(b) : Number(a) + Number(b) };
  },
});
const add = defineTool({
  name: "add",
  description: "Adds two numbers",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => {
    await new Promise((resolve) => setTimeout(resolve, 30));
    return a + b;
  },
});
const failing = defineTool({
  name: "lookup",
  description: "Looks up a city",
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => {
    if (city === "Atlantis") throw new Error("no such city");
    return { city, population: 700_000 };
  },
});

const plan = (steps: unknown[]) => [script.text(JSON.stringify({ steps }))];
const answer = (text: string): ScriptStep => [script.text(text)];

async function run(
  model: ReturnType<typeof scriptedModel>,
  options: { tools?: never[]; prompt?: string } = {},
  orchestrator = planExecute(),
) {
  const agent = new Agent({ provider: model, tools: [calculator, add, failing], orchestrator });
  const agentRun = agent.prompt(options.prompt ?? "go");
  const events = await collectEvents(agentRun);
  const result = await agentRun.result();
  assertEventProtocol(events);
  assertValidTranscript(result.messages);
  return { agent, events, result };
}

describe("Go parity (planexecute_test.go)", () => {
  it("an empty plan answers directly with exactly two model calls (TestParsePlanEmpty)", async () => {
    const model = scriptedModel([plan([]), answer("No tools needed.")]);
    const { events, result } = await run(model);
    expect(eventsOf(events, "tool_call")).toEqual([]);
    expect(eventTypes(events)).toEqual(
      expect.arrayContaining(["turn_start", "plan_created", "text_delta", "turn_end"]),
    );
    expect(model.doStreamCalls).toHaveLength(2);
    expect(result.text).toBe("No tools needed.");
  });

  it("runs a single step (TestParsePlanSingleStep)", async () => {
    const { events } = await run(
      scriptedModel([plan([{ tool: "calculator", args: { expression: "15*3" } }]), answer("45")]),
    );
    expect(eventsOf(events, "tool_call")).toHaveLength(1);
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({ status: "ok", result: { result: 45 } });
  });

  it("runs several steps in plan order (TestParsePlanMultipleSteps)", async () => {
    const model = scriptedModel([
      plan([
        { tool: "calculator", args: { expression: "15*3" } },
        { tool: "calculator", args: { expression: "10+5" } },
      ]),
      answer("45 and 15"),
    ]);
    const { events } = await run(model, {}, planExecute({ maxConcurrency: 1 }));
    expect(eventsOf(events, "tool_call").map((e) => [e.toolName, e.args])).toEqual([
      ["calculator", { expression: "15*3" }],
      ["calculator", { expression: "10+5" }],
    ]);
  });

  it("emits plan_created and the step events around each call (TestPlanStepEvents)", async () => {
    const { events } = await run(
      scriptedModel([plan([{ tool: "calculator", args: { expression: "5*2" } }]), answer("10")]),
    );
    expect(eventsOf(events, "plan_created")[0]?.steps).toEqual([
      { id: "s1", tool: "calculator", args: { expression: "5*2" } },
    ]);
    expect(eventTypes(events).filter((t) => t.startsWith("plan_step") || t.startsWith("tool_"))).toEqual([
      "plan_step_start",
      "tool_call",
      "tool_result",
      "plan_step_end",
    ]);
    expect(eventsOf(events, "plan_step_start")[0]).toMatchObject({
      index: 0,
      stepCount: 1,
      tool: "calculator",
    });
    expect(eventsOf(events, "plan_step_end")[0]).toMatchObject({
      index: 0,
      stepCount: 1,
      tool: "calculator",
      result: { result: 10 },
    });
  });

  it("reads a plan inside a fenced block (TestParsePlanMarkdownBlock)", async () => {
    const fenced = `I will compute it.\n\`\`\`json\n${JSON.stringify({ steps: [{ tool: "calculator", args: { expression: "2*2" } }] })}\n\`\`\``;
    const { events } = await run(scriptedModel([[script.text(fenced)], answer("4")]));
    expect(eventsOf(events, "tool_call")).toHaveLength(1);
  });

  it("an unparseable plan is a clear error after a retry, not a silent empty plan (TestParsePlanInvalidJSONFallbackToEmpty)", async () => {
    const model = scriptedModel([answer("I will use the calculator."), answer("Really, the calculator.")]);
    const { events, result } = await run(model);
    expect(eventsOf(events, "tool_call")).toEqual([]);
    expect(result.error).toBeInstanceOf(PlanError);
    expect(eventsOf(events, "error")[0]).toMatchObject({
      code: "invalid_plan",
      message:
        "The planner did not return a valid plan after 2 attempts: Not valid JSON: the reply contains no JSON value.",
    });
  });

  it("without a provider the run ends with a clear error (TestPlanExecuteNoProvider)", async () => {
    const run = new Agent({ orchestrator: "plan-execute" }).prompt("go");
    const result = await run.result();
    expect(result.error).toBeInstanceOf(NoProviderError);
    expect(eventsOf(run.events, "error")[0]?.code).toBe("no_provider");
  });
});

describe("planning", () => {
  it("puts every tool's name, description and full input schema in the planning prompt, and asks for JSON", async () => {
    const model = scriptedModel([plan([]), answer("ok")]);
    await run(model);
    const system = model.prompts[0]?.[0];
    expect(system?.role).toBe("system");
    const text = system?.content as string;
    expect(text).toContain("- calculator: Evaluates a simple product or sum");
    expect(text).toContain(`input schema: ${JSON.stringify(calculator.jsonSchema)}`);
    expect(text).toContain(`input schema: ${JSON.stringify(add.jsonSchema)}`);
    expect(model.doStreamCalls[0]?.responseFormat).toMatchObject({ type: "json", name: "plan" });
    expect(model.doStreamCalls[0]?.tools).toBeUndefined();
    expect(model.doStreamCalls[1]?.tools).toBeUndefined();
  });

  it("sends an invalid plan back once with its problems, then runs the corrected one", async () => {
    const model = scriptedModel([
      plan([{ tool: "calculater", args: { expression: "2*3" } }]),
      plan([{ tool: "calculator", args: { expression: "2*3" } }]),
      answer("6"),
    ]);
    const { events } = await run(model);
    const repair = model.prompts[1]?.at(-1);
    expect(repair).toMatchObject({ role: "user" });
    expect(JSON.stringify(repair)).toContain('step s1: unknown tool \\"calculater\\"');
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({ status: "ok" });
    expect(eventsOf(events, "plan_created")).toHaveLength(1);
  });

  it("sends back a plan that gives two steps the same id, rather than guess which one a $ref means", async () => {
    const duplicated = plan([
      { id: "a", tool: "calculator", args: { expression: "2*3" } },
      { id: "a", tool: "calculator", args: { expression: "4*5" } },
      { id: "b", tool: "add", args: { a: { $ref: "steps.a.result.result" }, b: 1 } },
    ]);
    const model = scriptedModel([
      duplicated,
      plan([
        { id: "a", tool: "calculator", args: { expression: "2*3" } },
        { id: "b", tool: "add", args: { a: { $ref: "steps.a.result.result" }, b: 1 } },
      ]),
      answer("7"),
    ]);
    const { events } = await run(model);
    expect(JSON.stringify(model.prompts[1]?.at(-1))).toContain(
      'more than one step has the id \\"a\\"; give every step its own id',
    );
    expect(eventsOf(events, "plan_created")).toHaveLength(1);
    expect(eventsOf(events, "tool_call").map((e) => e.args)).toEqual([{ expression: "2*3" }, { a: 6, b: 1 }]);

    const { result } = await run(scriptedModel([duplicated, duplicated]));
    expect(result.error).toMatchObject({ code: "invalid_plan" });
    expect(result.error?.message).toContain('more than one step has the id "a"');
  });

  it("sends back arguments nested deeper than 100 levels before walking them, then ends with invalid_plan", async () => {
    // Written out as text: nested 20,000 levels deep, JSON.stringify itself would run out of stack.
    const deep = `${'{"a":'.repeat(20_000)}1${"}".repeat(20_000)}`;
    const tooDeep = [
      script.text(
        `{"steps":[{"tool":"calculator","args":{"expression":"1+1"}},{"tool":"add","args":${deep}}]}`,
      ),
    ];
    const { result } = await run(scriptedModel([tooDeep, tooDeep]));
    expect(result.error).toMatchObject({ code: "invalid_plan" });
    expect(result.error?.message).toBe(
      "The planner's plan is still invalid after one correction: the arguments of step 2 nest more than 100 levels deep",
    );

    let hundred: unknown = 1;
    for (let level = 1; level < 100; level++) hundred = { a: hundred };
    const model = scriptedModel([plan([{ tool: "add", args: { a: hundred } }]), plan([]), answer("none")]);
    await run(model);
    // 100 levels are read (the schema of add refuses them): the problem sent back is the schema's.
    expect(JSON.stringify(model.prompts[1]?.at(-1))).toContain('step s1: invalid arguments for \\"add\\"');
  });

  it("sends back a plan of more than 1,000 steps, then ends with invalid_plan", async () => {
    const steps = Array.from({ length: 1_001 }, (_, index) => ({
      tool: "calculator",
      args: { expression: `${index}+1` },
    }));
    const model = scriptedModel([plan(steps), plan(steps.slice(0, 2)), answer("done")]);
    const { events } = await run(model);
    expect(JSON.stringify(model.prompts[1]?.at(-1))).toContain(
      "the plan has 1001 steps, more than the 1000 a plan may have; plan fewer, larger steps",
    );
    expect(eventsOf(events, "tool_call")).toHaveLength(2);

    const { result } = await run(scriptedModel([plan(steps), plan(steps)]));
    expect(result.error).toMatchObject({ code: "invalid_plan" });
  });

  it("ends with invalid_plan when the correction is still invalid", async () => {
    const bad = plan([{ tool: "add", args: { a: "one", b: 2 } }]);
    const { result } = await run(scriptedModel([bad, bad]));
    expect(result.error).toMatchObject({ code: "invalid_plan" });
    expect(result.error?.message).toMatch(
      /still invalid after one correction: step s1: invalid arguments for "add"/,
    );
  });
});

describe("execution", () => {
  it("passes an earlier result through $ref and runs independent steps at once", async () => {
    const model = scriptedModel([
      plan([
        { id: "x", tool: "add", args: { a: 1, b: 2 } },
        { id: "y", tool: "add", args: { a: 10, b: 20 } },
        { id: "sum", tool: "add", args: { a: { $ref: "steps.x.result" }, b: { $ref: "steps.y.result" } } },
      ]),
      answer("33"),
    ]);
    const { events, result } = await run(model);
    // The independent steps run at once: both start before either ends.
    const order = events
      .filter((e) => e.type === "tool_call" || e.type === "tool_result")
      .map((e) => `${e.type}:${(e as { args?: { a?: unknown } }).args?.a ?? ""}`);
    expect(order.slice(0, 2)).toEqual(["tool_call:1", "tool_call:10"]);
    expect(eventsOf(events, "tool_call").map((e) => e.args)).toEqual([
      { a: 1, b: 2 },
      { a: 10, b: 20 },
      { a: 3, b: 30 },
    ]);
    expect(eventsOf(events, "plan_created")[0]?.steps[2]).toMatchObject({ id: "sum", dependsOn: ["x", "y"] });
    // Each wave is one assistant message of tool calls followed by its results.
    expect(result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });

  it("replans when a step fails, with the progress, and emits a new plan", async () => {
    const model = scriptedModel([
      plan([
        { id: "a", tool: "lookup", args: { city: "Atlantis" } },
        { id: "b", tool: "calculator", args: { expression: "2*2" }, dependsOn: ["a"] },
      ]),
      plan([{ id: "c", tool: "lookup", args: { city: "Oslo" } }]),
      answer("Atlantis does not exist; Oslo has 700,000 people."),
    ]);
    const { events, result } = await run(model, {}, planExecute({ maxConcurrency: 1 }));
    expect(eventsOf(events, "plan_created").map((e) => e.steps.map((s) => s.id))).toEqual([
      ["a", "b"],
      ["c"],
    ]);
    const request = JSON.stringify(model.prompts[1]?.at(-1));
    expect(request).toContain("A step failed.");
    expect(request).toContain("→ failed: no such city");
    expect(request).toContain("→ not run yet");
    expect(eventsOf(events, "plan_step_end")[0]).toMatchObject({ tool: "lookup", error: "no such city" });
    expect(result.stopReason).toBe("completed");
  });

  it("sends back a revised plan that gives a new step the id of a step that succeeded, rather than guess which one a $ref means", async () => {
    const model = scriptedModel([
      plan([
        { id: "a", tool: "add", args: { a: 1, b: 2 } },
        { id: "f", tool: "lookup", args: { city: "Atlantis" }, dependsOn: ["a"] },
      ]),
      plan([
        { id: "a", tool: "add", args: { a: 10, b: 20 } },
        { id: "c", tool: "add", args: { a: { $ref: "steps.a.result" }, b: 1 } },
      ]),
      plan([{ id: "c", tool: "add", args: { a: { $ref: "steps.a.result" }, b: 1 } }]),
      answer("4"),
    ]);
    const { events, result } = await run(model);
    expect(JSON.stringify(model.prompts[2])).toContain('a step of an earlier plan has the id \\"a\\"');
    expect(eventsOf(events, "plan_step_end").map((e) => e.result ?? e.error)).toEqual([3, "no such city", 4]);
    expect(result.text).toBe("4");
  });

  it("after maxReplans it goes on without replanning and never runs steps whose dependency failed", async () => {
    const model = scriptedModel([
      plan([
        { id: "a", tool: "lookup", args: { city: "Atlantis" } },
        { id: "b", tool: "lookup", args: { city: { $ref: "steps.a.result.city" } } },
        { id: "c", tool: "calculator", args: { expression: "1+1" } },
      ]),
      answer("Partial answer."),
    ]);
    const { events, result } = await run(model, {}, planExecute({ maxReplans: 0, maxConcurrency: 1 }));
    expect(eventsOf(events, "tool_call").map((e) => e.args)).toEqual([
      { city: "Atlantis" },
      { expression: "1+1" },
    ]);
    expect(eventsOf(events, "plan_step_end").map((e) => [e.index, e.error ?? "ok"])).toEqual([
      [0, "no such city"],
      [2, "ok"],
      [1, "not run: step a failed"],
    ]);
    expect(result.text).toBe("Partial answer.");
  });

  it("after maxReplans ends every step that waits on a failed one through others too, each naming the step it waited on", async () => {
    const model = scriptedModel([
      plan([
        { id: "d", tool: "lookup", args: { city: "D" }, dependsOn: ["c"] },
        { id: "a", tool: "lookup", args: { city: "Atlantis" } },
        { id: "b", tool: "lookup", args: { city: "B" }, dependsOn: ["a"] },
        { id: "c", tool: "lookup", args: { city: "C" }, dependsOn: ["b"] },
      ]),
      answer("Nothing found."),
    ]);
    const { events } = await run(model, {}, planExecute({ maxReplans: 0 }));
    expect(eventsOf(events, "tool_call").map((e) => e.args)).toEqual([{ city: "Atlantis" }]);
    expect(eventsOf(events, "plan_step_end").map((e) => [e.index, e.error])).toEqual([
      [1, "no such city"],
      [2, "not run: step a failed"],
      [3, "not run: step b failed"],
      [0, "not run: step c failed"],
    ]);
    expect(eventsOf(events, "plan_step_start")).toHaveLength(4);
  });

  it("runs a plan of the most steps allowed in one dependency chain, each step after the one it waits on", async () => {
    const steps = Array.from({ length: 1000 }, (_, index) => ({
      id: `s${index}`,
      tool: "calculator",
      args: { expression: `${index}+1` },
      ...(index === 0 ? {} : { dependsOn: [`s${index - 1}`] }),
    }));
    const { events, result } = await run(scriptedModel([plan(steps), answer("Counted.")]));
    const ends = eventsOf(events, "plan_step_end");
    expect(ends.map((e) => e.index)).toEqual(steps.map((_step, index) => index));
    expect(ends.at(-1)).toMatchObject({ stepCount: 1000, result: { result: 1000 } });
    expect(new Set(eventsOf(events, "tool_call").map((e) => e.toolCallId)).size).toBe(1000);
    expect(result.text).toBe("Counted.");
  });

  it("keeps each step's index and stepCount in the latest plan when the plan goes on without a replan", async () => {
    // a fails; b and c (through b) depend on it. With no replan left, c goes on as a step of the
    // same plan: it is still step 3 of 3, not step 1 of what is left.
    const failed = scriptedModel([
      plan([
        { id: "a", tool: "lookup", args: { city: "Atlantis" } },
        { id: "b", tool: "lookup", args: { city: { $ref: "steps.a.result.city" } } },
        { id: "c", tool: "lookup", args: { city: { $ref: "steps.b.result.city" } } },
      ]),
      answer("Nothing found."),
    ]);
    const { events } = await run(failed, {}, planExecute({ maxReplans: 0 }));
    expect(eventsOf(events, "plan_step_end").map((e) => [e.index, e.stepCount, e.error])).toEqual([
      [0, 3, "no such city"],
      [1, 3, "not run: step a failed"],
      [2, 3, "not run: step b failed"],
    ]);
    // Steering with no replan left: b and c run on as steps 2 and 3 of the plan.
    let agent: Agent | undefined;
    const steer = steeringTool("hurry", () => agent);
    const steered = scriptedModel([
      plan([
        { id: "a", tool: "steer_me" },
        { id: "b", tool: "calculator", args: { expression: "1+1" }, dependsOn: ["a"] },
        { id: "c", tool: "calculator", args: { expression: "2+2" }, dependsOn: ["b"] },
      ]),
      answer("done"),
    ]);
    agent = new Agent({
      provider: steered,
      tools: [steer, calculator],
      orchestrator: planExecute({ maxReplans: 0 }),
    });
    const agentRun = agent.prompt("go");
    await agentRun.result();
    assertEventProtocol(agentRun.events);
    for (const type of ["plan_step_start", "plan_step_end"] as const)
      expect(eventsOf(agentRun.events, type).map((e) => [e.index, e.stepCount])).toEqual([
        [0, 3],
        [1, 3],
        [2, 3],
      ]);
  });

  it("never hands a tool an inherited property: a $ref to __proto__ or constructor is not run", async () => {
    const patch = defineTool({
      name: "patch",
      description: "Sets record[key] = value",
      inputSchema: z.object({ record: z.any(), key: z.string(), value: z.unknown() }),
      execute: ({ record, key, value }) => {
        record[key] = value;
        return "patched";
      },
    });
    const model = scriptedModel([
      plan([
        { id: "a", tool: "lookup", args: { city: "Oslo" } },
        {
          id: "b",
          tool: "patch",
          args: { record: { $ref: "steps.a.result.__proto__" }, key: "polluted", value: true },
        },
        {
          id: "c",
          tool: "patch",
          args: { record: { $ref: "steps.a.result.constructor" }, key: "k", value: 1 },
        },
      ]),
      answer("Done."),
    ]);
    const agent = new Agent({
      provider: model,
      tools: [failing, patch],
      orchestrator: planExecute({ maxReplans: 0, maxConcurrency: 1 }),
    });
    try {
      const agentRun = agent.prompt("go");
      const result = await agentRun.result();
      assertEventProtocol(agentRun.events);
      assertValidTranscript(result.messages);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(eventsOf(agentRun.events, "tool_call").map((e) => e.toolName)).toEqual(["lookup"]);
      expect(eventsOf(agentRun.events, "plan_step_end").map((e) => e.error ?? "ok")).toEqual([
        "ok",
        "not run: refers to steps.a.result.__proto__, which does not exist",
        "not run: refers to steps.a.result.constructor, which does not exist",
      ]);
      expect(result.stopReason).toBe("completed");
    } finally {
      delete (Object.prototype as Record<string, unknown>).polluted;
    }
  });

  it("gives a step that is not run its plan_step_start and plan_step_end, with no tool call between", async () => {
    const model = scriptedModel([
      plan([
        { id: "a", tool: "lookup", args: { city: "Atlantis" } },
        { id: "b", tool: "lookup", args: { city: { $ref: "steps.a.result.city" } } },
      ]),
      answer("Atlantis does not exist."),
    ]);
    const { events } = await run(model, {}, planExecute({ maxReplans: 0 }));
    const steps = events.filter((e) => e.type.startsWith("plan_step") || e.type.startsWith("tool_"));
    expect(steps.map((e) => `${e.type} ${"index" in e ? e.index : ""}`.trim())).toEqual([
      "plan_step_start 0",
      "tool_call",
      "tool_result",
      "plan_step_end 0",
      "plan_step_start 1",
      "plan_step_end 1",
    ]);
    expect(eventsOf(events, "plan_step_end")[1]).toMatchObject({ error: "not run: step a failed" });
  });

  it("replans when the user steers between steps, with the steering message in the history", async () => {
    let agent: Agent | undefined;
    const steer = steeringTool("Use 7 instead", () => agent);
    const model = scriptedModel([
      plan([
        { id: "a", tool: "steer_me" },
        { id: "b", tool: "calculator", args: { expression: "2*3" }, dependsOn: ["a"] },
      ]),
      plan([{ id: "c", tool: "calculator", args: { expression: "7*3" } }]),
      answer("21"),
    ]);
    agent = new Agent({ provider: model, tools: [steer, calculator], orchestrator: "plan-execute" });
    const agentRun = agent.prompt("compute");
    const result = await agentRun.result();
    assertEventProtocol(agentRun.events);
    assertValidTranscript(result.messages);
    expect(eventsOf(agentRun.events, "steering_applied")).toHaveLength(1);
    expect(JSON.stringify(model.prompts[1]?.at(-1))).toContain("The user sent new instructions");
    expect(
      model.prompts[1]?.some((m) => m.role === "user" && JSON.stringify(m).includes("Use 7 instead")),
    ).toBe(true);
    expect(eventsOf(agentRun.events, "tool_call").map((e) => e.args)).toEqual([{}, { expression: "7*3" }]);
    expect(result.text).toBe("21");
  });

  it("replans for steering that came while the planner made an empty plan, rather than answer it without tools", async () => {
    const model = scriptedModel([
      [script.delay(60), script.text('{"steps":[]}')],
      plan([{ id: "c", tool: "calculator", args: { expression: "7*3" } }]),
      answer("21"),
    ]);
    const agent = new Agent({ provider: model, tools: [calculator], orchestrator: "plan-execute" });
    const agentRun = agent.prompt("hi");
    setTimeout(() => agent.steer("Also compute 7*3"), 20);
    const result = await agentRun.result();
    assertEventProtocol(agentRun.events);
    assertValidTranscript(result.messages);
    expect(JSON.stringify(model.prompts[1]?.at(-1))).toContain("The user sent new instructions");
    expect(eventsOf(agentRun.events, "tool_call").map((e) => e.args)).toEqual([{ expression: "7*3" }]);
    expect(result.text).toBe("21");
  });

  it("tells the planner that steps the steering cut off were not run yet, not that they failed", async () => {
    let agent: Agent | undefined;
    const steer = steeringTool("Use 7 instead", () => agent);
    const model = scriptedModel([
      plan([
        { id: "a", tool: "steer_me" },
        { id: "b", tool: "calculator", args: { expression: "2*3" } },
      ]),
      plan([]),
      answer("done"),
    ]);
    agent = new Agent({
      provider: model,
      tools: [steer, calculator],
      orchestrator: planExecute({ maxConcurrency: 1 }),
    });
    const agentRun = agent.prompt("compute");
    const result = await agentRun.result();
    assertEventProtocol(agentRun.events);
    assertValidTranscript(result.messages);
    const progress = JSON.stringify(model.prompts[1]?.at(-1));
    expect(progress).toContain('b calculator {\\"expression\\":\\"2*3\\"} → not run yet');
    expect(progress).not.toContain("failed");
  });

  it("after maxReplans, steering no longer cuts a wave short: the plan goes on, and the answer reads the steering", async () => {
    let agent: Agent | undefined;
    const steer = steeringTool("Also say hello", () => agent);
    const model = scriptedModel([
      plan([
        { id: "a", tool: "steer_me" },
        { id: "b", tool: "calculator", args: { expression: "2*3" } },
        { id: "c", tool: "calculator", args: { expression: "3+3" }, dependsOn: ["b"] },
      ]),
      answer("6, hello"),
    ]);
    agent = new Agent({
      provider: model,
      tools: [steer, calculator],
      orchestrator: planExecute({ maxReplans: 0, maxConcurrency: 1 }),
    });
    const agentRun = agent.prompt("compute");
    const result = await agentRun.result();
    assertEventProtocol(agentRun.events);
    assertValidTranscript(result.messages);
    expect(eventsOf(agentRun.events, "plan_step_end").map((e) => [e.index, e.error ?? "ok"])).toEqual([
      [0, "ok"],
      [1, "ok"],
      [2, "ok"],
    ]);
    expect(eventsOf(agentRun.events, "steering_applied")).toHaveLength(1);
    expect(JSON.stringify(model.prompts[1])).toContain("Also say hello");
    expect(result.text).toBe("6, hello");
  });

  it("opens a new turn with a new plan for a follow-up", async () => {
    const model = scriptedModel([
      plan([{ tool: "calculator", args: { expression: "15*3" } }]),
      answer("45"),
      plan([{ tool: "calculator", args: { expression: "45*2" } }]),
      answer("90"),
    ]);
    const agent = new Agent({ provider: model, tools: [calculator], orchestrator: planExecute() });
    agent.followUp("double it");
    const agentRun = agent.prompt("15*3?");
    const result = await agentRun.result();
    assertEventProtocol(agentRun.events);
    assertValidTranscript(result.messages);
    expect(eventsOf(agentRun.events, "turn_start").map((e) => e.turn)).toEqual([1, 2]);
    expect(eventsOf(agentRun.events, "tool_call").map((e) => e.toolCallId)).toEqual([
      expect.stringMatching(/_1_s1$/),
      expect.stringMatching(/_2_s1$/),
    ]);
    expect(result.text).toBe("90");
  });

  /** Two prompts whose plans each have a step "a": their call ids must still differ. */
  const samePlanTwice = () =>
    scriptedModel([
      plan([{ id: "a", tool: "calculator", args: { expression: "1+1" } }]),
      answer("2"),
      plan([{ id: "a", tool: "calculator", args: { expression: "2+2" } }]),
      answer("4"),
    ]);

  it("gives every call an id new to the history, also when run ids share their first characters", async () => {
    // A durable workflow's runs are <id>, <id>.2, …: the same plan in each must not repeat a call id.
    const model = samePlanTwice();
    const agent = new Agent({ provider: model, tools: [calculator], orchestrator: planExecute() });
    let runs = 0;
    agent.container.registerInstance(ID_SOURCE, {
      runId: () => (++runs === 1 ? "workflow-1234" : `workflow-1234.${runs}`),
    });
    const first = await agent.prompt("1+1?").result();
    const second = agent.prompt("2+2?");
    const result = await second.result();
    expect(first.stopReason).toBe("completed");
    expect(result.stopReason).toBe("completed");
    assertEventProtocol(second.events);
    assertValidTranscript(result.messages);
    const ids = result.messages.flatMap((m) =>
      m.role === "toolResult" ? [(m as ToolResultMessage).toolCallId] : [],
    );
    expect(new Set(ids).size).toBe(2);
    for (const id of ids) expect(id).toMatch(/^p[0-9a-f]{8}_1_a$/);
  });

  it("gives a call a suffix rather than repeat an id already in the history (a runtime that repeats a run id)", async () => {
    const model = samePlanTwice();
    const agent = new Agent({ provider: model, tools: [calculator], orchestrator: planExecute() });
    agent.container.registerInstance(ID_SOURCE, { runId: () => "same" });
    await agent.prompt("1+1?").result();
    const result = await agent.prompt("2+2?").result();
    expect(result.stopReason).toBe("completed");
    assertValidTranscript(result.messages);
    const ids = result.messages.flatMap((m) =>
      m.role === "toolResult" ? [(m as ToolResultMessage).toolCallId] : [],
    );
    expect(ids).toEqual([expect.stringMatching(/_1_a$/), expect.stringMatching(/_1_a_2$/)]);
  });

  it("an abort during a step leaves a valid history", async () => {
    const stuck = defineTool({
      name: "stuck",
      description: "x",
      inputSchema: z.object({}),
      execute: () => new Promise(() => {}),
    });
    const model = scriptedModel([plan([{ tool: "stuck" }, { tool: "stuck" }])]);
    const agent = new Agent({
      provider: model,
      tools: [stuck],
      orchestrator: planExecute({ maxConcurrency: 1 }),
      limits: { abortGraceMs: 10 },
    });
    agent.on("tool_call", () => agent.abort());
    const agentRun = agent.prompt("go");
    const result = await agentRun.result();
    assertEventProtocol(agentRun.events);
    assertValidTranscript(result.messages);
    expect(result.stopReason).toBe("aborted");
    expect(
      result.messages.filter((m): m is ToolResultMessage => m.role === "toolResult").map((m) => m.status),
    ).toEqual(["aborted", "aborted"]);
  });

  it("an abort before a wave's next step started still brackets that step's tool_call with its step events", async () => {
    // The first step aborts the run once it runs, and ignores the signal: the run ends while it
    // runs, before the second step starts.
    const stuck = defineTool({
      name: "stuck",
      description: "x",
      inputSchema: z.object({}),
      execute: () => {
        agent.abort();
        return new Promise(() => {});
      },
    });
    const model = scriptedModel([
      plan([
        { id: "a", tool: "stuck", args: {} },
        { id: "b", tool: "stuck", args: {} },
      ]),
    ]);
    const agent = new Agent({
      provider: model,
      tools: [stuck],
      orchestrator: planExecute({ maxConcurrency: 1 }),
      limits: { abortGraceMs: 10 },
    });
    const agentRun = agent.prompt("go");
    expect((await agentRun.result()).stopReason).toBe("aborted");
    expect(stepsAndCalls(agentRun.events)).toEqual(BOTH_STEPS_BRACKETED);
  });

  it("a batch that failed (a beforeToolCall that throws) leaves its steps to the run's end, which brackets each with its step events", async () => {
    const note = defineTool({
      name: "note",
      description: "x",
      inputSchema: z.object({}),
      execute: () => "noted",
    });
    const agent = new Agent({
      provider: scriptedModel([
        plan([
          { id: "a", tool: "note", args: {} },
          { id: "b", tool: "note", args: {} },
        ]),
      ]),
      tools: [note],
      orchestrator: planExecute(),
      beforeToolCall: () => {
        throw new Error("the hook broke");
      },
    });
    const agentRun = agent.prompt("go");
    const result = await agentRun.result();
    expect(result.stopReason).toBe("error");
    assertValidTranscript(result.messages);
    assertEventProtocol(agentRun.events);
    expect(stepsAndCalls(agentRun.events)).toEqual(BOTH_STEPS_BRACKETED);
  });
});

/** Two steps, each call between its step's start and end. */
const BOTH_STEPS_BRACKETED = [
  "plan_step_start 0",
  "tool_call",
  "tool_result",
  "plan_step_end 0",
  "plan_step_start 1",
  "tool_call",
  "tool_result",
  "plan_step_end 1",
];

/** The run's step and tool events, each as its type and (for a step) its index: "plan_step_start 0". */
function stepsAndCalls(events: readonly AgentEvent[]): string[] {
  return events
    .filter((event) => /^(plan_step_|tool_)/.test(event.type))
    .map((event) => `${event.type} ${"index" in event ? event.index : ""}`.trim());
}

describe("options", () => {
  const messageOf = (options: unknown) => {
    try {
      planExecute(options as never);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect(error).toBeInstanceOf(AgentConfigError);
      return (error as Error).message;
    }
    throw new Error(`planExecute(${JSON.stringify(options)}) was accepted`);
  };

  it("runs a wave with its own maxConcurrency, not the agent's toolExecution and maxConcurrency", async () => {
    let running = 0;
    let most = 0;
    const slow = defineTool({
      name: "slow",
      description: "d",
      inputSchema: z.object({ n: z.number() }),
      execute: async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running--;
        return "ok";
      },
    });
    const steps = Array.from({ length: 6 }, (_, n) => ({ id: `s${n}`, tool: "slow", args: { n } }));
    for (const [settings, expected] of [
      [{ toolExecution: "sequential" }, 4],
      [{ toolExecution: "parallel", maxConcurrency: 2 }, 4],
      [{ toolExecution: "parallel", maxConcurrency: 8, orchestrator: planExecute({ maxConcurrency: 3 }) }, 3],
    ] as const) {
      most = 0;
      const model = scriptedModel([plan(steps), answer("done")]);
      const agent = new Agent({ orchestrator: "plan-execute", ...settings, provider: model, tools: [slow] });
      expect((await agent.prompt("go").result()).stopReason).toBe("completed");
      expect(most, JSON.stringify(settings)).toBe(expected);
    }
  });

  it("refuses each value outside its field's domain, naming the field, never clamping it", () => {
    for (const value of [0, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY, "4", null])
      expect(messageOf({ maxConcurrency: value })).toBe(
        `Invalid plan-execute options: maxConcurrency must be a whole number >= 1, got ${value === "4" ? '"4"' : String(value)}.`,
      );
    for (const value of [-1, 0.5, "2"])
      expect(messageOf({ maxReplans: value })).toMatch(
        /^Invalid plan-execute options: maxReplans must be a whole number >= 0, got .+\.$/,
      );
    for (const value of ["", "   ", 5])
      expect(messageOf({ name: value })).toMatch(
        /^Invalid plan-execute options: name must be a non-blank string, got .+\.$/,
      );
    expect(messageOf(null)).toBe("Invalid plan-execute options: options must be an object, got null.");
  });

  it("names every bad field at once", () => {
    expect(messageOf({ maxReplans: -1, maxConcurrency: 0, name: "" })).toBe(
      [
        "Invalid plan-execute options:",
        "- maxReplans must be a whole number >= 0, got -1.",
        "- maxConcurrency must be a whole number >= 1, got 0.",
        '- name must be a non-blank string, got "".',
      ].join("\n"),
    );
  });

  it("accepts the edges of each domain, and refuses a key it does not know as new Agent() does", () => {
    const orchestrator = planExecute({ maxReplans: 0, maxConcurrency: 1, name: "p" });
    expect(orchestrator.name).toBe("p");
    expect(messageOf({ maxReplan: 1 })).toBe(
      "Invalid plan-execute options: maxReplan is not a setting (known: maxReplans, maxConcurrency, name).",
    );
    expect(new Agent({ orchestrator: "plan-execute" }).orchestrator.name).toBe("plan-execute");
  });
});

describe("registration", () => {
  it("registers under plan-execute without becoming the default", () => {
    expect(new Agent({ orchestrator: "plan-execute" }).orchestrator.name).toBe("plan-execute");
    expect(new Agent({}).orchestrator.name).toBe("agentic");
  });
});

/** A tool, `steer_me`, that steers the agent it runs in (`agentOf`: that agent, once made) with `text`. */
function steeringTool(text: string, agentOf: () => Agent | undefined) {
  return defineTool({
    name: "steer_me",
    description: "x",
    inputSchema: z.object({}),
    execute: () => {
      agentOf()?.steer(text);
      return "ok";
    },
  });
}
