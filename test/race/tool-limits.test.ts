import "@agent-core/agentic";
import { Agent, type AgentRun, defineTool, FatalToolError, type RunResult } from "@agent-core/core";
import {
  assertEventProtocol,
  assertValidTranscript,
  type ScriptPart,
  script,
  scriptedModel,
} from "@agent-core/testing";
import fc from "fast-check";
import { describe, it, vi } from "vitest";
import { z } from "zod";
import { fuzzSettings } from "./property.js";

/*
 * What the race suite does not generate: per-tool time limits (`timeouts.tools`) over `toolMs`,
 * tools that run alone (`sequential: true`) among parallel ones, slow model replies under `stepMs`,
 * a run's `totalMs`, and steering or an abort at any moment of such a batch. On the race suite's
 * virtual clock, each case checks what the docs promise of a tool call's time limit:
 *
 * - a call answered `ok` ran within its tool's limit; one answered `timeout` had a limit and ran
 *   at least that long; a call whose tool returned before its limit, an abort, `totalMs` or a
 *   `FatalToolError` of its batch keeps its `ok`;
 * - no call starts after an abort, the run's `totalMs`, or in the batch that steering interrupted;
 * - at most `maxConcurrency` calls run at once, and a `sequential` tool runs alone;
 * - the run ends within `abortGraceMs` of its abort or timeout, with a valid event protocol and
 *   history.
 */

const TOOLS = ["t0", "t1", "t2", "t3"] as const;
/** Node runs a timer of 0 ms set while timers fire after 1 ms (so does the fake clock): a grace of 0 takes 1. */
const TIMER_SLACK_MS = 1;
type ToolName = (typeof TOOLS)[number];

interface CallSpec {
  tool: ToolName;
  durationMs: number;
  /** Ignores its abort signal, so it is abandoned after the grace period. */
  deaf: boolean;
  ending: "value" | "throw" | "fatal";
}

interface LimitsCase {
  parallel: boolean;
  maxConcurrency: number;
  /** Per tool; undefined for none. */
  toolLimits: Partial<Record<ToolName, number>>;
  /** Which tool runs alone in parallel execution. */
  sequentialTool: ToolName | undefined;
  toolMs: number | undefined;
  totalMs: number | undefined;
  stepMs: number | undefined;
  abortGraceMs: number;
  replies: { delayMs: number; calls: CallSpec[] }[];
  steerAt: number | undefined;
  abortAt: number | undefined;
}

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  tool: fc.constantFrom(...TOOLS),
  durationMs: fc.integer({ min: 0, max: 60 }),
  deaf: fc.boolean(),
  ending: fc.constantFrom("value", "value", "value", "throw", "fatal"),
});

