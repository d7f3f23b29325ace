import "@agent-core/agentic";
import { Agent } from "@agent-core/core";
import { cycleModel } from "./cycle-model.js";
import { addTool, bareLoop } from "./loops.js";

const m1 = cycleModel(1),
  m50 = cycleModel(50);
const ours = (m: any) => async () => {
  const a = new Agent({ provider: m, tools: [addTool], limits: { maxCycles: 60 } });
  return (await a.prompt("x").result()).text;
};
const agentOnly = async () => new Agent({ provider: m1, tools: [addTool] });
const variants: Record<string, () => Promise<unknown>> = {
  bare1: () => bareLoop(m1),
  bare50: () => bareLoop(m50),
  ours1: ours(m1),
  ours50: ours(m50),
  newAgent: agentOnly,
};
for (const f of Object.values(variants)) for (let i = 0; i < 300; i++) await f();
for (let round = 0; round < 2; round++)
  for (const [n, f] of Object.entries(variants)) {
    const N = n.endsWith("50") ? 300 : 5000;
    const t = performance.now();
    for (let i = 0; i < N; i++) await f();
    console.log(n.padEnd(10), (((performance.now() - t) * 1000) / N).toFixed(2), "µs/run");
  }
