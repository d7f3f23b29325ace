import "@agent-core/agentic";
import {
  Agent,
  type AgentEvent,
  type AgentMessage,
  type AgentRun,
  type AssistantMessage,
  type BeforeToolCallResult,
  defineTool,
  FatalToolError,
  type Orchestrator,
  openTelemetryTracing,
  type RunContext,
  type RunResult,
  rootContainer,
  runTurns,
  type ToolCall,
  TRACING,
} from "@agent-core/core";
import { planExecute } from "@agent-core/plan-execute";
import { type ScriptPart, type ScriptStep, script, scriptedModel } from "@agent-core/testing";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { vi } from "vitest";
import { z } from "zod";
import type { Action, CallSpec, PlanReplySpec, Program, ProgramStep, RaceCase, Reply } from "./generators.js";
import { SpanRecorder } from "./span-recorder.js";

/**
 * Drives one agent through a race case on a virtual clock: `setTimeout` and `Date` are faked, the
 * clock jumps from one timer to the next, and between two timers every pending promise job runs
 * (a real `setImmediate` comes after all of them). So a seed replays the same interleaving, a case
 * costs no real waiting, and "settled within the grace period" is measured exactly.
 */

/** Virtual time of every case's start, so event timestamps replay too. */
export const EPOCH = Date.UTC(2030, 0, 1);
/** Allowed beyond `abort + abortGraceMs` before a run counts as not ending (virtual ms). */
export const SETTLE_SLACK_MS = 100;
/** How long the final drain prompt may take; it runs without slow tools, hooks or hangs. */
const DRAIN_LIMIT_MS = 1_000;
/** Watched after the drain, for events an abandoned tool or hook still causes. */
const QUIET_MS = 50;
/** More model calls than any case makes: the scripted model needs a step for each. */
const MAX_MODEL_CALLS = 400;
export const DRAIN_TEXT = "[drain]";

export interface RunRecord {
  /** `prompt 2`, `approval 1`, `drain`. */
  label: string;
  kind: "prompt" | "approval" | "resumed" | "drain";
  /** The prompt's text (unique in the case). */
  text: string | undefined;
  run: AgentRun;
  createdAt: number;
  /** When its `agent_start` was heard. */
  startedAt: number | undefined;
  totalMs: number | undefined;
  /** The first `abort()` that reached it before it settled. */
  abortedAt: number | undefined;
  /** Set when that abort came before its `agent_start`. */
  queuedAbort: "run.abort()" | "agent.abort()" | undefined;
  settledAt: number | undefined;
  result: RunResult | undefined;
}

export interface Observation {
  raceCase: RaceCase;
  runs: RunRecord[];
  /** Every event an `agent.on("*")` listener heard, in order. */
  heard: AgentEvent[];
  /** When each of them was heard (virtual time; `ts` comes from the core's clock). */
  heardAt: Map<AgentEvent, number>;
  /** What the timeline did, with virtual times. */
  actions: string[];
  /** Public calls that threw (none should). */
  thrown: string[];
  steered: string[];
  followedUp: string[];
  /** The history after the drain prompt. */
  finalHistory: AgentMessage[];
  /** Each model call's prompt, as JSON. */
  modelPrompts: string[];
  /** Tool calls whose tool returned `ok` before its signal was aborted, with no `afterToolCall` delay after it. */
  finishedOk: Set<string>;
  /** False when some run never settled: the agent is wedged and the drain was not tried. */
  drained: boolean;
  /** Every span the case's runs started, through the agent's `TRACING` service. */
  spans: SpanRecorder;
}

const ACTS = ["ok", "slow", "slowIgnoringAbort", "hang", "hangIgnoringAbort", "throw", "throwLater"] as const;
const HOOK_DELAYS = ["none", "slow", "hang"] as const;
const toolArgs = z.object({
  act: z.enum(ACTS),
  ms: z.number().int().min(0),
  thrown: z.number().int(),
  returns: z.number().int(),
  gate: z.enum(["none", "approval", "block"]),
  before: z.enum(HOOK_DELAYS),
  after: z.enum(HOOK_DELAYS),
  n: z.number(),
});
type ToolArgs = z.infer<typeof toolArgs>;

