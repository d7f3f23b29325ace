/**
 * The default agent of examples/default-agentic with plan-execute swapped in: the same model and
 * tools, one line changed (`orchestrator: "plan-execute"`). The model plans every step up front,
 * the steps run (in waves, as their dependencies allow), and the model answers from the results.
 * Runs offline on the demo model, or on a real OpenAI-compatible model when OPENAI_API_KEY is set.
 *
 *   pnpm --filter @agent-core/example-plan-execute start
 */
import { createDemoAgentTools, modelFromEnv } from "@agent-core/cli";
// Registers "plan-execute" (and its plan_* events) by name.
import "@agent-core/plan-execute";
import { Agent, type AgentEvent } from "agent-core";

const { model, label } = modelFromEnv(process.env);
console.log(`model: ${label}`);

const agent = new Agent({
  systemPrompt:
    "You are a helpful assistant. Use the calculator for arithmetic and get_current_time for the time.",
  provider: model,
  tools: createDemoAgentTools(),
  orchestrator: "plan-execute", // the one line: the default is "agentic"
});

// The plan events come beside the ones every orchestrator emits.
agent.on("*", (event: AgentEvent) => {
  if (event.type === "plan_created")
    console.log(
      `plan: ${event.steps.map((step) => `${step.tool}(${JSON.stringify(step.args)})`).join(", ")}`,
    );
  if (event.type === "plan_step_start")
    console.log(`  ▸ step ${event.index + 1}/${event.stepCount} ${event.tool}`);
  if (event.type === "plan_step_end")
    console.log(
      `  ✓ step ${event.index + 1}/${event.stepCount} ${event.error ? `failed: ${event.error}` : "done"}`,
    );
  if (event.type === "tool_result")
    console.log(`  ← ${event.toolName} [${event.status}] ${JSON.stringify(event.result ?? event.error)}`);
  if (event.type === "text_delta") process.stdout.write(event.text);
  if (event.type === "turn_end") process.stdout.write("\n");
});

const result = await agent.prompt("What is 15*3 and 10+5?").result();
console.log(`stop reason: ${result.stopReason} · ${result.usage.totalTokens} tokens`);
console.log(`history: ${result.messages.map((m) => m.role).join(" ")}`);
// A failed run has no answer to show; its error says why (a refused key, a server down, …).
if (result.error !== undefined) console.error(`error: ${result.error.message}`);
if (result.stopReason !== "completed") process.exitCode = 1;
