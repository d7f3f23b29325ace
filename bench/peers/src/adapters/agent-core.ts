import { Agent, defineTool } from "agent-core";
import { z } from "zod";
import { cycleModel, slowCycleModel } from "../../../cycle-model.js";
import { PROMPT, resultText } from "../script.js";
import type { Adapter, RunConfig } from "../types.js";

/**
 * agent-core, the README's way: `new Agent({ provider, tools })` per run (the Agent owns its history),
 * default orchestrator (agentic) and settings, `maxCycles` raised to fit the run, every event read with
 * `for await` as a UI would, then `run.result()`. The package is the workspace's build
 * (`packages/agent-core/dist`, through the root `node_modules/agent-core` link).
 */
export const agentCore: Adapter = {
  id: "agent-core",
  label: "agent-core",
  packages: [],
  make: (config) => agentCoreRuns(config, "for await"),
};

/**
 * The same agent with its events delivered to a no-op `agent.on("*", …)` listener instead of a
 * `for await` reader: the way pi's harness reads pi (`subscribe`). The targets are judged on the
 * `for await` variant; this one shows what the reader costs.
 */
export const agentCoreListener: Adapter = {
  id: "agent-core-on",
  label: "agent-core, agent.on listener",
  packages: [],
  make: (config) => agentCoreRuns(config, "listener"),
};

function ignore(): void {}

async function agentCoreRuns(config: RunConfig, reader: "for await" | "listener") {
  const provider =
    config.latencyMs > 0 ? slowCycleModel(config.cycles, config.latencyMs) : cycleModel(config.cycles);
  const add = defineTool({
    name: "add",
    description: "Adds two numbers.",
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => {
      config.onTool?.(a + b);
      return resultText(a + b, config.bigResults);
    },
  });
  const limits = { maxCycles: config.cycles + 2 };
  return async () => {
    const agent = new Agent({ provider, tools: [add], limits });
    if (reader === "listener") agent.on("*", ignore);
    const run = agent.prompt(PROMPT);
    if (reader === "for await")
      for await (const _event of run) {
        // a UI would render each event here
      }
    const result = await run.result();
    if (result.stopReason !== "completed")
      throw new Error(`agent-core run ended with ${result.stopReason}: ${result.error?.message}`);
    return result.text;
  };
}