const limitsCase: fc.Arbitrary<LimitsCase> = fc.record({
  parallel: fc.boolean(),
  maxConcurrency: fc.integer({ min: 1, max: 4 }),
  toolLimits: fc.record(
    {
      t0: fc.integer({ min: 1, max: 50 }),
      t1: fc.integer({ min: 1, max: 50 }),
      t2: fc.integer({ min: 1, max: 50 }),
    },
    { requiredKeys: [] },
  ),
  sequentialTool: fc.option(fc.constantFrom(...TOOLS), { nil: undefined }),
  toolMs: fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
  totalMs: fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined, freq: 3 }),
  stepMs: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined, freq: 3 }),
  abortGraceMs: fc.integer({ min: 0, max: 40 }),
  replies: fc.array(
    fc.record({
      delayMs: fc.integer({ min: 0, max: 20 }),
      calls: fc.array(callSpec, { minLength: 1, maxLength: 5 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  steerAt: fc.option(fc.integer({ min: 0, max: 150 }), { nil: undefined }),
  abortAt: fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined, freq: 3 }),
});

/** One call as its tool saw it, on the virtual clock; `order` ranks what happened at the same time. */
interface Execution {
  toolCallId: string;
  tool: ToolName;
  reply: number;
  startedAt: number;
  startOrder: number;
  /** When the tool's own promise settled with a value (not by its signal). */
  finishedAt: number | undefined;
  finishedOrder: number | undefined;
}

/** What happened in one case: the tools' executions and the moments the timeline acted. */
class Trace {
  readonly executions: Execution[] = [];
  /** The model reply whose calls run now: that of the last model call. */
  reply = -1;
  #order = 0;
  steered: { order: number; reply: number } | undefined;
  abortedOrder: number | undefined;
  /** A failure the tools noticed as it happened (an overlap the docs rule out). */
  readonly problems: string[] = [];
  readonly running = new Set<Execution>();

  next(): number {
    return this.#order++;
  }
}

function limitOf(race: LimitsCase, tool: ToolName): number | undefined {
  return race.toolLimits[tool] ?? race.toolMs;
}

/** The call a tool-call id of the scripted model (`call-<reply>-<position>`, from 1) stands for. */
function specOf(race: LimitsCase, toolCallId: string): CallSpec | undefined {
  const [, reply, position] = /^call-(\d+)-(\d+)$/.exec(toolCallId) ?? [];
  return race.replies[Number(reply) - 1]?.calls[Number(position) - 1];
}

function buildAgent(race: LimitsCase, trace: Trace): Agent {
  const tools = TOOLS.map((name) =>
    defineTool({
      name,
      description: name,
      inputSchema: z.object({}),
      sequential: race.parallel && race.sequentialTool === name,
      execute: (_args, { signal, toolCallId }) => {
        const spec = specOf(race, toolCallId) as CallSpec;
        const execution: Execution = {
          toolCallId,
          tool: name,
          reply: trace.reply,
          startedAt: Date.now(),
          startOrder: trace.next(),
          finishedAt: undefined,
          finishedOrder: undefined,
        };
        trace.executions.push(execution);
        noteStart(race, trace, execution);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            execution.finishedAt = Date.now();
            execution.finishedOrder = trace.next();
            if (spec.ending === "throw") reject(new Error(`${name} failed`));
            else if (spec.ending === "fatal") reject(new FatalToolError(`${name} stops the batch`));
            else resolve(`${name} done`);
          }, spec.durationMs);
          if (!spec.deaf)
            signal.addEventListener("abort", () => {
              clearTimeout(timer);
              reject(signal.reason);
            });
        });
      },
    }),
  );
  const steps = race.replies.map((reply, index) => () => {
    trace.reply = index;
    const calls = reply.calls.map((call) => script.toolCall(call.tool, {}));
    return [script.delay(reply.delayMs), ...calls] as ScriptPart[];
  });
  const model = scriptedModel([...steps, ...Array.from({ length: 8 }, () => [script.text("done")])]);
  return new Agent({
    provider: model,
    tools,
    stall: false,
    limits: { abortGraceMs: race.abortGraceMs, maxCycles: 12 },
    timeouts: {
      toolMs: race.toolMs,
      tools: race.toolLimits,
      totalMs: race.totalMs,
      stepMs: race.stepMs,
    },
    ...(race.parallel ? { toolExecution: "parallel" as const, maxConcurrency: race.maxConcurrency } : {}),
  });
}

/** Checks, as a call starts, the concurrency the docs allow; the call counts as running until its result. */
function noteStart(race: LimitsCase, trace: Trace, execution: Execution): void {
  const running = [...trace.running];
  const limit = race.parallel ? race.maxConcurrency : 1;
  if (running.length >= limit)
    trace.problems.push(
      `${execution.toolCallId} started while ${running.length} calls ran (limit ${limit}).`,
    );
  const alone = running.find((other) => other.tool === race.sequentialTool);
  if (race.parallel && (execution.tool === race.sequentialTool || alone) && running.length > 0)
    trace.problems.push(
      `${execution.toolCallId} (${execution.tool}) started beside ${running.map((other) => other.toolCallId).join(", ")}, though ${race.sequentialTool} runs alone.`,
    );
  trace.running.add(execution);
}

const flushJobs = () => new Promise<void>((resolve) => setImmediate(resolve));

async function runCase(
  race: LimitsCase,
): Promise<{ run: AgentRun; result: RunResult; trace: Trace; settledAt: number }> {
  const trace = new Trace();
  const agent = buildAgent(race, trace);
  agent.on("tool_result", (event) => {
    for (const execution of trace.executions)
      if (execution.toolCallId === event.toolCallId) trace.running.delete(execution);
  });
  const run = agent.prompt("go");
  if (race.steerAt !== undefined)
    setTimeout(() => {
      if (trace.running.size > 0) trace.steered = { order: trace.next(), reply: trace.reply };
      agent.steer("steer");
    }, race.steerAt);
  if (race.abortAt !== undefined)
    setTimeout(() => {
      trace.abortedOrder = trace.next();
      run.abort();
    }, race.abortAt);
  let settledAt: number | undefined;
  void run.result().then(() => {
    settledAt = Date.now();
  });
  await flushJobs();
  while (settledAt === undefined && vi.getTimerCount() > 0) {
    vi.advanceTimersToNextTimer();
    await flushJobs();
  }
  if (settledAt === undefined) throw new Error("The run never ended, and no timer was left to end it.");
  return { run, result: await run.result(), trace, settledAt };
}

