import {
  Agent,
  type AgentRun,
  defineTool,
  type Orchestrator,
  type RunResult,
  type ToolResultMessage,
} from "@agent-core/core";
import type { LanguageModelV4Prompt } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { assertEventProtocol, assertValidTranscript, eventsOf } from "./assertions.js";
import {
  type ConformanceModelOptions,
  conformanceModel,
  PROBE_DESCRIPTION,
  PROBE_TOOL,
} from "./conformance-model.js";
import { ending, endOf, type RunEnd, runStartedBy, timed, within } from "./conformance-runs.js";

export interface ConformanceOptions {
  /** How long an aborted run may take to end, beyond the grace period (default 1000 ms). */
  abortDeadlineMs?: number;
  /**
   * How a run starts (default `agent.prompt(input)`): a runtime that runs agents its own way (the
   * durable one, in a workflow) passes its own, and the checks run on it.
   */
  prompt?: (agent: Agent, input: string) => AgentRun | Promise<AgentRun>;
  /**
   * How a tool call a run waits for is approved (default `agent.approve(toolCallId)`; what it
   * returns is awaited): a runtime whose runs wait its own way passes its own (the durable one
   * sends `runtime.answer(run.runId, { kind: "approval", toolCallId, approved: true })`). `run` is
   * the run `prompt` started. The approvals check follows the run that resumes the batch through
   * the agent's events (`agent.on`), whoever starts it.
   */
  approve?: (agent: Agent, toolCallId: string, run: AgentRun) => unknown;
}

const GRACE_MS = 30;
/** How long a run of a check may take to end, unless aborted. */
const RUN_DEADLINE_MS = 5000;
/**
 * Vitest's timeout for each check: beyond the deadlines of its runs (the provider-failure check
 * runs several), so a run that never ends fails with the check's own message, not vitest's.
 */
const CHECK_TIMEOUT_MS = 60_000;

/**
 * Checks every guarantee an orchestrator can break, against the orchestrator `factory` builds
 * (a fresh one per test): the event envelope and order, `agent_start`/`agent_end` once, every
 * `tool_call` answered by one `tool_result` and every tool run announced by one, a valid transcript after completion, abort (in a
 * tool that ignores its signal, or a completed run from a loop that calls none, and in a model
 * stream), provider errors, steering, follow-ups (each in a turn of its own) and limits, `result()`
 * without reading events, and approvals (an approved call runs once when the run resumes, through
 * `Orchestrator.resume` if it has one, and the model then reads its result).
 * A run that does not end within its deadline fails its check with "the run did not end within
 * … ms"; each check has a vitest timeout of 60 s (plus `abortDeadlineMs`), whatever the project's
 * `testTimeout`. Call it at the top level of a vitest test file; it is the
 * `@agent-core/testing/conformance` entry, so programs using the rest of the kit never load vitest.
 */
export function describeOrchestratorConformance(
  name: string,
  factory: () => Orchestrator,
  options: ConformanceOptions = {},
): void {
  describe(`orchestrator conformance: ${name}`, () => {
    const timeout = CHECK_TIMEOUT_MS + deadlineOf(options);
    for (const check of conformanceChecks) it(check.name, () => check.run(factory, options), timeout);
  });
}

export interface ConformanceCheck {
  name: string;
  /** Resolves when the orchestrator keeps the guarantee; rejects with what went wrong. */
  run(factory: () => Orchestrator, options?: ConformanceOptions): Promise<void>;
}

const deadlineOf = (options: ConformanceOptions = {}) => GRACE_MS + (options.abortDeadlineMs ?? 1000);

