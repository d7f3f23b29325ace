import fc from "fast-check";

/**
 * What a race case is made of, as plain data (so fast-check can shrink it and print it): the
 * agent's setup, the model's replies, and a timeline of what the user does while it runs.
 */

/** `custom`: an orchestrator of the case's own, a program of `RunContext` calls (see `ProgramStep`). */
export type Mode = "sequential" | "parallel" | "plan-execute" | "custom";

/** How a tool call behaves; the tool reads it from its own arguments. */
export type ToolAct =
  | "ok" // returns at once
  | "slow" // returns after `ms`, stops on abort
  | "slowIgnoringAbort" // returns after `ms` whatever happens
  | "hang" // never returns, stops on abort
  | "hangIgnoringAbort" // never returns, never stops
  | "throw" // throws `THROWN[thrown]` at once
  | "throwLater"; // rejects with `THROWN[thrown]` after `ms`

export type HookDelay = "none" | "slow" | "hang";

export interface CallSpec {
  /** `page`: a client tool, answered by a `submit` of the timeline (or not at all). */
  /** `checked`: `work` behind a schema that validates asynchronously (and rejects for an odd `thrown`). */
  tool: "work" | "serial" | "missing" | "page" | "checked";
  act: ToolAct;
  ms: number;
  thrown: number;
  returns: number;
  /** What `beforeToolCall` says about this call. */
  gate: "none" | "approval" | "block";
  before: HookDelay;
  after: HookDelay;
  /** Arguments that fail the tool's schema. */
  badArgs: boolean;
  /**
   * `twin`: the same tool and arguments as the previous call of the reply (a new id); `sameId`:
   * the previous call's id again; `reusedId`: an id every `reusedId` call of the case shares.
   */
  copy: "none" | "twin" | "sameId" | "reusedId";
}

export interface Reply {
  /** Streamed text: each chunk is one `text_delta`, `pauseMs` after it (0: none). */
  chunks: { text: string; pauseMs: number }[];
  calls: CallSpec[];
  /** `hang`: the stream stops sending; `error`: a provider error part; `length`: cut off. */
  ending: "finish" | "hang" | "error" | "length";
}

export interface PlanStepSpec {
  call: CallSpec;
  /** Indexes of earlier steps it depends on. */
  dependsOn: number[];
}

/** A planning reply of plan-execute: a plan, or a reply the planner cannot use. */
export type PlanReplySpec = { kind: "plan"; steps: PlanStepSpec[] } | { kind: "garbage" };

/**
 * One step of a custom orchestrator's program, as a third-party author might write it with
 * `RunContext` alone, careless ways included: calls not awaited, errors swallowed, steering taken and
 * dropped, events emitted after the run. Whatever it does, the framework's guarantees must hold.
 */
export type ProgramStep =
  /**
   * `ctx.decide()` (with the tools, or `{ tools: false }`); its tool calls become the pending ones.
   * `parallel`: two at once, as a careless author might; the calls of the one that settles last are
   * the pending ones (when the other's reply came after it, `executeTools` refuses them).
   */
  | { op: "decide"; tools: boolean; parallel: boolean; swallow: boolean }
  /**
   * `ctx.executeTools(pending)`; `split`: the first call in one batch and the rest in another, at
   * once; `detached`: not awaited (the next step runs beside the batches); `callback`: a
   * `beforeEach` or `afterEach` of the program's that throws at its second call.
   */
  | {
      op: "execute";
      concurrency: number;
      interrupt: boolean;
      split: boolean;
      callback: "none" | "beforeThrows" | "afterThrows";
      detached: boolean;
      swallow: boolean;
    }
  /** `ctx.steering.take()`, then `ctx.applySteering()` or nothing (the messages are dropped). */
  | { op: "steering"; apply: boolean; swallow: boolean }
  /** `ctx.followUps.take()`; when any: close the turn, append them, open a new turn. */
  | { op: "followUps"; swallow: boolean }
  /** A `custom` event now, or `laterMs` after this step (maybe after the run's end). */
  | { op: "emit"; laterMs: number | undefined; swallow: boolean }
  /** `ctx.generateObject()`: a structured call that leaves the history alone. */
  | { op: "generateObject"; swallow: boolean }
  /** `ctx.messages.append()` of a user note: refused while calls wait for their results. */
  | { op: "append"; swallow: boolean }
  /** `ctx.endTurn()` with the last answer, then `ctx.startTurn()`. */
  | { op: "turn"; swallow: boolean };

/** How a custom orchestrator's `run` ends once its steps are done. */
export type ProgramEnd = "return" | "throw" | "hang" | "hangUntilAborted";

