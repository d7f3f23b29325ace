import { describe, expect, it } from "vitest";
import type { PlanStep } from "./plan.js";
import { StepSchedule } from "./step-schedule.js";

const step = (id: string, dependsOn: string[] = []): PlanStep => ({ id, tool: "add", args: {}, dependsOn });
const ids = (steps: readonly PlanStep[]) => steps.map((s) => s.id);

describe("StepSchedule", () => {
  it("gives the steps whose dependencies have results, in plan order, and frees their dependents as each succeeds", () => {
    const schedule = new StepSchedule(
      [step("d", ["b", "c"]), step("c", ["a"]), step("b", ["old"]), step("a")],
      (id) => id === "old",
    );
    expect(ids(schedule.takeReady())).toEqual(["b", "a"]);
    expect(ids(schedule.pending())).toEqual(["d", "c"]);
    expect(schedule.takeReady()).toEqual([]);
    schedule.succeeded("a");
    expect(ids(schedule.takeReady())).toEqual(["c"]);
    schedule.succeeded("c");
    expect(schedule.takeReady()).toEqual([]);
    schedule.succeeded("b");
    expect(ids(schedule.takeReady())).toEqual(["d"]);
    expect(schedule.size).toBe(0);
  });

  it("leaves the steps that wait on a step with no result pending, never ready", () => {
    const schedule = new StepSchedule([step("a"), step("b", ["a"]), step("c", ["b"])], () => false);
    expect(ids(schedule.takeReady())).toEqual(["a"]);
    expect(schedule.takeReady()).toEqual([]);
    expect(ids(schedule.pending())).toEqual(["b", "c"]);
  });

  it("reads each step's dependencies once, however many waves a long chain takes", () => {
    let reads = 0;
    const chain = Array.from({ length: 3000 }, (_, index) => {
      const dependsOn = index === 0 ? [] : [`s${index - 1}`];
      return Object.defineProperty(step(`s${index}`), "dependsOn", {
        get: () => {
          reads++;
          return dependsOn;
        },
      });
    });
    const schedule = new StepSchedule(chain, () => false);
    const order: string[] = [];
    for (let wave = schedule.takeReady(); wave.length > 0; wave = schedule.takeReady())
      for (const done of wave) {
        order.push(done.id);
        schedule.succeeded(done.id);
      }
    expect(order).toEqual(ids(chain));
    expect(reads).toBe(chain.length);
  });
});