export const conformanceChecks: readonly ConformanceCheck[] = [
  {
    name: "answers a prompt without tools: protocol, schemas, transcript, completed",
    async run(factory, options) {
      const { run, result } = await runScenario(factory, { tools: false }, options);
      expect(result.stopReason, ending(result)).toBe("completed");
      expect(run.events.filter((e) => e.type === "agent_start")).toHaveLength(1);
    },
  },
  {
    name: "uses tools: every tool_call has one tool_result and the history has one result per call",
    async run(factory, options) {
      const ran: string[] = [];
      const { run, result } = await runScenario(factory, { ran }, options);
      expect(result.stopReason, ending(result)).toBe("completed");
      const calls = eventsOf(run.events, "tool_call").map((e) => e.toolCallId);
      // A tool run past ctx.executeTools() (validation, hooks, approvals, events) breaks them all.
      expect([...ran].sort(), "the calls the probe ran, each announced by tool_call").toEqual(
        [...calls].sort(),
      );
      const resultsInHistory = result.messages.flatMap((m) =>
        m.role === "toolResult" ? [(m as ToolResultMessage).toolCallId] : [],
      );
      expect(resultsInHistory.filter((id) => calls.includes(id)).sort()).toEqual([...calls].sort());
    },
  },
  {
    name: "resolves result() when nobody reads the events",
    async run(factory, options) {
      const run = await start(newAgent(factory, {}), PROMPT, options);
      const result = await within(run.result(), RUN_DEADLINE_MS);
      expect(result.stopReason, ending(result)).toBe("completed");
      assertValidTranscript(result.messages);
    },
  },
  {
    name: "ends promptly when aborted in a tool that ignores its signal",
    async run(factory, options) {
      const agent = newAgent(factory, { hangingTool: true });
      const run = await start(agent, PROMPT, options);
      let aborted = false;
      const abort = () => {
        aborted = true;
        agent.abort();
      };
      const timers = [setTimeout(abort, 500)]; // for an orchestrator that calls no tool and goes on
      agent.on("tool_call", () => timers.push(setTimeout(abort, 5)));
      const result = await timed(run, deadlineOf(options) + 500).finally(() => timers.forEach(clearTimeout));
      if (!aborted && eventsOf(run.events, "tool_call").length === 0) {
        // It answered without the tool, so there was nothing to abort: it must have completed.
        expect(result.stopReason, ending(result)).toBe("completed");
        return;
      }
      expect(result.stopReason, ending(result)).toBe("aborted");
      expect(eventsOf(run.events, "error")[0]?.code).toBe("aborted");
    },
  },
  {
    name: "ends promptly when aborted during a model stream",
    async run(factory, options) {
      const agent = newAgent(factory, { model: { hangOnCall: 1 } });
      const run = await start(agent, "Answer.", options);
      setTimeout(() => agent.abort(), 20);
      const result = await timed(run, deadlineOf(options));
      expect(result.stopReason, ending(result)).toBe("aborted");
    },
  },
  {
    name: "reports a provider failure as an error, never as an answer, whichever call fails",
    async run(factory, options) {
      // Count the model calls of a clean run, then fail each one in turn.
      const clean = conformanceModel();
      await runScenario(factory, { model: clean }, options);
      for (let failOnCall = 1; failOnCall <= clean.doStreamCalls.length; failOnCall++) {
        const { run, result } = await runScenario(factory, { model: { failOnCall } }, options);
        expect(result.stopReason, `model call ${failOnCall} failed; ${ending(result)}`).toBe("error");
        expect(eventsOf(run.events, "error")).toHaveLength(1);
      }
    },
  },
  {
    name: "honours steering: the message enters the history, announced by steering_applied",
    async run(factory, options) {
      const agent = newAgent(factory, {});
      agent.steer("Conformance steering");
      const run = await start(agent, PROMPT, options);
      const result = await timed(run, RUN_DEADLINE_MS);
      const steered = result.messages.filter(
        (m) => m.role === "user" && m.content === "Conformance steering",
      );
      expect(steered).toHaveLength(1);
      expect(eventsOf(run.events, "steering_applied").flatMap((e) => e.messages)).toHaveLength(1);
    },
  },
  {
    name: "honours follow-ups: one queued before the run is answered in a turn of its own",
    async run(factory, options) {
      const model = conformanceModel();
      const agent = newAgent(factory, { model });
      agent.followUp(FOLLOW_UP);
      const run = await start(agent, PROMPT, options);
      const result = await timed(run, RUN_DEADLINE_MS);
      expect(result.stopReason, ending(result)).toBe("completed");
      const followUps = result.messages.filter((m) => m.role === "user" && m.content === FOLLOW_UP);
      expect(followUps, "the follow-ups in the history").toHaveLength(1);
      const read = model.prompts.some((prompt) => JSON.stringify(prompt).includes(FOLLOW_UP));
      expect(read, "a model call read the follow-up").toBe(true);
      expect(eventsOf(run.events, "turn_start").length, "turns opened").toBeGreaterThanOrEqual(2);
    },
  },
  {
    name: "keeps maxCycles, however many cycles the orchestrator wants",
    async run(factory, options) {
      const model = conformanceModel();
      const run = await start(newAgent(factory, { model, maxCycles: 1 }), PROMPT, options);
      const result = await timed(run, RUN_DEADLINE_MS);
      expect(["completed", "max_cycles"], ending(result)).toContain(result.stopReason);
      expect(model.doStreamCalls.length).toBeLessThanOrEqual(1);
    },
  },
  {
    name: "runs an approved call once when the run resumes: approvals and Orchestrator.resume",
    async run(factory, options) {
      const executed: string[] = [];
      const model = conformanceModel();
      const agent = newAgent(factory, { approval: { executed }, model });
      const run = await start(agent, PROMPT, options);
      // Its history ends with the calls that wait, unanswered (by design): no transcript check yet.
      const waiting = await within(run.result(), RUN_DEADLINE_MS);
      assertEventProtocol(run.events);
      if (waiting.stopReason === "completed") {
        // Every call waits for approval: it answered without the tool, so there is nothing to approve.
        assertValidTranscript(waiting.messages);
        expect(executed, "the calls the probe ran without an approval").toEqual([]);
        return;
      }
      expect(waiting.stopReason, ending(waiting)).toBe("awaiting_approval");
      const approved: string[] = [];
      let ended: RunEnd = waiting;
      for (let round = 1; ended.stopReason === "awaiting_approval"; round++) {
        if (round > MAX_APPROVAL_ROUNDS)
          throw new Error(
            `the run still waits for approval after ${MAX_APPROVAL_ROUNDS} rounds of approvals`,
          );
        const pending = (ended.pendingApprovals ?? []).map((call) => call.toolCallId);
        approved.push(...pending);
        const events = await runStartedBy(agent, RUN_DEADLINE_MS, async () => {
          for (const toolCallId of pending)
            await (options?.approve ?? approveInProcess)(agent, toolCallId, run);
        });
        assertEventProtocol(events);
        ended = endOf(events);
      }
      expect(ended.stopReason, ending(ended)).toBe("completed");
      const history = agent.messages;
      assertValidTranscript(history);
      for (const id of approved)
        expect(executed.filter((ran) => ran === id).length, `times the approved call ${id} ran`).toBe(1);
      expect(
        executed.filter((id) => !approved.includes(id)),
        "the calls the probe ran without an approval",
      ).toEqual([]);
      const results = history.filter((m): m is ToolResultMessage => m.role === "toolResult");
      // One result per approved call, the tool's output: none "not completed", none made up.
      expect(results.map((r) => r.toolCallId).sort(), "the calls the history has results of").toEqual(
        [...approved].sort(),
      );
      for (const result of results)
        expect(
          { status: result.status, content: result.content },
          `the result of ${result.toolCallId}`,
        ).toEqual({
          status: "ok",
          content: probeOutput(result.toolCallId),
        });
      // "Then go on as `run` would": the model reads what the approved calls returned. A resume
      // that runs the batch and stops leaves the user with no answer to the results.
      const read = new Set(model.prompts.flatMap(toolResultIdsOf));
      for (const id of approved)
        expect(read.has(id), `a model call after the approved call ${id} read its result`).toBe(true);
    },
  },
];

