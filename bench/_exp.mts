import "@agent-core/agentic";
import { Agent } from "@agent-core/core";
import { cycleModel } from "./cycle-model.js";
import { addTool, bareLoop } from "./loops.js";

const model = cycleModel(50);
async function noConsumer() {
  const a = new Agent({ provider: model, tools: [addTool], limits: { maxCycles: 60 } });
  return (await a.prompt("x").result()).text;
}
async function withConsumer() {
  const a = new Agent({ provider: model, tools: [addTool], limits: { maxCycles: 60 } });
  const r = a.prompt("x");
  for await (const _ of r) {
  }
  return (await r.result()).text;
}
const variants = { bare: () => bareLoop(model), noConsumer, withConsumer };
for (const [n, f] of Object.entries(variants)) for (let i = 0; i < 300; i++) await f();
for (let round = 0; round < 3; round++)
  for (const [n, f] of Object.entries(variants)) {
    const t = performance.now();
    for (let i = 0; i < 400; i++) await f();
    console.log(n.padEnd(14), (((performance.now() - t) * 1000) / 400 / 50).toFixed(2));
  }
