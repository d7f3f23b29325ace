import { registerEventSchema, registerOrchestrator } from "@agent-core/core";
import { planEventSchemas } from "./events.js";
import { type PlanExecuteOptions, planExecute } from "./plan-execute.js";

// Importing this package makes "plan-execute" available by name (it does not become the default)
// and its events known to every consumer that validates events through core's registry.
registerOrchestrator<PlanExecuteOptions>("plan-execute", (options) => planExecute(options));
for (const [type, schema] of Object.entries(planEventSchemas)) registerEventSchema(type, schema);

export { planEventSchemas } from "./events.js";
export { type PlanReply, type PlanStep, planSchema, resolveRefs, validatePlan } from "./plan.js";
export { PlanError, type PlanExecuteOptions, PlanExecuteOrchestrator, planExecute } from "./plan-execute.js";
