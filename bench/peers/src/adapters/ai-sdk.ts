import { stepCountIs, ToolLoopAgent, tool } from "ai";
import { z } from "zod";
import { cycleModel, slowCycleModel } from "../../../cycle-model.js";
import { PROMPT, resultText } from "../script.js";
import type { Adapter, RunConfig } from "../types.js";

/**
 * The AI SDK's agent loop: one `ToolLoopAgent` (it keeps no history between calls, so one serves every
 * run) with the same `cycleModel` LanguageModelV4 object agent-core gets, `stopWhen: stepCountIs(K+2)`,
 * `agent.stream()` with `fullStream` read to the end as a UI would, then the final text.
 */
export const aiSdk: Adapter = {
  id: "ai-sdk",
  label: "AI SDK ToolLoopAgent.stream",
  packages: ["ai"],
  async make(config: RunConfig) {
    const model =
      config.latencyMs > 0 ? slowCycleModel(config.cycles, config.latencyMs) : cycleModel(config.cycles);
    const agent = new ToolLoopAgent({
      model,
      tools: {
        add: tool({
          description: "Adds two numbers.",
          inputSchema: z.object({ a: z.number(), b: z.number() }),
          execute: ({ a, b }) => {
            config.onTool?.(a + b);
            return resultText(a + b, config.bigResults);
          },
        }),
      },
      stopWhen: stepCountIs(config.cycles + 2),
    });
    return async () => {
      const result = await agent.stream({ prompt: PROMPT });
      for await (const _part of result.fullStream) {
        // a UI would render each part here
      }
      return await result.text;
    };
  },
};