/** The ids of the tool results a model call's prompt holds. */
function toolResultIdsOf(prompt: LanguageModelV4Prompt): string[] {
  return prompt.flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) => (part.type === "tool-result" ? [part.toolCallId] : []))
      : [],
  );
}

const PROMPT = "Use the probe tool, then answer.";
const FOLLOW_UP = "Conformance follow-up";
/** Waits for approval a resumed run may end with again, before the approvals check gives up. */
const MAX_APPROVAL_ROUNDS = 5;

interface Scenario {
  tools?: boolean;
  hangingTool?: boolean;
  model?: ConformanceModelOptions | ReturnType<typeof conformanceModel>;
  maxCycles?: number;
  /** Every probe call waits for approval; `executed` gets the id of each call the probe ran. */
  approval?: { executed: string[] };
  /** Gets the id of each call the probe ran. */
  ran?: string[];
}

function newAgent(factory: () => Orchestrator, scenario: Scenario): Agent {
  const probe = defineTool({
    name: PROBE_TOOL,
    description: PROBE_DESCRIPTION,
    inputSchema: z.object({ n: z.number() }),
    execute: ({ n }, { toolCallId }) => {
      scenario.ran?.push(toolCallId);
      if (scenario.hangingTool) return new Promise(() => {});
      if (!scenario.approval) return { n };
      scenario.approval.executed.push(toolCallId);
      return probeOutput(toolCallId);
    },
  });
  const model =
    scenario.model && "doStream" in scenario.model ? scenario.model : conformanceModel(scenario.model);
  return new Agent({
    provider: model,
    tools: scenario.tools === false ? [] : [probe],
    orchestrator: factory(),
    limits: { abortGraceMs: GRACE_MS, ...(scenario.maxCycles ? { maxCycles: scenario.maxCycles } : {}) },
    ...(scenario.approval ? { beforeToolCall: () => ({ requireApproval: true }) } : {}),
  });
}

const probeOutput = (toolCallId: string) => `probe ran for ${toolCallId}`;

const approveInProcess = (agent: Agent, toolCallId: string) => agent.approve(toolCallId);

function start(agent: Agent, input: string, options: ConformanceOptions = {}): AgentRun | Promise<AgentRun> {
  return options.prompt ? options.prompt(agent, input) : agent.prompt(input);
}

async function runScenario(
  factory: () => Orchestrator,
  scenario: Scenario,
  options?: ConformanceOptions,
): Promise<{ run: AgentRun; result: RunResult }> {
  const run = await start(newAgent(factory, scenario), PROMPT, options);
  const result = await timed(run, RUN_DEADLINE_MS);
  return { run, result };
}
