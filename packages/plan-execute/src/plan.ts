import { parseArgsNow, type ToolRegistry } from "@agent-core/core";
import { z } from "zod";

/** What the planner replies: tool steps, optionally with ids and dependencies. */
export const planSchema = z.object({
  steps: z.array(
    z.object({
      id: z.string().optional().describe('Short unique id such as "s1"; later steps refer to it.'),
      tool: z.string().describe("The name of one of the available tools."),
      args: z
        .record(z.string(), z.unknown())
        .optional()
        .describe("Arguments matching the tool's input schema."),
      dependsOn: z.array(z.string()).optional().describe("Ids of the steps that must finish first."),
    }),
  ),
});
export type PlanReply = z.infer<typeof planSchema>;

/** The most steps one plan may have: far more than a model's context could hold the results of. */
export const MAX_PLAN_STEPS = 1_000;
/**
 * How deep a step's arguments may nest, counting their own object: their `$ref`s are found and
 * replaced by recursion, which arguments a few thousand levels deep would take past the stack.
 */
export const MAX_ARGS_DEPTH = 100;

/**
 * What keeps a reply from being read as a plan at all, checked before anything walks it: more
 * than `MAX_PLAN_STEPS` steps, or arguments nested more than `MAX_ARGS_DEPTH` levels.
 */
export function planLimitProblems(reply: PlanReply): string[] {
  if (reply.steps.length > MAX_PLAN_STEPS)
    return [
      `the plan has ${reply.steps.length} steps, more than the ${MAX_PLAN_STEPS} a plan may have; plan fewer, larger steps`,
    ];
  return reply.steps.flatMap((step, index) =>
    nestsDeeperThan(step.args, MAX_ARGS_DEPTH)
      ? [`the arguments of step ${index + 1} nest more than ${MAX_ARGS_DEPTH} levels deep`]
      : [],
  );
}

/** Whether `value` has objects or arrays more than `levels` deep; it looks no deeper than that. */
function nestsDeeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (levels === 0) return true;
  return Object.values(value).some((item) => nestsDeeperThan(item, levels - 1));
}

export interface PlanStep {
  id: string;
  tool: string;
  args: Record<string, unknown>;
  /** Steps this one waits for: the declared ones plus every step its `$ref`s point to. */
  dependsOn: string[];
}

/**
 * Gives every step a usable id (the model's when it is one, else s1, s2, …) and adds the steps
 * that `$ref`s point to as dependencies. `taken` holds ids of steps that already ran. A step whose
 * id the model already gave an earlier step keeps that step's id, for `validatePlan` to report:
 * renaming it would silently change which step the `$ref`s to that id mean; so does one that gives
 * a new step the id of a step that succeeded (`completed`). (Ids that differ but
 * are the same once cleaned and cut are renamed: the `$ref`s name each by what the model wrote.)
 */
export function normalizePlan(
  reply: PlanReply,
  taken: ReadonlySet<string> = new Set(),
  completed: ReadonlySet<string> = new Set(),
): PlanStep[] {
  const used = new Set(taken);
  const idOf = new Map<string, string>();
  const steps = reply.steps.map((step, index) => {
    const rest = { tool: step.tool, args: step.args ?? {}, dependsOn: step.dependsOn ?? [] };
    const wanted = step.id
      ?.trim()
      .replace(/[^a-zA-Z0-9_-]/g, "")
      .slice(0, 16);
    // What the model wrote is the id its `dependsOn` use, also when no character of it is kept
    // ("!!"); a blank one is no id at all.
    const given = step.id?.trim() ? step.id : undefined;
    const earlier = given === undefined ? undefined : idOf.get(given);
    if (earlier !== undefined) return { id: earlier, ...rest };
    // The id of a step that succeeded (one of `completed`, which `taken` holds) is kept too, for
    // `validatePlan` to report: the $refs to it could mean that step's result or the new step's.
    let id = wanted && (completed.has(wanted) || !used.has(wanted)) ? wanted : undefined;
    for (let n = index + 1; id === undefined; n++) if (!used.has(`s${n}`)) id = `s${n}`;
    used.add(id);
    if (given !== undefined) idOf.set(given, id);
    return { id, ...rest };
  });
  const rename = (id: string) => idOf.get(id) ?? id;
  return steps.map((step) => {
    const args = renameRefs(step.args, rename) as Record<string, unknown>;
    const dependsOn = new Set([...step.dependsOn.map(rename), ...refsIn(args).map((ref) => ref.stepId)]);
    return { ...step, args, dependsOn: [...dependsOn] };
  });
}

/**
 * The problems a plan has before anything runs: ids given to more than one step, unknown tools,
 * arguments that fail the tool's schema (checked when they hold no `$ref`; those are checked once
 * resolved), dependencies on steps that do not exist, and cycles. `completed` are steps of earlier
 * plans one may refer to.
 */
