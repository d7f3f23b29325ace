/**
 * A custom orchestrator in use: the "reflect" plug-in of this folder drafts an answer with tools,
 * has it critiqued, and revises it. Offline it plays a scripted session (the offline demo model
 * cannot critique); with OPENAI_API_KEY set it talks to a real OpenAI-compatible model.
 *
 *   pnpm --filter @agent-core/example-custom-orchestrator start
 */
import "./index.js";
import { createDemoAgentTools, modelFromEnv } from "@agent-core/cli";
import { Agent, type AgentEvent } from "agent-core";
import { scriptedSession } from "./scripted-session.js";

const choice = modelFromEnv(process.env);
const { model, label } = choice.demo ? scriptedSession() : choice;
console.log(`model: ${label}`);

const agent = new Agent({
  systemPrompt: "You are a helpful assistant. Use the calculator for arithmetic.",
  provider: model,
  tools: createDemoAgentTools(),
  orchestrator: "reflect",
});

// Streamed text has no newline of its own: end it before the next line of the view.
let midLine = false;
const line = (text: string) => {
  process.stdout.write(`${midLine ? "\n" : ""}${text}\n`);
  midLine = false;
};

agent.on("*", (event: AgentEvent) => {
  if (event.type === "tool_call") line(`  → ${event.toolName}(${JSON.stringify(event.args)})`);
  if (event.type === "tool_result")
    line(`  ← ${event.toolName} [${event.status}] ${JSON.stringify(event.result ?? event.error)}`);
  if (event.type === "custom") line(`  ◆ ${event.name} ${JSON.stringify(event.data)}`);
  if (event.type === "text_delta") {
    process.stdout.write(event.text);
    midLine = true;
  }
});

const result = await agent.prompt("What is 15*3?").result();
line(`answer: ${result.text}`);
console.log(
  `stop reason: ${result.stopReason} · ${result.usage.totalTokens} tokens · ${result.durationMs} ms`,
);
// A failed run has no answer to show; its error says why (a refused key, a server down, …).
if (result.error !== undefined) console.error(`error: ${result.error.message}`);
if (result.stopReason !== "completed") process.exitCode = 1;
