import * as core from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import * as agentCore from "agent-core";
import { describe, expect, it } from "vitest";
import { z } from "zod";

// Nothing in this file imports @agent-core/agentic: "agent-core" alone must make an agent work.

describe("agent-core", () => {
  it("runs `new Agent({ provider })` on the agentic orchestrator with no other import", async () => {
    const add = agentCore.defineTool({
      name: "add",
      description: "Adds two numbers",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => ({ sum: a + b }),
    });
    const provider = scriptedModel([[script.toolCall("add", { a: 2, b: 3 })], [script.text("2+3 = 5.")]]);
    const agent = new agentCore.Agent({ provider, tools: [add] });

    expect(agent.orchestrator).toBeInstanceOf(agentCore.AgenticOrchestrator);
    const result = await agent.prompt("What is 2+3?").result();
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("2+3 = 5.");
    expect(result.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });

  it("registers agentic as the default orchestrator", () => {
    const registry = agentCore.rootContainer.resolve(agentCore.ORCHESTRATOR_REGISTRY);
    expect(registry.defaultName).toBe("agentic");
    expect(agentCore.agentic()).toBeInstanceOf(agentCore.AgenticOrchestrator);
  });

  it("exports every export of @agent-core/core, the very same values", () => {
    const exported = agentCore as Record<string, unknown>;
    const missing = Object.keys(core).filter((name) => !(name in exported));
    expect(missing).toEqual([]);
    for (const [name, value] of Object.entries(core)) expect(exported[name], name).toBe(value);
  });
});