const thrownValue = (index: number): unknown =>
  [
    new Error("boom"),
    "a bare string",
    undefined,
    null,
    { code: 42 },
    0,
    new FatalToolError("fatal: stop the batch"),
  ][index];

/** What an `ok` tool returns; `json: false` values become an `error` result, not `ok`. */
const returnedValue = (index: number): { value: unknown; json: boolean } =>
  [
    { value: "plain text", json: true },
    { value: 7, json: true },
    { value: { items: [1, 2] }, json: true },
    { value: undefined, json: true },
    { value: null, json: true },
    { value: [1, "two"], json: true },
    { value: "", json: true },
    { value: 10n, json: false },
  ][index] ?? { value: "plain text", json: true };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const never = () => new Promise<never>(() => {});

/** Resolves after `ms`, or rejects when `signal` aborts first. */
function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

/** Never resolves; rejects when `signal` aborts. */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason));
  });
}

/** Mutable state of one case, shared by the model, the tools and the hooks. */
class CaseState {
  /** The drain prompt: the model only answers, tools and hooks return at once. */
  draining = false;
  repliesPlayed = 0;
  plansPlayed = 0;
  callsRendered = 0;
  readonly finishedOk = new Set<string>();
  /** The `ctx` of the program's latest run, for its echo listener. */
  context: RunContext | undefined;
}

// ----- the model -----

function argsOf(spec: CallSpec, n: number): unknown {
  if (spec.badArgs) return { act: "explode", n };
  const { act, ms, thrown, returns, gate, before, after } = spec;
  return { act, ms, thrown, returns, gate, before, after, n } satisfies ToolArgs;
}

/** Tool calls as the model sends them: ids, copies and arguments. */
function renderCalls(
  specs: readonly CallSpec[],
  state: CaseState,
  freshId: (k: number) => string,
  reusedId: string,
): { id: string; name: string; args: unknown }[] {
  const calls: { id: string; name: string; args: unknown }[] = [];
  specs.forEach((spec, k) => {
    const previous = calls[k - 1];
    if (spec.copy === "twin" && previous) calls.push({ ...previous, id: freshId(k) });
    else {
      const id =
        spec.copy === "sameId" && previous ? previous.id : spec.copy === "reusedId" ? reusedId : freshId(k);
      calls.push({ id, name: spec.tool, args: argsOf(spec, state.callsRendered++) });
    }
  });
  return calls;
}

function replyParts(reply: Reply, callIndex: number, state: CaseState): ScriptPart[] {
  const parts: ScriptPart[] = [];
  for (const chunk of reply.chunks) {
    parts.push(script.text(chunk.text));
    if (chunk.pauseMs > 0) parts.push(script.delay(chunk.pauseMs));
  }
  const calls = renderCalls(reply.calls, state, (k) => `c${callIndex}_${k}`, "c_reused");
  for (const call of calls) parts.push(script.toolCall(call.name, call.args, { id: call.id }));
  if (reply.ending === "hang") parts.push(script.hang());
  if (reply.ending === "error") parts.push(script.error(new Error("the provider broke mid-stream")));
  if (reply.ending === "length") parts.push(script.finish("length"));
  return parts;
}

function planParts(plan: PlanReplySpec | undefined, state: CaseState): ScriptPart[] {
  if (plan?.kind === "garbage") return [script.text("I would rather ", "not plan.")];
  const specs = plan?.steps ?? [];
  const calls = renderCalls(
    specs.map((step) => step.call),
    state,
    (k) => `s${k}`,
    "s_reused",
  );
  const steps = calls.map((call, k) => ({
    id: call.id,
    tool: call.name,
    args: call.args,
    dependsOn: (specs[k]?.dependsOn ?? []).map((dep) => calls[dep]?.id),
  }));
  const json = JSON.stringify({ steps });
  // Streamed in three chunks, as a real provider would.
  const third = Math.ceil(json.length / 3);
  return [script.text(json.slice(0, third), json.slice(third, 2 * third), json.slice(2 * third))];
}

const isPlanning = (options: LanguageModelV4CallOptions) => options.responseFormat?.type === "json";

