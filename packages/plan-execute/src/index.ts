import { registerOrchestrator } from "@agent-core/core";
import { type PlanExecuteOptions, planExecute } from "./plan-execute.js";

// Importing this package makes "plan-execute" available by name; it does not become the default.
registerOrchestrator<PlanExecuteOptions>("plan-execute", (options) => planExecute(options));

export { type PlanReply, type PlanStep, planSchema, resolveRefs, validatePlan } from "./plan.js";
export { PlanError, type PlanExecuteOptions, PlanExecuteOrchestrator, planExecute } from "./plan-execute.js";
