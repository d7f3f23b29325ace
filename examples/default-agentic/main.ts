/**
 * The default agent: the agentic orchestrator, two tools, a live view of the events, a steering
 * message sent while the tools run, and a follow-up. Runs offline on the demo model, or on a real
 * OpenAI-compatible model when OPENAI_API_KEY is set.
 *
 *   pnpm --filter @agent-core/example-default-agentic start
 */
import { createDemoAgentTools, modelFromEnv } from "@agent-core/cli";
import { Agent, type AgentEvent } from "agent-core";

const { model, label } = modelFromEnv(process.env);
console.log(`model: ${label}`);

const agent = new Agent({
  systemPrompt:
    "You are a helpful assistant. Use the calculator for arithmetic and get_current_time for the time.",
  provider: model,
  tools: createDemoAgentTools(),
  limits: { maxCycles: 8 },
});

// Every event of every run, rendered compactly; a UI would do the same.
agent.on("*", (event: AgentEvent) => {
  if (event.type === "tool_call") console.log(`  → ${event.toolName}(${JSON.stringify(event.args)})`);
  if (event.type === "tool_result")
    console.log(`  ← ${event.toolName} [${event.status}] ${JSON.stringify(event.result ?? event.error)}`);
  if (event.type === "text_delta") process.stdout.write(event.text);
  if (event.type === "steering_applied") console.log("  ↪ steering applied");
  if (event.type === "turn_end") process.stdout.write("\n");
});

// Steer while the first tool runs: the calls still queued are skipped and the model sees the
// correction before its next decision.
const stopSteering = agent.on("tool_call", () => {
  stopSteering();
  agent.steer("Actually, only compute 10+5.");
});
// Continue the run once it would stop.
agent.followUp("And what is 15*3 after all?");

const result = await agent.prompt("What is 15*3 and 10+5?").result();
console.log(
  `stop reason: ${result.stopReason} · ${result.usage.totalTokens} tokens · ${result.durationMs} ms`,
);
console.log(`history: ${result.messages.map((m) => m.role).join(" ")}`);
// A failed run has no answer to show; its error says why (a refused key, a server down, …).
if (result.error !== undefined) console.error(`error: ${result.error.message}`);
if (result.stopReason !== "completed") process.exitCode = 1;
