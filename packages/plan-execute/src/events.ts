import { defineEventSchema } from "@agent-core/core";
import { z } from "zod";

const planStepSchema = z.object({
  id: z.string().optional(),
  tool: z.string(),
  args: z.unknown(),
  dependsOn: z.array(z.string()).optional(),
});

const index = z.number().int().nonnegative();
const stepCount = z.number().int().nonnegative();

/**
 * The events plan-execute emits, envelope included. Importing the package registers them with core's
 * event registry, so `parseAgentEvent` and the conformance kit validate them like core's own.
 */
export const planEventSchemas = {
  plan_created: defineEventSchema("plan_created", { steps: z.array(planStepSchema) }),
  plan_step_start: defineEventSchema("plan_step_start", {
    index,
    stepCount,
    tool: z.string(),
    args: z.unknown(),
  }),
  plan_step_end: defineEventSchema("plan_step_end", {
    index,
    stepCount,
    tool: z.string(),
    args: z.unknown(),
    result: z.unknown().optional(),
    error: z.string().optional(),
  }),
};

// Makes the plan events part of `AgentEvent` wherever this package is imported: `ctx.emit` accepts
// them, and `event.type === "plan_step_end"` narrows.
declare module "@agent-core/core" {
  interface PluginEvents {
    plan_created: z.infer<typeof planEventSchemas.plan_created>;
    plan_step_start: z.infer<typeof planEventSchemas.plan_step_start>;
    plan_step_end: z.infer<typeof planEventSchemas.plan_step_end>;
  }
}