/**
 * Whether the program has `resume(ctx, calls)` for a batch a run suspended: none (the run executes
 * the batch, then calls `run`), one that executes the calls and then runs the program, or one that
 * leaves them (the program's next model call, or the run's end, answers them).
 */
export type ProgramResume = "none" | "execute" | "leave";

export interface Program {
  steps: ProgramStep[];
  /** The steps run this many times in one run. */
  repeat: number;
  end: ProgramEnd;
  resume: ProgramResume;
  /**
   * An `agent.on` listener of the program's own that answers some events of the run with a
   * `custom` event through the run's `ctx` (from inside their delivery, the run's `error` among them).
   */
  echo: boolean;
}

export type Action =
  | { kind: "prompt"; at: number; totalMs: number | undefined; toolMs: number | undefined }
  | { kind: "abort"; at: number }
  | { kind: "abortRun"; at: number; which: number }
  | { kind: "steer"; at: number }
  | { kind: "followUp"; at: number }
  | { kind: "approve"; at: number; which: number }
  | { kind: "deny"; at: number; which: number }
  /** `agent.submitToolResult()` for one of `agent.pendingClientTools`: a result, or an error. */
  | { kind: "submit"; at: number; which: number; error: boolean };

export interface Setup {
  maxConcurrency: number;
  maxCycles: number;
  maxReplans: number;
  abortGraceMs: number;
  toolMs: number | undefined;
  chunkMs: number | undefined;
  stall: boolean;
  /** `beforeToolCall`/`afterToolCall` are set (approvals, blocks, slow or hanging hooks). */
  hooks: boolean;
  /** Every run still going is aborted here, so every case ends (a tool may hang forever). */
  finalAbortAt: number;
  /** How runs wait for client (`page`) tools, and for how long (`timeouts.clientToolMs`). */
  clientTools: "wait" | "suspend";
  clientToolMs: number | undefined;
}

export interface RaceCase {
  mode: Mode;
  setup: Setup;
  /** The agentic replies, or plan-execute's answers (synthesis calls), played in order. */
  replies: Reply[];
  /** plan-execute's planning replies, played in order. */
  plans: PlanReplySpec[];
  /** The custom orchestrator's program (mode `custom`; empty otherwise). */
  program: Program;
  /** Sorted by `at`; the first prompt, at 0, is implicit. */
  timeline: Action[];
}

/** The values a `throw` tool throws: "throw anything". */
export const THROWN_COUNT = 7;
/** The values an `ok` tool returns, JSON or not. */
export const RETURNS_COUNT = 8;
/** The latest time (virtual ms) of a timeline action. */
export const TIMELINE_MS = 40;

const weighted = <T>(...choices: [number, T][]): fc.Arbitrary<T> =>
  fc.oneof(...choices.map(([weight, value]) => ({ weight, arbitrary: fc.constant(value) })));

const callSpec = (mode: Mode): fc.Arbitrary<CallSpec> =>
  fc.record({
    tool: weighted<CallSpec["tool"]>(
      [8, "work"],
      [mode === "sequential" ? 1 : 3, "serial"],
      [1, "missing"],
      [2, "page"],
      [1, "checked"],
    ),
    act: weighted<ToolAct>(
      [4, "ok"],
      [4, "slow"],
      [2, "slowIgnoringAbort"],
      [1, "hang"],
      [1, "hangIgnoringAbort"],
      [2, "throw"],
      [1, "throwLater"],
    ),
    ms: fc.integer({ min: 0, max: 20 }),
    thrown: fc.nat(THROWN_COUNT - 1),
    returns: fc.nat(RETURNS_COUNT - 1),
    gate: weighted<CallSpec["gate"]>([10, "none"], [3, "approval"], [1, "block"]),
    before: weighted<HookDelay>([10, "none"], [2, "slow"], [1, "hang"]),
    after: weighted<HookDelay>([10, "none"], [2, "slow"], [1, "hang"]),
    badArgs: weighted([12, false], [1, true]),
    copy: weighted<CallSpec["copy"]>([12, "none"], [2, "twin"], [1, "sameId"], [1, "reusedId"]),
  });

const chunks: fc.Arbitrary<Reply["chunks"]> = fc.array(
  fc.record({
    text: fc.constantFrom("Hel", "lo", " wor", "ld", ".", " The answer", " is 42"),
    pauseMs: weighted([3, 0], [1, 1], [1, 3], [1, 8]),
  }),
  { minLength: 1, maxLength: 4 },
);

const ending = weighted<Reply["ending"]>([16, "finish"], [1, "hang"], [1, "error"], [1, "length"]);

const agenticReply = (mode: Mode): fc.Arbitrary<Reply> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.record({ chunks, calls: fc.constant<CallSpec[]>([]), ending }) },
    {
      weight: 3,
      arbitrary: fc.record({
        chunks: fc.oneof(fc.constant<Reply["chunks"]>([]), chunks),
        calls: fc.array(callSpec(mode), { minLength: 1, maxLength: 4 }),
        ending,
      }),
    },
  );