function buildModel(raceCase: RaceCase, state: CaseState) {
  const step: ScriptStep = (options, callIndex) => {
    if (isPlanning(options))
      return planParts(state.draining ? undefined : raceCase.plans[state.plansPlayed++], state);
    const reply = state.draining ? undefined : raceCase.replies[state.repliesPlayed++];
    return reply ? replyParts(reply, callIndex, state) : [script.text("Done", ".")];
  };
  return scriptedModel(Array.from({ length: MAX_MODEL_CALLS }, () => step));
}

// ----- the tools and hooks -----

function buildTools(raceCase: RaceCase, state: CaseState) {
  const execute = (args: ToolArgs, { signal, toolCallId }: { signal: AbortSignal; toolCallId: string }) => {
    if (state.draining) return "drained";
    const done = () => {
      const { value, json } = returnedValue(args.returns);
      // A slow `afterToolCall` still has to finish: the call is not done yet (and its signal, when
      // it has a deadline of its own, no longer follows the run's abort once the tool returned).
      const hookWaits = raceCase.setup.hooks && args.after !== "none";
      if (json && !signal.aborted && !hookWaits) state.finishedOk.add(toolCallId);
      return value;
    };
    switch (args.act) {
      case "ok":
        return done();
      case "slow":
        return sleepUnlessAborted(args.ms, signal).then(done);
      case "slowIgnoringAbort":
        return sleep(args.ms).then(done);
      case "hang":
        return untilAborted(signal);
      case "hangIgnoringAbort":
        return never();
      case "throw":
        throw thrownValue(args.thrown);
      case "throwLater":
        return sleep(args.ms).then(() => Promise.reject(thrownValue(args.thrown)));
    }
  };
  const description = "Behaves as its arguments say";
  return [
    defineTool({ name: "work", description, inputSchema: toolArgs, execute }),
    defineTool({ name: "serial", description, inputSchema: toolArgs, execute, sequential: true }),
    defineTool({ name: "page", description, inputSchema: toolArgs, execution: "client" }),
    // Its schema answers asynchronously, and for an odd `thrown` rejects with that thrown value: the
    // call gets an error result and the tool never runs.
    defineTool({
      name: "checked",
      description,
      inputSchema: toolArgs.refine(async ({ thrown }) =>
        thrown % 2 === 0 ? true : Promise.reject(thrownValue(thrown)),
      ),
      execute,
    }),
  ];
}

function delayed<T>(delay: ToolArgs["before"], ms: number, value: () => T): T | Promise<T> {
  if (delay === "none") return value();
  if (delay === "hang") return never();
  return sleep(ms).then(value);
}

function buildHooks(state: CaseState) {
  return {
    beforeToolCall: ({ call }: { call: { args: unknown } }) => {
      const parsed = toolArgs.safeParse(call.args);
      if (state.draining || !parsed.success) return undefined;
      const { gate, before, ms } = parsed.data;
      return delayed<BeforeToolCallResult>(before, ms, () =>
        gate === "approval"
          ? { requireApproval: true, reason: "the fuzz case asks for approval" }
          : gate === "block"
            ? { block: "the fuzz case blocks it" }
            : undefined,
      );
    },
    afterToolCall: ({ call }: { call: { args: unknown } }) => {
      const parsed = toolArgs.safeParse(call.args);
      if (state.draining || !parsed.success) return undefined;
      return delayed(parsed.data.after, parsed.data.ms, () => undefined);
    },
  };
}

// ----- the custom orchestrator -----

/** What a program's user note says (it is no prompt, steering or follow-up of the timeline). */
const PROGRAM_NOTE = "[program note]";
const programObject = z.object({ steps: z.array(z.unknown()) });

/** What a program's run has seen: the calls of its last decision not yet executed, its last answer. */
interface ProgramRun {
  pending: ToolCall[];
  last: AssistantMessage | undefined;
}

/**
 * Mode `custom`: the case's program, run through `RunContext` alone, as a third-party orchestrator
 * is. The drain prompt gets a plain tool loop instead, so each case ends on a history to check.
 */
class ProgramOrchestrator implements Orchestrator {
  readonly name = "program";

