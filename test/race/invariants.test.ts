import type { AgentEvent, AgentMessage, ToolResultMessage } from "@agent-core/core";
import { beforeAll, describe, expect, it } from "vitest";
import type { CallSpec, RaceCase } from "./generators.js";
import { EPOCH, type Observation, runCase } from "./harness.js";
import { checkInvariants, describeFailures, type InvariantName, invariants } from "./invariants.js";
import { checkOpenAIShape } from "./openai-shape.js";

/**
 * Each invariant is shown a real observation, then the same observation with one violation planted
 * in it: it must pass the first and name the second.
 */

const call = (act: CallSpec["act"], ms = 0): CallSpec => ({
  tool: "work",
  act,
  ms,
  thrown: 0,
  returns: 0,
  gate: "none",
  before: "none",
  after: "none",
  badArgs: false,
  copy: "none",
});

/** Two tools, an answer, and a steering message that arrives after the run: the drain takes it. */
const calmCase: RaceCase = {
  mode: "sequential",
  setup: {
    maxConcurrency: 1,
    maxCycles: 4,
    maxReplans: 0,
    abortGraceMs: 5,
    toolMs: undefined,
    chunkMs: undefined,
    stall: true,
    hooks: false,
    finalAbortAt: 41,
    clientTools: "wait",
    clientToolMs: undefined,
  },
  replies: [
    { chunks: [{ text: "Let me look", pauseMs: 1 }], calls: [call("ok"), call("slow", 3)], ending: "finish" },
    { chunks: [{ text: "Done", pauseMs: 0 }], calls: [], ending: "finish" },
  ],
  plans: [],
  program: { steps: [], repeat: 0, end: "return", resume: "none", echo: false },
  timeline: [{ kind: "steer", at: 20 }],
};

let calm: Observation;
beforeAll(async () => {
  calm = await runCase(calmCase);
});

const first = () => calm.runs[0] as Observation["runs"][number];
const runId = () => first().run.runId;
const heardOfFirst = (heard: AgentEvent[]) => heard.filter((event) => event.runId === runId());

function violated(observation: Observation, name: InvariantName): string[] {
  return invariants[name](observation);
}

/** The observation with the first run's events replaced. */
function withFirstRunEvents(change: (events: AgentEvent[]) => AgentEvent[]): Observation {
  const events = change(heardOfFirst(structuredClone(calm.heard)));
  return { ...calm, heard: [...events, ...calm.heard.filter((event) => event.runId !== runId())] };
}

function withHistory(change: (messages: AgentMessage[]) => AgentMessage[]): Observation {
  return { ...calm, finalHistory: change(structuredClone(calm.finalHistory)) };
}

const toolResults = (messages: AgentMessage[]) =>
  messages.filter((message): message is ToolResultMessage => message.role === "toolResult");

