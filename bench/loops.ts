import "@agent-core/agentic";
import { Agent, defineTool } from "@agent-core/core";
import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { z } from "zod";

const addSchema = z.object({ a: z.number(), b: z.number() });
export const addTool = defineTool({
  name: "add",
  description: "Adds two numbers.",
  inputSchema: addSchema,
  execute: ({ a, b }) => a + b,
});
const modelTools: LanguageModelV4FunctionTool[] = [
  { type: "function", name: "add", description: addTool.description, inputSchema: addTool.jsonSchema },
];

/**
 * The floor: a hand-written loop over the same model's `doStream()`: read the stream, validate the
 * arguments with the same zod schema, run the tool, append the v4 messages, call again.
 */
export async function bareLoop(model: LanguageModelV4): Promise<string> {
  const prompt: LanguageModelV4Prompt = [{ role: "user", content: [{ type: "text", text: "count" }] }];
  for (;;) {
    const { stream } = await model.doStream({ prompt, tools: modelTools });
    const reader = stream.getReader();
    let text = "";
    const calls: { toolCallId: string; toolName: string; input: string }[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value.type === "text-delta") text += value.delta;
      else if (value.type === "tool-call") calls.push(value);
    }
    if (calls.length === 0) return text;
    prompt.push({
      role: "assistant",
      content: calls.map((c) => ({
        type: "tool-call",
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        input: JSON.parse(c.input),
      })),
    });
    prompt.push({
      role: "tool",
      content: calls.map((c) => {
        const { a, b } = addSchema.parse(JSON.parse(c.input));
        return {
          type: "tool-result",
          toolCallId: c.toolCallId,
          toolName: c.toolName,
          output: { type: "text", value: String(a + b) },
        };
      }),
    });
  }
}

/** An agent made the README's way: the default (agentic) orchestrator and default limits. */
export function readmeAgent(model: LanguageModelV4): Agent {
  return new Agent({ provider: model, tools: [addTool] });
}

/** The agentic orchestrator on a fresh agent, with every event read as a UI would. */
export function agenticLoop(model: LanguageModelV4, cycles: number): Promise<string> {
  return runAgent(new Agent({ provider: model, tools: [addTool], limits: { maxCycles: cycles + 2 } }));
}

/** One run of `agent`, every event read with `for await` as a UI would; its text, if it completed. */
export async function runAgent(agent: Agent): Promise<string> {
  const run = agent.prompt("count");
  for await (const _event of run) {
    // a UI would render each event here
  }
  const result = await run.result();
  if (result.stopReason !== "completed")
    throw new Error(`run ended with ${result.stopReason}: ${result.error?.message}`);
  return result.text;
}
