import "@agent-core/agentic";
import { Agent } from "@agent-core/core";
import { cycleModel } from "./cycle-model.js";
import { addTool, bareLoop } from "./loops.js";

const m = cycleModel(50);
const which = process.argv[2];
const f =
  which === "bare"
    ? () => bareLoop(m)
    : async () => {
        const a = new Agent({ provider: m, tools: [addTool], limits: { maxCycles: 60 } });
        return (await a.prompt("x").result()).text;
      };
for (let i = 0; i < 3000; i++) await f();
