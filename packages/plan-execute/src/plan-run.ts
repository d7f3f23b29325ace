import {
  AgentError,
  type AssistantMessage,
  AwaitingApprovalError,
  AwaitingClientToolError,
  type LlmMessage,
  type RunContext,
  SKIPPED_BY_STEERING,
  StructuredOutputError,
  type ToolCall,
  type ToolResultMessage,
} from "@agent-core/core";
import { callIdPrefix, callIdsIn, newCallId } from "./call-ids.js";
import {
  inDependencyOrder,
  normalizePlan,
  type PlanReply,
  type PlanStep,
  planLimitProblems,
  planSchema,
  resolveRefs,
  validatePlan,
} from "./plan.js";
import { type Progress, planningPrompt, repairRequest, replanRequest, synthesisPrompt } from "./prompts.js";
import { StepSchedule } from "./step-schedule.js";

// One turn of plan-execute (plan, execute with replanning, synthesize), and the waves it runs.

/** The planner could not produce a usable plan. */
export class PlanError extends AgentError {
  constructor(message: string, cause?: unknown) {
    super("invalid_plan", message, { cause });
  }
}

/** Where the orchestrator holds the waves whose batch runs or waits (see `PlanExecuteOrchestrator`). */
export interface WaveBook {
  hold(wave: Wave): void;
  drop(wave: Wave): void;
}

/** A wave of steps: its calls, and where its plan goes on once its batch has run (in a later run, when it suspends). */
export interface Wave {
  readonly run: PlanRun;
  readonly calls: readonly ToolCall[];
  readonly byCallId: ReadonlyMap<string, PlanStep>;
  /** A step of the wave already failed before its batch (its reference did not resolve). */
  readonly failedBefore: boolean;
  /** The plan the wave belongs to, and its steps still to run after the wave (read when it resumes: its plan stopped there). */
  readonly plan: PlanStep[];
  pending(): PlanStep[];
}

/** One turn: plan, execute with replanning, synthesize. */
export class PlanRun {
  readonly #results = new Map<string, unknown>();
  readonly #failed = new Map<string, string>();
  readonly #done: { step: PlanStep; result: unknown }[] = [];
  /**
   * The plan the last `plan_created` announced: a step's `index` and `stepCount` are its place in
   * it, also for the steps that go on without a replan (when the budget is spent), a subset of it.
   */
  #latest: PlanStep[] = [];
  /** Each step's place in `#latest`. */
  #indexInLatest = new Map<PlanStep, number>();
  /** Every tool-call id of the history, read from it once per run: the waves add theirs. */
  #callIds: Set<string> | undefined;
  #replans = 0;

  constructor(
    // A resumed wave goes on in the run (and turn) that resumes it.
    private ctx: RunContext,
    private turn: number,
    private readonly maxReplans: number,
    private readonly maxConcurrency: number,
    private readonly waves: WaveBook,
  ) {}

  async answer(): Promise<AssistantMessage> {
    return this.#finish(await this.#plan());
  }

  /** Runs the wave that suspended (with the decisions made), then the rest of its plan, then answers. */
  async resume(ctx: RunContext, turn: number, wave: Wave): Promise<AssistantMessage> {
    this.ctx = ctx;
    this.turn = turn;
    this.#callIds = undefined;
    const outcome = await this.#runBatch(wave);
    const pending = wave.pending();
    if (outcome.steered)
      return this.#finish(await this.#revise([...outcome.cutOff, ...pending], "steering", wave.plan));
    if (outcome.failed) return this.#finish(await this.#revise(pending, "failure", wave.plan));
    return this.#finish(await this.#execute(wave.plan, pending));
  }

