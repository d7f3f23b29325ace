import { agenticLoop } from "./loops.js";
import { cycleModel } from "./cycle-model.js";
const model = cycleModel(50);
for (let i = 0; i < 300; i++) await agenticLoop(model, 50);
const t = performance.now();
for (let i = 0; i < 1500; i++) await agenticLoop(model, 50);
console.log(((performance.now() - t) * 1000 / 1500 / 50).toFixed(2), "µs/cycle");
