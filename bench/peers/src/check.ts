/** Checks every adapter follows the script: exactly K tool calls with the right values, then "done". */
import { adapters } from "./adapters/index.js";
import { check } from "./script.js";

export async function checkAll(ids?: string[]): Promise<void> {
  for (const a of adapters.filter((x) => !ids || ids.includes(x.id)))
    for (const [cycles, latencyMs, bigResults] of [
      [1, 0, false],
      [3, 0, false],
      [3, 0, true],
      [3, 2, false],
    ] as const) {
      const values: number[] = [];
      const run = await (await a.load()).make({
        cycles,
        latencyMs,
        bigResults,
        onTool: (v) => values.push(v),
      });
      for (let i = 0; i < 2; i++) {
        values.length = 0;
        const text = await run();
        check(a.id, text, values.length, cycles);
        const expected = Array.from({ length: cycles }, (_, j) => j + 1);
        if (values.join() !== expected.join())
          throw new Error(`${a.id} tool values ${values} != ${expected}`);
      }
      // two overlapping runs on one definition
      values.length = 0;
      const texts = await Promise.all([run(), run()]);
      for (const text of texts) check(a.id, text, values.length / 2, cycles);
    }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await checkAll(process.argv.slice(2).length ? process.argv.slice(2) : undefined);
  console.log("every adapter follows the script");
}