  constructor(
    readonly program: Program,
    readonly state: CaseState,
  ) {
    if (program.resume === "none") this.resume = undefined;
  }

  /** A batch a run suspended: executed here (or left), then the program runs again. */
  resume? = async (ctx: RunContext, calls: readonly ToolCall[]): Promise<void> => {
    this.state.context = ctx;
    if (this.program.resume === "execute" || this.state.draining) await ctx.executeTools(calls);
    return this.run(ctx);
  };

  async run(ctx: RunContext): Promise<void> {
    this.state.context = ctx;
    if (this.state.draining) return runTurns(ctx, () => toolLoop(ctx));
    ctx.startTurn();
    const run: ProgramRun = { pending: [], last: undefined };
    for (let round = 0; round < this.program.repeat; round++)
      for (const step of this.program.steps)
        try {
          await performStep(ctx, step, run);
        } catch (error) {
          if (!step.swallow) throw error;
        }
    if (run.last) ctx.endTurn(run.last);
    switch (this.program.end) {
      case "return":
        return;
      case "throw":
        throw new Error("the program gives up");
      case "hang":
        return never();
      case "hangUntilAborted":
        return untilAborted(ctx.signal);
    }
  }
}

async function toolLoop(ctx: RunContext): Promise<AssistantMessage> {
  for (;;) {
    const decision = await ctx.decide();
    if (decision.mode === "respond") return decision.message;
    await ctx.executeTools(decision.toolCalls);
  }
}

async function performStep(ctx: RunContext, step: ProgramStep, run: ProgramRun): Promise<void> {
  switch (step.op) {
    case "decide": {
      const decide = async () => {
        const decision = await ctx.decide(step.tools ? undefined : { tools: false });
        run.last = decision.message;
        run.pending = decision.mode === "steer" ? decision.toolCalls : [];
      };
      if (!step.parallel) return decide();
      // Two model calls at once: each sees the history as it was, and each reply is appended.
      const settled = await Promise.allSettled([decide(), decide()]);
      const failed = settled.find((outcome) => outcome.status === "rejected");
      if (failed) throw failed.reason;
      return;
    }
    case "execute": {
      const calls = run.pending;
      run.pending = [];
      let seen = 0;
      const throwsAtSecond = () => {
        if (++seen === 2) throw new Error("the program's callback fails");
      };
      const options = {
        concurrency: step.concurrency,
        interruptOnSteering: step.interrupt,
        ...(step.callback === "beforeThrows" ? { beforeEach: throwsAtSecond } : {}),
        ...(step.callback === "afterThrows" ? { afterEach: throwsAtSecond } : {}),
      };
      const parts = step.split && calls.length > 1 ? [calls.slice(0, 1), calls.slice(1)] : [calls];
      const batch = Promise.all(parts.map((part) => ctx.executeTools(part, options)));
      // Not awaited: the next step runs beside the batch, and the run may end before it does.
      if (step.detached) batch.catch(() => {});
      else await batch;
      return;
    }
    case "steering": {
      const messages = await ctx.steering.take();
      // Not applied: dropped by the program, which the run's end must queue again.
      if (step.apply && messages.length > 0) ctx.applySteering(messages);
      return;
    }
    case "followUps": {
      const messages = await ctx.followUps.take();
      if (messages.length === 0) return;
      if (run.last) ctx.endTurn(run.last);
      ctx.messages.append(...messages);
      ctx.startTurn();
      return;
    }
    case "emit": {
      const event = { type: "custom" as const, name: "program.note", data: { length: ctx.messages.length } };
      // Later: maybe after the run's end, when the event must reach no one (and nothing throws).
      if (step.laterMs === undefined) ctx.emit(event);
      else setTimeout(() => ctx.emit(event), step.laterMs);
      return;
    }
    case "generateObject":
      await ctx.generateObject(programObject);
      return;
    case "append":
      ctx.messages.append({ role: "user", content: PROGRAM_NOTE, timestamp: Date.now() });
      return;
    case "turn":
      if (run.last) ctx.endTurn(run.last);
      ctx.startTurn();
      return;
  }
}