  /** Runs the steps left, then streams the answer (a steering message then gets a plan of its own). */
  async #finish(planned: PlanStep[]): Promise<AssistantMessage> {
    let steps = planned;
    for (;;) {
      while (steps.length > 0) steps = await this.#execute(steps);
      // Steering that came while the last plan was made, when it left no step to run: no wave took
      // it, and the answer, made without tools, could not act on it. It revises the plan as between steps.
      const unplanned = await this.ctx.steering.take();
      if (unplanned.length > 0) {
        this.ctx.applySteering(unplanned);
        steps = await this.#revise([], "steering", this.#latest);
        continue;
      }
      const decision = await this.ctx.decide({
        tools: false,
        system: synthesisPrompt(this.ctx.systemPrompt),
      });
      // Steering that arrived while the answer streamed gets a plan of its own.
      const steering = await this.ctx.steering.take();
      if (steering.length === 0) return decision.message;
      this.ctx.applySteering(steering);
      steps = await this.#plan();
    }
  }

  /** Asks for a plan (or a revision, with `request`), validates it, and sends it back once if needed. */
  async #plan(request?: string): Promise<PlanStep[]> {
    const system = planningPrompt(this.ctx.systemPrompt, this.ctx.tools);
    const taken = new Set([...this.#results.keys(), ...this.#failed.keys()]);
    const messages: LlmMessage[] = request ? [{ role: "user", content: request }] : [];
    const reply = await this.#generate(system, messages);
    let { steps, problems } = this.#read(reply.object, taken);
    if (problems.length > 0) {
      messages.push(
        { role: "assistant", content: [{ type: "text", text: reply.text }] },
        { role: "user", content: repairRequest(problems) },
      );
      ({ steps, problems } = this.#read((await this.#generate(system, messages)).object, taken));
      if (problems.length > 0)
        throw new PlanError(
          `The planner's plan is still invalid after one correction: ${problems.join("; ")}`,
        );
    }
    this.#latest = steps;
    this.#indexInLatest = new Map(steps.map((step, index) => [step, index]));
    this.ctx.emit({
      type: "plan_created",
      steps: steps.map(({ id, tool, args, dependsOn }) => ({
        id,
        tool,
        args,
        ...(dependsOn.length ? { dependsOn } : {}),
      })),
    });
    return steps;
  }

  /** The reply's steps, and its problems; a plan past `planLimitProblems` is not read further. */
  #read(reply: PlanReply, taken: ReadonlySet<string>): { steps: PlanStep[]; problems: string[] } {
    const beyondLimits = planLimitProblems(reply);
    if (beyondLimits.length > 0) return { steps: [], problems: beyondLimits };
    const completed = new Set(this.#results.keys());
    const steps = normalizePlan(reply, taken, completed);
    return { steps, problems: validatePlan(steps, this.ctx.tools, completed) };
  }

  async #generate(system: string, messages: readonly LlmMessage[]) {
    try {
      return await this.ctx.generateObject<PlanReply>(planSchema, {
        system,
        messages,
        name: "plan",
        toolCallsOf: (plan) => plan.steps.length,
      });
    } catch (error) {
      if (error instanceof StructuredOutputError)
        throw new PlanError(
          `The planner did not return a valid plan after ${error.attempts} attempts: ${error.message.replace(/^[^:]*: /, "")}`,
          error,
        );
      throw error;
    }
  }

  /**
   * Runs the plan wave by wave (each wave: the steps whose dependencies succeeded) and returns the
   * steps still to run: none when it finished, a revised plan after a failure or steering.
   */
  async #execute(plan: PlanStep[], from: PlanStep[] = plan): Promise<PlanStep[]> {
    const schedule = new StepSchedule(from, (id) => this.#results.has(id));
    while (schedule.size > 0) {
      const steering = await this.ctx.steering.take();
      if (steering.length > 0) {
        this.ctx.applySteering(steering);
        return this.#revise(schedule.pending(), "steering", plan);
      }
      const ready = schedule.takeReady();
      if (ready.length === 0) {
        // None can run: each waits on a failed step, or on a step that waits on one.
        this.#skip(schedule.pending());
        return this.#revise([], "failure", plan);
      }
      const outcome = await this.#runWave(ready, plan, () => schedule.pending());
      if (outcome.steered) return this.#revise([...outcome.cutOff, ...schedule.pending()], "steering", plan);
      if (outcome.failed) return this.#revise(schedule.pending(), "failure", plan);
      for (const step of ready) schedule.succeeded(step.id);
    }
    return [];
  }

  /** A new plan for what is left, when the budget allows; otherwise the plan goes on as it was. */
  async #revise(pending: PlanStep[], reason: Progress["reason"], plan: PlanStep[]): Promise<PlanStep[]> {
    const runnable = pending.filter((step) => !step.dependsOn.some((id) => this.#failed.has(id)));
    if (this.#replans >= this.maxReplans) {
      this.#skip(pending.filter((step) => !runnable.includes(step)));
      return runnable;
    }
    this.#replans++;
    const failed = plan
      .filter((step) => this.#failed.has(step.id))
      .map((step) => ({ step, error: this.#failed.get(step.id) as string }));
    return this.#plan(replanRequest({ done: this.#done, failed, notRun: pending, reason }));
  }

  async #runWave(wave: PlanStep[], plan: PlanStep[], pending: () => PlanStep[]): Promise<BatchOutcome> {
    const byCallId = new Map<string, PlanStep>();
    const calls: ToolCall[] = [];
    let failed = false;
    // A call's id must be new to the history (the transcript keeper refuses a repeat).
    this.#callIds ??= callIdsIn(this.ctx.messages.all);
    const taken = this.#callIds;
    const prefix = callIdPrefix(this.ctx.runId, this.turn);
    for (const step of wave) {
      let args: unknown;
      try {
        args = resolveRefs(step.args, this.#results);
      } catch (error) {
        this.#notRun(step, `not run: ${(error as Error).message}`);
        failed = true;
        continue;
      }
      const call = { id: newCallId(taken, prefix, step.id), name: step.tool, args };
      byCallId.set(call.id, step);
      calls.push(call);
    }
    if (calls.length === 0) return { failed, steered: false, cutOff: [] };
    this.ctx.messages.append({
      role: "assistant",
      content: calls.map((call) => ({
        type: "toolCall" as const,
        id: call.id,
        name: call.name,
        args: call.args,
      })),
      stopReason: "toolUse",
      timestamp: Date.now(),
    });
    return this.#runBatch({ run: this, calls, byCallId, failedBefore: failed, plan, pending });
  }

  /** The wave's batch, its steps' events around each call; a wave that suspends is handed on first. */
  async #runBatch(wave: Wave): Promise<BatchOutcome> {
    const stepOf = (call: ToolCall) => wave.byCallId.get(call.id) as PlanStep;
    let batch: Awaited<ReturnType<RunContext["executeTools"]>>;
    this.waves.hold(wave);
    try {
      batch = await this.ctx.executeTools(wave.calls, {
        concurrency: this.maxConcurrency,
        // Cutting the wave short only makes sense when steering can still revise the plan; once
        // the replans are spent the plan goes on, and the steering waits for the next step.
        interruptOnSteering: this.#replans < this.maxReplans,
        beforeEach: (call) => this.#emitStart(stepOf(call), call.args),
        afterEach: (call, result) => this.#record(stepOf(call), call.args, result),
      });
    } catch (error) {
      // A suspended wave stays held for the run that resumes it (which may have taken it already).
      if (!(error instanceof AwaitingApprovalError || error instanceof AwaitingClientToolError))
        this.waves.drop(wave);
      throw error;
    }
    this.waves.drop(wave);
    const failed = wave.failedBefore || batch.results.some((result) => result.status !== "ok");
    const cutOff = wave.calls.filter((_call, index) => isCutOffBySteering(batch.results[index])).map(stepOf);
    return { failed, steered: batch.steering.length > 0, cutOff };
  }

  #record(step: PlanStep, args: unknown, result: ToolResultMessage): void {
    const base = {
      type: "plan_step_end" as const,
      index: this.#indexInLatest.get(step) ?? -1,
      stepCount: this.#latest.length,
      tool: step.tool,
      args,
    };
    if (result.status === "ok") {
      this.#results.set(step.id, result.details);
      this.#done.push({ step, result: result.details });
      this.ctx.emit({ ...base, result: result.details });
    } else {
      // A step the steering cut off did not fail: it is still to run, in the revised plan.
      if (!isCutOffBySteering(result)) this.#failed.set(step.id, result.content);
      this.ctx.emit({ ...base, error: result.content });
    }
  }

  #emitStart(step: PlanStep, args: unknown): void {
    this.ctx.emit({
      type: "plan_step_start",
      index: this.#indexInLatest.get(step) ?? -1,
      stepCount: this.#latest.length,
      tool: step.tool,
      args,
    });
  }

  /** A step that cannot run (its reference failed): it ends at once, without a tool call. */
  #notRun(step: PlanStep, error: string): void {
    this.#emitStart(step, step.args);
    this.#failed.set(step.id, error);
    this.ctx.emit({
      type: "plan_step_end",
      index: this.#indexInLatest.get(step) ?? -1,
      stepCount: this.#latest.length,
      tool: step.tool,
      args: step.args,
      error,
    });
  }

  /** Steps that wait on a failed step, directly or through each other: each ends naming the step it waited on. */
  #skip(steps: PlanStep[]): void {
    for (const step of inDependencyOrder(steps)) {
      const failedDependency = step.dependsOn.find((id) => this.#failed.has(id));
      this.#notRun(step, `not run: step ${failedDependency} failed`);
    }
  }
}

/** What a wave's batch did: a step failed, steering came, and the steps it kept from running. */
interface BatchOutcome {
  failed: boolean;
  steered: boolean;
  cutOff: PlanStep[];
}

function isCutOffBySteering(result: ToolResultMessage | undefined): boolean {
  return result?.status === "skipped" && result.content === SKIPPED_BY_STEERING;
}