describe("the race invariants", () => {
  it("a calm case keeps every invariant, the steering message included", () => {
    expect(calm.runs.map((record) => record.result?.stopReason)).toEqual(["completed", "completed"]);
    expect(checkInvariants(calm)).toEqual([]);
    expect(calm.finishedOk.size).toBe(2);
  });

  it("startsAndEndsOnce: a run whose agent_start is missing", () => {
    const observation = withFirstRunEvents((events) => events.slice(1));
    expect(violated(observation, "startsAndEndsOnce")).toEqual([
      "prompt 1: the first event is turn_start",
      "prompt 1: 0 agent_start events",
    ]);
  });

  it("nothingAfterAgentEnd: a listener hears a tool_call after agent_end", () => {
    const observation = withFirstRunEvents((events) => {
      const late = events.find((event) => event.type === "tool_call") as AgentEvent;
      return [...events, { ...late, seq: events.length }];
    });
    expect(violated(observation, "nothingAfterAgentEnd")).toEqual([
      `prompt 1: heard after agent_end: #${heardOfFirst(calm.heard).length} tool_call`,
    ]);
  });

  it("seqGapless: an event missing in the middle", () => {
    const observation = withFirstRunEvents((events) => events.filter((event) => event.seq !== 3));
    expect(violated(observation, "seqGapless")).toEqual(["prompt 1: event 3 has seq 4"]);
  });

  it("tsNonDecreasing: a tool_result stamped before the event it follows", () => {
    const observation = withFirstRunEvents((events) =>
      events.map((event) => (event.type === "tool_result" ? { ...event, ts: event.ts - 1000 } : event)),
    );
    expect(violated(observation, "tsNonDecreasing")[0]).toMatch(
      /^prompt 1: #\d+ tool_result has ts \+-\d+, before #\d+ tool_call at \+\d+$/,
    );
  });

  it("oneResultPerCall: a call answered twice, and a result that answers nothing", () => {
    const observation = withFirstRunEvents((events) =>
      events.flatMap((event): AgentEvent[] =>
        event.type === "tool_result" ? [event, { ...event, toolCallId: "ghost" }, event] : [event],
      ),
    );
    const problems = violated(observation, "oneResultPerCall");
    expect(problems).toContain('prompt 1: 2 tool_result events for "c0_0"');
    expect(problems.some((problem) => problem.includes('tool_result "ghost"'))).toBe(true);
  });

  it("transcriptValid and openAIShape: a result missing from the history after the drain", () => {
    const observation = withHistory((messages) =>
      messages.filter((message) => message.role !== "toolResult"),
    );
    expect(violated(observation, "transcriptValid")).toEqual([
      'after the drain: message 1: tool call(s) "c0_0", "c0_1" have no result before the next message',
    ]);
    expect(violated(observation, "openAIShape")).toEqual([
      "after the drain: the calls of assistant message 1 (c0_0, c0_1) have no tool message before message 2",
    ]);
  });

  it("historyAgreesWithEvents and finishedCallsKeepOk: a finished call stored as aborted", () => {
    const observation = withHistory((messages) => {
      const result = toolResults(messages)[1] as ToolResultMessage;
      result.status = "aborted";
      return messages;
    });
    expect(violated(observation, "historyAgreesWithEvents")).toEqual([
      'prompt 1: "c0_1" is ok in its event but aborted in the history',
    ]);
    expect(violated(observation, "finishedCallsKeepOk")).toEqual([
      '"c0_1" finished ok, but the history says aborted',
    ]);
  });

  it("noQueuedMessageLost: a steering message nowhere, unless a result reports it", () => {
    const lost = { ...calm, steered: [...calm.steered, "[steer 9]"] };
    expect(violated(lost, "noQueuedMessageLost")).toEqual([
      "[steer 9] never reached the history, nor was it reported on a result",
    ]);
    const result = first().result;
    const reported = {
      ...lost,
      runs: [
        { ...first(), result: result && { ...result, unused: [{ role: "user", content: "[steer 9]" }] } },
      ],
    };
    expect(violated(reported, "noQueuedMessageLost")).toEqual([]);
  });

  it("endsWithinGrace: a run settling late after its abort, and one that never settles", () => {
    const abortedAt = EPOCH + 10;
    const late = { ...calm, runs: [{ ...first(), abortedAt, settledAt: abortedAt + 5 + 101 }] };
    expect(violated(late, "endsWithinGrace")).toEqual([
      "prompt 1 settled at t=116, after its abort at t=10 + grace 5 + slack 100",
    ]);
    const onTime = { ...calm, runs: [{ ...first(), abortedAt, settledAt: abortedAt + 5 + 100 }] };
    expect(violated(onTime, "endsWithinGrace")).toEqual([]);
    const wedged = { ...calm, runs: [{ ...first(), abortedAt, settledAt: undefined }] };
    expect(violated(wedged, "endsWithinGrace")).toEqual([
      "prompt 1 never settled (its abort at t=10, grace 5 ms)",
    ]);
  });

  it("abortedQueuedRunNeverRuns: a run aborted while queued whose prompt still ran", () => {
    const queued = {
      ...calm,
      runs: [{ ...first(), queuedAbort: "run.abort()" as const, abortedAt: EPOCH, settledAt: EPOCH + 2 }],
    };
    expect(violated(queued, "abortedQueuedRunNeverRuns")).toEqual([
      "prompt 1 (run.abort() while queued, t=0) ended completed",
      "prompt 1 (run.abort() while queued, t=0) settled only at t=2",
      "prompt 1 (run.abort() while queued, t=0): its prompt entered the history",
      "prompt 1 (run.abort() while queued, t=0): its prompt reached the model",
    ]);
  });

  it("a failure report names the invariant and shows the timeline, the events and the history", () => {
    const observation = withFirstRunEvents((events) => events.filter((event) => event.seq !== 3));
    const report = describeFailures(observation, checkInvariants(observation));
    expect(report).toContain("✗ seqGapless");
    expect(report).toContain('t=20 steer("[steer 1]")');
    expect(report).toMatch(/#\d+ t=\d+ tool_result c0_1 ok/);
    expect(report).toContain("toolResult c0_0 ok");
  });
});

describe("the OpenAI-shaped checker", () => {
  const assistant = (...ids: string[]): AgentMessage => ({
    role: "assistant",
    content: ids.map((id) => ({ type: "toolCall" as const, id, name: "work", args: {} })),
  });
  const result = (id: string, content: unknown = "ok"): AgentMessage =>
    ({
      role: "toolResult",
      toolCallId: id,
      toolName: "work",
      content,
      isError: false,
      status: "ok",
    }) as AgentMessage;

  it("accepts calls answered right after their message, app messages of its own kind aside", () => {
    const history: AgentMessage[] = [
      { role: "user", content: "go" },
      assistant("a", "b"),
      result("a"),
      { role: "app-note", text: "never sent" },
      result("b"),
      { role: "assistant", content: [{ type: "text", text: "done" }] },
    ];
    expect(checkOpenAIShape(history)).toEqual([]);
  });

  it("rejects what the OpenAI API rejects", () => {
    const history: AgentMessage[] = [
      { role: "user", content: "go" },
      assistant("a"),
      result("a", { not: "a string" }),
      assistant("a"),
      { role: "user", content: "too early" },
      result("a"),
      { role: "assistant", content: [{ type: "thinking", text: "only thoughts" }] },
    ];
    expect(checkOpenAIShape(history)).toEqual([
      "message 2: tool result content is object, not a string",
      'message 3: tool call id "a" was used before',
      "the calls of assistant message 3 (a) have no tool message before message 4",
      'message 5: tool message "a" does not follow an assistant message that made that call (or answers it twice)',
      "message 6: an assistant message with neither content nor tool calls",
    ]);
  });
});