/** plan-execute's synthesis calls get no tools: text only. */
const answerReply: fc.Arbitrary<Reply> = fc.record({ chunks, calls: fc.constant<CallSpec[]>([]), ending });

const planReply: fc.Arbitrary<PlanReplySpec> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .array(
        fc.record({ call: callSpec("plan-execute"), dependsOn: fc.array(fc.nat(3), { maxLength: 2 }) }),
        {
          maxLength: 4,
        },
      )
      .map((steps) => ({
        kind: "plan" as const,
        // Only earlier steps: a plan with a cycle is sent back, which the garbage replies cover.
        steps: steps.map((step, index) => ({
          ...step,
          dependsOn: [...new Set(step.dependsOn.filter((dep) => dep < index))],
        })),
      })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "garbage" as const }) },
);

// Mostly early, while the first run is busy: most runs end within a few milliseconds.
const at = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 8 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: TIMELINE_MS }) },
);
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("prompt" as const),
      at,
      totalMs: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined, freq: 4 }),
      toolMs: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined, freq: 4 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("abort" as const), at }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("abortRun" as const), at, which: fc.nat(7) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("steer" as const), at }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("followUp" as const), at }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("approve" as const), at, which: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("deny" as const), at, which: fc.nat(3) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("submit" as const),
      at,
      which: fc.nat(3),
      error: weighted([4, false], [1, true]),
    }),
  },
);

const setup: fc.Arbitrary<Setup> = fc.record({
  maxConcurrency: fc.integer({ min: 1, max: 4 }),
  maxCycles: fc.integer({ min: 2, max: 6 }),
  maxReplans: fc.integer({ min: 0, max: 2 }),
  abortGraceMs: fc.constantFrom(0, 1, 5, 20, 100),
  toolMs: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined, freq: 3 }),
  chunkMs: fc.option(fc.integer({ min: 2, max: 10 }), { nil: undefined, freq: 5 }),
  stall: weighted([3, true], [1, false]),
  hooks: weighted([3, true], [1, false]),
  finalAbortAt: fc.integer({ min: TIMELINE_MS + 1, max: TIMELINE_MS + 20 }),
  clientTools: fc.constantFrom("wait" as const, "suspend" as const),
  clientToolMs: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined, freq: 2 }),
});

const swallow = weighted([4, false], [1, true]);

const programStep: fc.Arbitrary<ProgramStep> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant("decide" as const),
      tools: weighted([4, true], [1, false]),
      parallel: weighted([5, false], [1, true]),
      swallow,
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("execute" as const),
      concurrency: fc.integer({ min: 1, max: 3 }),
      interrupt: weighted([3, true], [1, false]),
      split: weighted([3, false], [1, true]),
      callback: weighted<"none" | "beforeThrows" | "afterThrows">(
        [6, "none"],
        [1, "beforeThrows"],
        [1, "afterThrows"],
      ),
      detached: weighted([4, false], [1, true]),
      swallow,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("steering" as const),
      apply: weighted([3, true], [1, false]),
      swallow,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("followUps" as const), swallow }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("emit" as const),
      laterMs: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }),
      swallow,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("generateObject" as const), swallow }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("append" as const), swallow }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("turn" as const), swallow }) },
);

const program: fc.Arbitrary<Program> = fc.record({
  steps: fc.array(programStep, { minLength: 1, maxLength: 6 }),
  repeat: fc.integer({ min: 1, max: 3 }),
  end: weighted<ProgramEnd>([8, "return"], [2, "throw"], [1, "hang"], [1, "hangUntilAborted"]),
  resume: weighted<ProgramResume>([2, "none"], [3, "execute"], [1, "leave"]),
  echo: weighted([3, false], [1, true]),
});

const NO_PROGRAM: Program = { steps: [], repeat: 0, end: "return", resume: "none", echo: false };

export function raceCase(mode: Mode): fc.Arbitrary<RaceCase> {
  return fc.record({
    mode: fc.constant(mode),
    setup,
    replies: fc.array(mode === "plan-execute" ? answerReply : agenticReply(mode), {
      minLength: 1,
      maxLength: 6,
    }),
    plans:
      mode === "plan-execute"
        ? fc.array(planReply, { minLength: 1, maxLength: 4 })
        : fc.constant<PlanReplySpec[]>([]),
    program: mode === "custom" ? program : fc.constant(NO_PROGRAM),
    // A stable sort: actions at the same time keep their generated order.
    timeline: fc.array(action, { maxLength: 8 }).map((actions) => [...actions].sort((x, y) => x.at - y.at)),
  });
}
