import type { AgentEvent } from "@agent-core/core";
import { describe, expect, expectTypeOf, it, vi } from "vitest";
import type { z } from "zod";
import type { planEventSchemas } from "./events.js";

const stepEnd = {
  type: "plan_step_end",
  runId: "r1",
  seq: 6,
  ts: 1795316865540,
  index: 0,
  stepCount: 1,
  tool: "calculator",
  args: { expression: "15*3" },
  result: { result: 45 },
};

describe("plan-execute's events", () => {
  it("are unknown to core until the package is imported, then validate through the registry", async () => {
    // Fresh module instances: core's registry as a program that has not imported plan-execute sees it.
    vi.resetModules();
    const core = await import("@agent-core/core");
    const before = core.safeParseAgentEvent(stepEnd);
    expect(before.success || before.error.message).toMatch(/^Unknown event type "plan_step_end"\./);

    const { planEventSchemas } = await import("./index.js");
    expect(core.parseAgentEvent(stepEnd)).toEqual(stepEnd);
    for (const [type, schema] of Object.entries(planEventSchemas))
      expect(core.eventSchemaFor(type)).toBe(schema);
    expect(() => core.parseAgentEvent({ ...stepEnd, stepCount: -1 })).toThrow(
      /^Invalid "plan_step_end" event:\n.+\n.+at stepCount$/,
    );
    expect(core.eventSchemas).not.toHaveProperty("plan_step_end");
  });

  it("are part of AgentEvent for whoever imports the package, and narrow by type", () => {
    const narrow = (event: AgentEvent) => (event.type === "plan_step_end" ? event : undefined);
    type StepEnd = z.infer<typeof planEventSchemas.plan_step_end>;
    expectTypeOf(narrow).returns.toEqualTypeOf<StepEnd | undefined>();
    expectTypeOf<StepEnd>().toHaveProperty("stepCount").toBeNumber();
  });
});