export function validatePlan(
  steps: readonly PlanStep[],
  tools: ToolRegistry,
  completed: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  const ids = new Set(steps.map((step) => step.id));
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const step of steps) (seen.has(step.id) ? shared : seen).add(step.id);
  for (const id of shared) problems.push(`more than one step has the id "${id}"; give every step its own id`);
  const reused = [...ids].filter((id) => completed.has(id));
  for (const id of reused)
    problems.push(`a step of an earlier plan has the id "${id}"; give every new step a new id`);
  for (const step of steps) {
    const tool = tools.get(step.tool);
    if (tool === undefined) {
      problems.push(
        `step ${step.id}: unknown tool "${step.tool}" (available: ${tools.names().join(", ") || "none"})`,
      );
      continue;
    }
    for (const dependency of step.dependsOn)
      if (!ids.has(dependency) && !completed.has(dependency))
        problems.push(`step ${step.id}: depends on "${dependency}", which is not a step of the plan`);
    if (refsIn(step.args).length > 0) continue;
    // A schema that validates asynchronously is left to the check made when the step runs.
    const parsed = parseArgsNow(tool.inputSchema, step.args);
    if (parsed?.success === false)
      problems.push(
        `step ${step.id}: invalid arguments for "${step.tool}": ${parsed.error.issues
          .map((issue) =>
            issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message,
          )
          .join("; ")}`,
      );
  }
  // Which step an id means is unknown while it is shared or reused, so a cycle through it would be made up.
  const cycle = shared.size === 0 && reused.length === 0 ? findCycle(steps) : undefined;
  if (cycle) problems.push(`steps ${cycle.join(", ")} depend on each other`);
  return problems;
}

export interface StepRef {
  stepId: string;
  /** The path inside the step's result; empty for the whole result. */
  path: string[];
}

const REF = /^steps\.([a-zA-Z0-9_-]+)\.result(?:\.(.+))?$/;

/** `{ "$ref": "steps.<id>.result.<path>" }`, the one way an argument refers to an earlier result. */
export function parseRef(value: unknown): StepRef | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  const ref = (value as { $ref?: unknown }).$ref;
  if (keys.length !== 1 || typeof ref !== "string") return undefined;
  const match = REF.exec(ref);
  if (!match) return undefined;
  return { stepId: match[1] as string, path: match[2] === undefined ? [] : match[2].split(".") };
}

export function refsIn(value: unknown): StepRef[] {
  const ref = parseRef(value);
  if (ref) return [ref];
  if (Array.isArray(value)) return value.flatMap(refsIn);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(refsIn);
  return [];
}

/**
 * Replaces every `$ref` with the value it points to; throws with a clear message when it cannot.
 * A path follows only the result's own properties: a plan is model output, and an inherited one
 * (`__proto__`, `constructor`) would hand a tool `Object.prototype` or a built-in function.
 */
export function resolveRefs(value: unknown, results: ReadonlyMap<string, unknown>): unknown {
  const ref = parseRef(value);
  if (ref) {
    if (!results.has(ref.stepId))
      throw new Error(`refers to the result of step ${ref.stepId}, which has none`);
    let current = results.get(ref.stepId);
    for (const key of ref.path) {
      if (current === null || typeof current !== "object" || !Object.hasOwn(current, key))
        throw new Error(`refers to steps.${ref.stepId}.result.${ref.path.join(".")}, which does not exist`);
      current = (current as Record<string, unknown>)[key];
    }
    return current;
  }
  if (Array.isArray(value)) return value.map((item) => resolveRefs(item, results));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveRefs(item, results)]));
  return value;
}

function renameRefs(value: unknown, rename: (id: string) => string): unknown {
  const ref = parseRef(value);
  if (ref) return { $ref: ["steps", rename(ref.stepId), "result", ...ref.path].join(".") };
  if (Array.isArray(value)) return value.map((item) => renameRefs(item, rename));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renameRefs(item, rename)]));
  return value;
}

/**
 * `steps` ordered so that each comes after those of `steps` it depends on (dependencies outside
 * `steps` do not count), steps that depend on none first, in their order. A plan has no cycles
 * (`validatePlan`): every step is placed.
 */
export function inDependencyOrder(steps: readonly PlanStep[]): PlanStep[] {
  const ids = new Set(steps.map((step) => step.id));
  const waitingOn = new Map<PlanStep, number>();
  const dependents = new Map<string, PlanStep[]>();
  const ordered: PlanStep[] = [];
  for (const step of steps) {
    const inside = step.dependsOn.filter((id) => ids.has(id));
    waitingOn.set(step, inside.length);
    for (const id of inside) {
      const waiting = dependents.get(id);
      if (waiting) waiting.push(step);
      else dependents.set(id, [step]);
    }
    if (inside.length === 0) ordered.push(step);
  }
  // `ordered` grows while it is read: each step placed may free the steps that wait on it.
  for (const step of ordered)
    for (const dependent of dependents.get(step.id) ?? []) {
      const left = (waitingOn.get(dependent) as number) - 1;
      waitingOn.set(dependent, left);
      if (left === 0) ordered.push(dependent);
    }
  return ordered;
}

function findCycle(steps: readonly PlanStep[]): string[] | undefined {
  const byId = new Map(steps.map((step) => [step.id, step]));
  const state = new Map<string, "visiting" | "done">();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === "done" || !byId.has(id)) return undefined;
    if (state.get(id) === "visiting") return path.slice(path.indexOf(id));
    state.set(id, "visiting");
    path.push(id);
    // `visit` returned above for an id without a step.
    for (const dependency of (byId.get(id) as PlanStep).dependsOn) {
      const cycle = visit(dependency);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, "done");
    return undefined;
  };
  for (const step of steps) {
    const cycle = visit(step.id);
    if (cycle) return cycle;
  }
  return undefined;
}