function buildAgent(
  raceCase: RaceCase,
  state: CaseState,
  provider: ReturnType<typeof buildModel>,
  spans: SpanRecorder,
) {
  const { setup, mode } = raceCase;
  const container = rootContainer.createChildContainer();
  container.registerInstance(TRACING, openTelemetryTracing({ tracerProvider: spans.tracerProvider }));
  return new Agent({
    container,
    provider,
    tools: buildTools(raceCase, state),
    limits: { maxCycles: setup.maxCycles, abortGraceMs: setup.abortGraceMs },
    timeouts: { toolMs: setup.toolMs, chunkMs: setup.chunkMs, clientToolMs: setup.clientToolMs },
    clientTools: setup.clientTools,
    stall: setup.stall ? {} : false,
    ...(setup.hooks ? buildHooks(state) : {}),
    ...(mode === "parallel" ? { toolExecution: "parallel", maxConcurrency: setup.maxConcurrency } : {}),
    ...(mode === "plan-execute"
      ? { orchestrator: planExecute({ maxConcurrency: setup.maxConcurrency, maxReplans: setup.maxReplans }) }
      : {}),
    ...(mode === "custom" ? { orchestrator: new ProgramOrchestrator(raceCase.program, state) } : {}),
  });
}

// ----- the clock -----

/** Runs every pending promise job: a real `setImmediate` callback comes after all of them. */
const flushJobs = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Fires timers one at a time, flushing jobs after each, until `done()`, `limit` or no timer is left. */
async function advanceUntil(done: () => boolean, limit: number): Promise<void> {
  await flushJobs();
  while (!done() && Date.now() < limit && vi.getTimerCount() > 0) {
    vi.advanceTimersToNextTimer();
    await flushJobs();
  }
}

// ----- the case -----

export async function runCase(raceCase: RaceCase): Promise<Observation> {
  vi.useFakeTimers({
    toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"],
    now: EPOCH,
  });
  try {
    return await drive(raceCase);
  } finally {
    // Timers of abandoned tools and hooks die with the fake clock: nothing leaks into the next case.
    vi.useRealTimers();
  }
}

/** The program's echo: a `custom` event, from inside the delivery of the one it answers. */
function echo(state: CaseState, event: AgentEvent): void {
  if (event.type !== "steering_mode" && event.type !== "tool_result" && event.type !== "error") return;
  if (state.context?.runId !== event.runId) return;
  try {
    state.context.emit({ type: "custom", name: "program.echo", data: { seq: event.seq } });
  } catch {
    // Refused once the run has ended: nothing to echo.
  }
}

