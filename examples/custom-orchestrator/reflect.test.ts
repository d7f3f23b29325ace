import { Agent, type AgentEvent, defineTool, InvalidConfigError, type Orchestrator } from "@agent-core/core";
import {
  assertEventProtocol,
  assertValidTranscript,
  collectEvents,
  eventsOf,
  eventTypes,
  type ScriptedModel,
  type ScriptStep,
  script,
  scriptedModel,
} from "@agent-core/testing";
import { describeOrchestratorConformance } from "@agent-core/testing/conformance";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ReflectOrchestrator, reflect } from "./index.js";

describeOrchestratorConformance("reflect", () => reflect());

const calculator = defineTool({
  name: "calculator",
  description: "Multiplies two numbers written as a*b",
  inputSchema: z.object({ expression: z.string() }),
  execute: ({ expression }) => {
    const [a, b] = expression.split("*").map(Number);
    return { result: (a ?? Number.NaN) * (b ?? Number.NaN) };
  },
});

const answer = (text: string): ScriptStep => [script.text(text)];
const critique = (verdict: "accept" | "revise", issues: string[] = []): ScriptStep =>
  answer(JSON.stringify({ verdict, issues }));

async function run(model: ScriptedModel, orchestrator: Orchestrator | string = reflect()) {
  const agent = new Agent({ systemPrompt: "Be exact.", provider: model, tools: [calculator], orchestrator });
  const agentRun = agent.prompt("What is 15*3?");
  const events = await collectEvents(agentRun);
  const result = await agentRun.result();
  assertEventProtocol(events);
  assertValidTranscript(result.messages);
  return { agent, events, result };
}

/** The custom events of a run, as `[name, data]`. */
const customEvents = (events: readonly AgentEvent[]) =>
  eventsOf(events, "custom").map((event) => [event.name, event.data]);

/** The text the model was sent in call `index`, for checking what a call saw. */
const promptText = (model: ScriptedModel, index: number) => JSON.stringify(model.prompts[index]);