function problemsOf(
  race: LimitsCase,
  { run, result, trace, settledAt }: Awaited<ReturnType<typeof runCase>>,
  startedAt: number,
): string[] {
  const problems = [...trace.problems];
  try {
    assertEventProtocol(run.events);
    assertValidTranscript(result.messages);
  } catch (error) {
    problems.push((error as Error).message);
  }
  const status = new Map<string, string>();
  for (const event of run.events)
    if (event.type === "tool_result") status.set(event.toolCallId, event.status);
  const totalAt = race.totalMs === undefined ? undefined : startedAt + race.totalMs;
  const abortAt = race.abortAt === undefined ? undefined : startedAt + race.abortAt;
  for (const execution of trace.executions) {
    const got = status.get(execution.toolCallId);
    const limit = limitOf(race, execution.tool);
    const ranFor = (execution.finishedAt ?? Number.POSITIVE_INFINITY) - execution.startedAt;
    const label = `${execution.toolCallId} (${execution.tool}, limit ${limit ?? "none"})`;
    if (got === "ok" && limit !== undefined && ranFor > limit)
      problems.push(`${label} ran ${ranFor} ms and was answered ok.`);
    if (got === "timeout" && (limit === undefined || ranFor < limit))
      problems.push(`${label} ran ${ranFor} ms and was answered timeout.`);
    const finishedBefore = (order: number | undefined) =>
      order === undefined || (execution.finishedOrder !== undefined && execution.finishedOrder < order);
    const spec = specOf(race, execution.toolCallId);
    // A FatalToolError of its batch aborts the calls still running, as an abort does.
    const fatal = trace.executions.filter(
      (other) => other.reply === execution.reply && specOf(race, other.toolCallId)?.ending === "fatal",
    );
    const keepsOk =
      spec?.ending === "value" &&
      ranFor < (limit ?? Number.POSITIVE_INFINITY) &&
      finishedBefore(trace.abortedOrder) &&
      fatal.every((other) => finishedBefore(other.finishedOrder ?? Number.POSITIVE_INFINITY)) &&
      (totalAt === undefined || (execution.finishedAt as number) < totalAt);
    if (keepsOk && got !== "ok")
      problems.push(`${label} finished with its value in ${ranFor} ms but was answered ${got}.`);
    if (trace.abortedOrder !== undefined && execution.startOrder > trace.abortedOrder)
      problems.push(`${label} started after the abort.`);
    if (totalAt !== undefined && execution.startedAt > totalAt)
      problems.push(`${label} started after totalMs.`);
    if (
      trace.steered &&
      execution.reply === trace.steered.reply &&
      execution.startOrder > trace.steered.order
    )
      problems.push(`${label} started in the batch steering interrupted.`);
  }
  const endedBy = Math.min(abortAt ?? Number.POSITIVE_INFINITY, totalAt ?? Number.POSITIVE_INFINITY);
  if (endedBy < Number.POSITIVE_INFINITY && settledAt > endedBy + race.abortGraceMs + TIMER_SLACK_MS)
    problems.push(
      `The run ended ${settledAt - endedBy} ms after its abort or timeout (grace ${race.abortGraceMs} ms).`,
    );
  return problems;
}

describe("tool time limits under parallel tools, steering and aborts", () => {
  it("race property: tool limits", async () => {
    const settings = fuzzSettings();
    const property = fc.asyncProperty(limitsCase, async (race) => {
      vi.useFakeTimers({
        toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"],
        now: 0,
      });
      try {
        const startedAt = Date.now();
        const observed = await runCase(race);
        const problems = problemsOf(race, observed, startedAt);
        if (problems.length > 0)
          throw new Error(
            `${problems.join("\n")}\n\nevents:\n${observed.run.events.map((e) => `${e.ts} ${e.type} ${JSON.stringify({ ...e, type: undefined, runId: undefined, ts: undefined, seq: undefined })}`).join("\n")}`,
          );
      } finally {
        vi.useRealTimers();
      }
    });
    await fc.assert(property, {
      seed: settings.seed,
      numRuns: settings.numRuns,
      ...(settings.path ? { path: settings.path } : {}),
    });
  }, 120_000);
});
