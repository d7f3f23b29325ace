import type { ToolRegistry } from "@agent-core/core";
import type { PlanStep } from "./plan.js";

const DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant.";

function base(systemPrompt: string): string {
  return systemPrompt.trim() === "" ? DEFAULT_SYSTEM_PROMPT : systemPrompt;
}

/** The planner sees every tool with its name, description and full input schema. */
export function planningPrompt(systemPrompt: string, tools: ToolRegistry): string {
  const catalog =
    tools.size === 0
      ? "No tools are available."
      : tools
          .all()
          .map(
            (tool) =>
              `- ${tool.name}: ${tool.description}\n  input schema: ${JSON.stringify(tool.jsonSchema)}`,
          )
          .join("\n");
  return `${base(systemPrompt)}

Plan how to answer the user's latest request with the tools below. Reply with one JSON object and nothing else:
{"steps": [{"id": "s1", "tool": "<tool name>", "args": {…}, "dependsOn": ["<id of an earlier step>"]}]}
- Use only the tools listed, with arguments that match their input schema.
- An argument may use an earlier step's result: {"$ref": "steps.<id>.result"}, or a path into it such as {"$ref": "steps.s1.result.items.0.name"}. A step that uses a result waits for that step.
- Steps that do not depend on each other may run at the same time; list in dependsOn the steps a step must wait for.
- If no tool is needed, reply {"steps": []}.

Tools:
${catalog}`;
}

export interface Progress {
  done: { step: PlanStep; result: unknown }[];
  failed: { step: PlanStep; error: string }[];
  notRun: PlanStep[];
  reason: "failure" | "steering";
}

/** Sent as the last message of a replanning call: what happened, and what to reply. */
export function replanRequest(progress: Progress): string {
  const lines = [
    ...progress.done.map(
      ({ step, result }) =>
        `- ${step.id} ${step.tool} ${JSON.stringify(step.args)} → ok: ${JSON.stringify(result)}`,
    ),
    ...progress.failed.map(
      ({ step, error }) => `- ${step.id} ${step.tool} ${JSON.stringify(step.args)} → failed: ${error}`,
    ),
    ...progress.notRun.map((step) => `- ${step.id} ${step.tool} ${JSON.stringify(step.args)} → not run yet`),
  ];
  const why =
    progress.reason === "failure"
      ? "A step failed."
      : "The user sent new instructions (the latest user message); follow them.";
  return `${why} Progress of the plan so far:
${lines.join("\n")}
Reply with the steps still to run as a new plan, in the same JSON format. Use new step ids; you may refer to the results of the steps that succeeded with $ref. Reply {"steps": []} if nothing more is needed.`;
}

/** Sent back once when a plan does not validate. */
export function repairRequest(problems: readonly string[]): string {
  return `The plan has problems:\n${problems.map((p) => `- ${p}`).join("\n")}\nReply with the corrected, complete plan in the same JSON format.`;
}

export function synthesisPrompt(systemPrompt: string): string {
  return `${base(systemPrompt)}

A plan was carried out with tools; its calls and results are in the conversation. Answer the user's request from them, concisely and in plain language. Do not show raw JSON or talk about tools. If a step failed and the answer is incomplete, say what is missing.`;
}