describe("reflect", () => {
  it("keeps an accepted draft: one draft, one critique, no revision", async () => {
    const model = scriptedModel([answer("45"), critique("accept")]);
    const { events, result } = await run(model);
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("45");
    expect(model.doStreamCalls).toHaveLength(2);
    expect(eventTypes(events)).toEqual([
      "agent_start",
      "turn_start",
      "text_delta",
      "steering_mode",
      // The critic's verdict is a model decision too: it responds.
      "steering_mode",
      "custom",
      "turn_end",
      "agent_end",
    ]);
    expect(customEvents(events)).toEqual([["reflect.critique", { round: 1, verdict: "accept", issues: [] }]]);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("revises, then keeps the revision the critic accepts", async () => {
    const model = scriptedModel([
      answer("35"),
      critique("revise", ["15*3 is 45, not 35."]),
      answer("45"),
      critique("accept"),
    ]);
    const { events, result } = await run(model);
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("45");
    expect(customEvents(events)).toEqual([
      ["reflect.critique", { round: 1, verdict: "revise", issues: ["15*3 is 45, not 35."] }],
      ["reflect.revised", { round: 1 }],
      ["reflect.critique", { round: 2, verdict: "accept", issues: [] }],
    ]);
    // Draft and revision follow each other in the history; the turn ends on the revision.
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
    expect(eventsOf(events, "turn_end")[0]?.message).toBe(result.messages[2]);
  });

  it("gives the reviser the issues, the base system prompt and no tools", async () => {
    const model = scriptedModel([answer("35"), critique("revise", ["Wrong product."]), answer("45")]);
    await run(model, reflect({ rounds: 1 }));
    const system = model.prompts[2]?.[0];
    expect(system).toMatchObject({ role: "system" });
    expect(system?.content).toContain("Be exact.");
    expect(system?.content).toContain("- Wrong product.");
    expect(model.offeredTools[2]).toEqual([]);
  });

  it("stops after `rounds` revisions even when the critic still says revise", async () => {
    const model = scriptedModel([answer("35"), critique("revise", ["Wrong."]), answer("44")]);
    const { events, result } = await run(model, reflect({ rounds: 1 }));
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("44");
    expect(model.doStreamCalls).toHaveLength(3);
    expect(customEvents(events).map(([name]) => name)).toEqual(["reflect.critique", "reflect.revised"]);
  });

  it("with rounds: 0, answers with the tool loop alone", async () => {
    const model = scriptedModel([answer("45")]);
    const { events, result } = await run(model, reflect({ rounds: 0 }));
    expect(result.text).toBe("45");
    expect(customEvents(events)).toEqual([]);
  });

  it("asks the critic for JSON, with the critic prompt, the draft and a review request", async () => {
    const model = scriptedModel([answer("The answer is 35."), critique("accept")]);
    await run(model, reflect({ criticPrompt: "Check the arithmetic." }));
    const call = model.doStreamCalls[1];
    expect(call?.responseFormat).toMatchObject({ type: "json", name: "critique" });
    expect(call?.tools ?? []).toEqual([]);
    const [system, ...messages] = call?.prompt ?? [];
    expect(system?.content).toContain("Check the arithmetic.");
    expect(system?.content).toContain("Be exact.");
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(promptText(model, 1)).toContain("The answer is 35.");
  });

  it("runs the draft's tool calls and keeps a valid transcript", async () => {
    const model = scriptedModel([
      [script.toolCall("calculator", { expression: "15*3" })],
      answer("45"),
      critique("accept"),
    ]);
    const { events, result } = await run(model);
    expect(eventsOf(events, "tool_result")[0]).toMatchObject({ status: "ok", result: { result: 45 } });
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    // The critic sees the tool's result, so it can check the answer against it.
    expect(promptText(model, 2)).toContain('{\\"result\\":45}');
  });

  it("keeps the answer when the critic gives no valid verdict", async () => {
    const model = scriptedModel([answer("45"), answer("looks fine"), answer("still no JSON")]);
    const { events, result } = await run(model);
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("45");
    expect(customEvents(events)).toEqual([
      ["reflect.critique_failed", { round: 1, error: expect.stringContaining("valid object") }],
    ]);
  });

  it("reports a provider failure during the critique as an error, not as the draft", async () => {
    const model = scriptedModel([answer("45"), { throws: new Error("the provider is down") }]);
    const { events, result } = await run(model);
    expect(result.stopReason).toBe("error");
    expect(eventsOf(events, "custom")).toEqual([]);
  });

  it("reviews each follow-up turn too", async () => {
    const model = scriptedModel([answer("45"), critique("accept"), answer("6"), critique("accept")]);
    const agent = new Agent({ provider: model, orchestrator: reflect() });
    agent.followUp("And 2*3?");
    const agentRun = agent.prompt("What is 15*3?");
    const events = await collectEvents(agentRun);
    expect(eventsOf(events, "turn_end").map((event) => event.message.content)).toEqual([
      [{ type: "text", text: "45" }],
      [{ type: "text", text: "6" }],
    ]);
    expect(customEvents(events).map(([name]) => name)).toEqual(["reflect.critique", "reflect.critique"]);
  });

  it("drafts again, with tools, when steering arrives during the review", async () => {
    const model = scriptedModel([
      answer("45"),
      critique("accept"),
      [script.toolCall("calculator", { expression: "10*5" })],
      answer("50"),
      critique("accept"),
    ]);
    const agent = new Agent({ provider: model, tools: [calculator], orchestrator: reflect() });
    const stop = agent.on("custom", () => {
      stop();
      agent.steer("Actually, 10*5.");
    });
    const result = await agent.prompt("What is 15*3?").result();
    assertValidTranscript(result.messages);
    expect(result.text).toBe("50");
    expect(result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });

  it("ends aborted, with a valid transcript, when aborted during the critique", async () => {
    const controller = new AbortController();
    const model = scriptedModel([
      answer("45"),
      () => {
        // The critique call is in flight: its stream hangs until the abort cancels it.
        setTimeout(() => controller.abort(), 0);
        return [script.hang()];
      },
    ]);
    const agent = new Agent({ provider: model, orchestrator: reflect(), limits: { abortGraceMs: 30 } });
    const agentRun = agent.prompt("What is 15*3?", { signal: controller.signal });
    const events = await collectEvents(agentRun);
    const result = await agentRun.result();
    assertEventProtocol(events);
    assertValidTranscript(result.messages);
    expect(result.stopReason).toBe("aborted");
    expect(eventsOf(events, "custom")).toEqual([]);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("is registered by name", async () => {
    const { agent, result } = await run(scriptedModel([answer("45"), critique("accept")]), "reflect");
    expect(agent.orchestrator).toBeInstanceOf(ReflectOrchestrator);
    expect(result.text).toBe("45");
  });

  it("rejects a negative or fractional number of rounds", () => {
    expect(() => reflect({ rounds: -1 })).toThrow(/rounds/);
    expect(() => reflect({ rounds: 1.5 })).toThrow(
      "Invalid reflect options: rounds must be a whole number >= 0, got 1.5.",
    );
  });

  it("rejects options of the wrong kind, naming each, before any run", () => {
    expect(() => reflect({ rounds: "2", criticPrompt: 5 } as never)).toThrow(
      [
        "Invalid reflect options:",
        '- rounds must be a whole number >= 0, got "2".',
        "- criticPrompt must be a non-blank string, got 5.",
      ].join("\n"),
    );
    expect(() => reflect({ criticPrompt: " " })).toThrow(/criticPrompt must be a non-blank string/);
    expect(() => reflect(null as never)).toThrow(InvalidConfigError);
  });
});