async function drive(raceCase: RaceCase): Promise<Observation> {
  const state = new CaseState();
  const model = buildModel(raceCase, state);
  const spans = new SpanRecorder();
  const agent = buildAgent(raceCase, state, model, spans);
  const observation: Observation = {
    raceCase,
    runs: [],
    heard: [],
    heardAt: new Map(),
    actions: [],
    thrown: [],
    steered: [],
    followedUp: [],
    finalHistory: [],
    modelPrompts: [],
    finishedOk: state.finishedOk,
    drained: false,
    spans,
  };
  // Before the observer's listener: it must hear the run in seq order all the same.
  if (raceCase.program.echo) agent.on("*", (event) => echo(state, event));
  agent.on("*", (event) => {
    observation.heard.push(event);
    observation.heardAt.set(event, Date.now());
    if (event.type !== "agent_start") return;
    const record = observation.runs.find((candidate) => candidate.run.runId === event.runId);
    if (record) record.startedAt = Date.now();
  });
  const counters = { prompt: 0, approval: 0, resumed: 0, steer: 0, followUp: 0 };
  const now = () => Date.now() - EPOCH;

  const track = (run: AgentRun, kind: RunRecord["kind"], label: string, text?: string, totalMs?: number) => {
    const record: RunRecord = {
      label,
      kind,
      text,
      run,
      createdAt: Date.now(),
      startedAt: undefined,
      totalMs,
      abortedAt: undefined,
      queuedAbort: undefined,
      settledAt: undefined,
      result: undefined,
    };
    observation.runs.push(record);
    void run.result().then((result) => {
      record.result = result;
      record.settledAt = Date.now();
    });
    return record;
  };
  const noteAbort = (record: RunRecord, by: "run.abort()" | "agent.abort()") => {
    if (record.settledAt !== undefined || record.abortedAt !== undefined) return;
    record.abortedAt = Date.now();
    if (record.run.events.length === 0) record.queuedAbort = by;
  };

  const perform = (action: Action | { kind: "finalAbort"; at: number }) => {
    const log = (what: string) => observation.actions.push(`t=${now()} ${what}`);
    try {
      switch (action.kind) {
        case "prompt": {
          const label = `prompt ${++counters.prompt}`;
          const text = `[${label}]`;
          const timeouts = { totalMs: action.totalMs, toolMs: action.toolMs ?? raceCase.setup.toolMs };
          track(agent.prompt(text, { timeouts }), "prompt", label, text, action.totalMs);
          log(`${label} ${JSON.stringify(timeouts)}`);
          return;
        }
        case "abort":
        case "finalAbort":
          for (const record of observation.runs) noteAbort(record, "agent.abort()");
          log(action.kind === "abort" ? "agent.abort()" : "agent.abort() (final)");
          agent.abort(action.kind);
          return;
        case "abortRun": {
          const record = observation.runs[action.which % observation.runs.length];
          if (!record) return;
          noteAbort(record, "run.abort()");
          log(`run.abort() on ${record.label}`);
          record.run.abort("abortRun");
          return;
        }
        case "steer":
        case "followUp": {
          const text = `[${action.kind} ${++counters[action.kind]}]`;
          (action.kind === "steer" ? observation.steered : observation.followedUp).push(text);
          log(`${action.kind}(${JSON.stringify(text)})`);
          agent[action.kind](text);
          return;
        }
        case "approve":
        case "deny": {
          const pending = agent.pendingApprovals;
          const id = pending[action.which % Math.max(1, pending.length)]?.toolCallId;
          if (id === undefined) return log(`${action.kind}: nothing pending`);
          log(`${action.kind}(${JSON.stringify(id)})`);
          const next =
            action.kind === "approve" ? agent.approve(id) : agent.deny(id, "the fuzz case says no");
          if (next) track(next, "approval", `approval ${++counters.approval}`);
          return;
        }
        case "submit": {
          const pending = agent.pendingClientTools;
          const id = pending[action.which % Math.max(1, pending.length)]?.toolCallId;
          if (id === undefined) return log("submit: nothing pending");
          const outcome = action.error ? { error: "the page failed" } : { result: "from the page" };
          log(`submitToolResult(${JSON.stringify(id)}, ${JSON.stringify(outcome)})`);
          const next = agent.submitToolResult(id, outcome);
          if (next) track(next, "resumed", `resumed ${++counters.resumed}`);
          return;
        }
      }
    } catch (error) {
      observation.thrown.push(`t=${now()} ${action.kind}: ${String(error)}`);
    }
  };

  const { finalAbortAt, abortGraceMs } = raceCase.setup;
  const schedule = [
    { kind: "prompt" as const, at: 0, totalMs: undefined, toolMs: undefined },
    ...raceCase.timeline,
    { kind: "finalAbort" as const, at: finalAbortAt },
  ];
  for (const action of schedule) setTimeout(() => perform(action), action.at);
  const allSettled = () => observation.runs.every((record) => record.settledAt !== undefined);
  await advanceUntil(
    () => now() >= finalAbortAt && allSettled(),
    EPOCH + finalAbortAt + abortGraceMs + SETTLE_SLACK_MS + 1,
  );

  if (allSettled()) {
    state.draining = true;
    const drain = track(agent.prompt(DRAIN_TEXT), "drain", "drain", DRAIN_TEXT);
    await advanceUntil(() => drain.settledAt !== undefined, Date.now() + DRAIN_LIMIT_MS);
    observation.drained = drain.settledAt !== undefined;
  }
  await advanceUntil(() => false, Date.now() + QUIET_MS);
  observation.finalHistory = agent.messages;
  observation.modelPrompts = model.prompts.map((prompt) => JSON.stringify(prompt));
  return observation;
}
