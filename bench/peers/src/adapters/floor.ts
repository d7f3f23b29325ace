import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { z } from "zod";
import { cycleModel, slowCycleModel } from "../../../cycle-model.js";
import { PROMPT, resultText } from "../script.js";
import type { Adapter, RunConfig } from "../types.js";

const addSchema = z.object({ a: z.number(), b: z.number() });

/**
 * The floor: `bench/loops.ts`'s `bareLoop`, a hand-written loop over the model's `doStream()` (read the
 * stream, validate the arguments with zod, run the tool, append the v4 messages, call again), with the
 * result text made by the shared script so W3 can pad it. No framework at all.
 */
export const floor: Adapter = {
  id: "floor",
  label: "bare doStream() loop (floor)",
  packages: ["@ai-sdk/provider"],
  async make(config: RunConfig) {
    const model =
      config.latencyMs > 0 ? slowCycleModel(config.cycles, config.latencyMs) : cycleModel(config.cycles);
    const tools: LanguageModelV4FunctionTool[] = [
      {
        type: "function",
        name: "add",
        description: "Adds two numbers.",
        inputSchema: z.toJSONSchema(addSchema) as never,
      },
    ];
    return () => bareLoop(model, tools, config);
  },
};

async function bareLoop(
  model: LanguageModelV4,
  tools: LanguageModelV4FunctionTool[],
  config: RunConfig,
): Promise<string> {
  const prompt: LanguageModelV4Prompt = [{ role: "user", content: [{ type: "text", text: PROMPT }] }];
  for (;;) {
    const { stream } = await model.doStream({ prompt, tools });
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
        config.onTool?.(a + b);
        return {
          type: "tool-result",
          toolCallId: c.toolCallId,
          toolName: c.toolName,
          output: { type: "text", value: resultText(a + b, config.bigResults) },
        };
      }),
    });
  }
}
