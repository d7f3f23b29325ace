import {
  type AgentEvent,
  type AgentMessage,
  type AssistantMessage,
  type RunResult,
  type ToolResultMessage,
  validateTranscript,
} from "@agent-core/core";
import { assertEventProtocol } from "@agent-core/testing";
import { EPOCH, type Observation, type RunRecord, SETTLE_SLACK_MS } from "./harness.js";
import { checkOpenAIShape } from "./openai-shape.js";
import type { RecordedSpan } from "./span-recorder.js";

/**
 * The guarantees every run must keep whatever the timeline did, one named check each. A check
 * returns one line per violation; `describeFailures` adds the timeline, the runs, every event heard
 * and the final history, so a failure can be read without replaying it.
 */

type Check = (observation: Observation) => string[];

/** "At once" for a queued run aborted by `run.abort()`: the same virtual millisecond, give or take one. */
const AT_ONCE_MS = 1;

const heardOf = (observation: Observation, record: RunRecord): AgentEvent[] =>
  observation.heard.filter((event) => event.runId === record.run.runId);

const settled = (observation: Observation) =>
  observation.runs.filter(
    (record): record is RunRecord & { result: RunResult } => record.result !== undefined,
  );

/** Each run's events: one `agent_start`, first; one `agent_end`. */
export const startsAndEndsOnce: Check = (observation) =>
  observation.runs.flatMap((record) => {
    const events = heardOf(observation, record);
    if (record.result === undefined && events.length === 0) return [];
    const starts = events.filter((event) => event.type === "agent_start").length;
    const ends = events.filter((event) => event.type === "agent_end").length;
    const problems: string[] = [];
    if (events[0]?.type !== "agent_start")
      problems.push(`${record.label}: the first event is ${events[0]?.type}`);
    if (starts !== 1) problems.push(`${record.label}: ${starts} agent_start events`);
    if (ends !== 1 && record.result !== undefined) problems.push(`${record.label}: ${ends} agent_end events`);
    return problems;
  });

/** A listener hears nothing of a run after its `agent_end`. */
export const nothingAfterAgentEnd: Check = (observation) =>
  observation.runs.flatMap((record) => {
    const events = heardOf(observation, record);
    const end = events.findIndex((event) => event.type === "agent_end");
    const late = end === -1 ? [] : events.slice(end + 1);
    return late.length === 0
      ? []
      : [
          `${record.label}: heard after agent_end: ${late.map((event) => `#${event.seq} ${event.type}`).join(", ")}`,
        ];
  });

/** `seq` is 0, 1, 2… without gaps or repeats, as a listener hears it. */
export const seqGapless: Check = (observation) =>
  observation.runs.flatMap((record) => {
    const bad = heardOf(observation, record).findIndex((event, index) => event.seq !== index);
    return bad === -1
      ? []
      : [`${record.label}: event ${bad} has seq ${heardOf(observation, record)[bad]?.seq}`];
  });

/** `ts` never goes backwards within a run (shown relative to the run's first event). */
export const tsNonDecreasing: Check = (observation) =>
  observation.runs.flatMap((record) =>
    heardOf(observation, record).flatMap((event, index, events) => {
      const previous = events[index - 1];
      const origin = events[0]?.ts ?? 0;
      return previous && event.ts < previous.ts
        ? [
            `${record.label}: #${event.seq} ${event.type} has ts +${event.ts - origin}, before #${previous.seq} ${previous.type} at +${previous.ts - origin}`,
          ]
        : [];
    }),
  );

/** The testing kit's protocol check on the run's own stream: schemas, turns, `error` placement. */
export const eventProtocol: Check = (observation) =>
  settled(observation).flatMap((record) => {
    try {
      assertEventProtocol(record.run.events);
      return [];
    } catch (error) {
      return [`${record.label}: ${(error as Error).message}`];
    }
  });

/** Every `tool_call` gets exactly one later `tool_result`, and no result answers nothing. */
export const oneResultPerCall: Check = (observation) =>
  settled(observation).flatMap((record) => {
    const problems: string[] = [];
    const calls = new Map<string, number>();
    const results = new Map<string, number>();
    for (const event of heardOf(observation, record)) {
      if (event.type === "tool_call") calls.set(event.toolCallId, (calls.get(event.toolCallId) ?? 0) + 1);
      if (event.type !== "tool_result") continue;
      if (!calls.has(event.toolCallId))
        problems.push(
          `${record.label}: tool_result "${event.toolCallId}" (#${event.seq}) without a tool_call before it`,
        );
      results.set(event.toolCallId, (results.get(event.toolCallId) ?? 0) + 1);
    }
    for (const [id, count] of calls)
      if (count !== 1) problems.push(`${record.label}: ${count} tool_call events for "${id}"`);
    for (const [id, count] of results)
      if (count !== 1) problems.push(`${record.label}: ${count} tool_result events for "${id}"`);
    for (const id of calls.keys())
      if (!results.has(id)) problems.push(`${record.label}: tool_call "${id}" has no tool_result`);
    return problems;
  });

/**
 * The history an ended run leaves: whole, except the calls waiting for approval or for a client
 * tool's result (by design). A run
 * aborted while queued reports the history as the last finished run left it, which may be such a
 * wait too: its trailing unanswered calls are exempt as well (it added nothing itself).
 */
function endedHistory(result: RunResult): { messages: AgentMessage[]; problems: string[] } {
  const neverRan = result.stopReason === "aborted" && result.newMessages.length === 0;
  const waits = result.stopReason === "awaiting_approval" || result.stopReason === "awaiting_client_tool";
  if (!waits && !neverRan) return { messages: result.messages, problems: [] };
  const last = result.messages.findLastIndex((message) => message.role === "assistant");
  if (neverRan) {
    // A wait may hold results already: those of calls run beside the batch that suspended.
    const tail = result.messages.slice(last + 1);
    const waiting = last >= 0 && tail.every((message) => message.role === "toolResult");
    return { messages: waiting ? result.messages.slice(0, last) : result.messages, problems: [] };
  }
  const content = (result.messages[last]?.content ?? []) as { type: string; id?: string }[];
  const ids = new Set(content.filter((part) => part.type === "toolCall").map((part) => part.id));
  const pending = [...(result.pendingApprovals ?? []), ...(result.pendingClientTools ?? [])];
  const problems = pending
    .filter((call) => !ids.has(call.toolCallId))
    .map((call) => `pending call "${call.toolCallId}" is not one of the last assistant message's calls`);
  const listed =
    result.stopReason === "awaiting_approval" ? result.pendingApprovals : result.pendingClientTools;
  if ((listed ?? []).length === 0) problems.push(`${result.stopReason} without its pending calls`);
  if (result.messages.slice(last + 1).some((message) => message.role !== "toolResult"))
    problems.push("messages follow the calls waiting for approval or a client tool");
  return { messages: result.messages.slice(0, last), problems };
}

/** Each ended run's history, and the history after the drain. */
function histories(
  observation: Observation,
): { label: string; messages: AgentMessage[]; problems: string[] }[] {
  const ended = settled(observation).map((record) => ({
    label: record.label,
    ...endedHistory(record.result),
  }));
  return observation.drained
    ? [...ended, { label: "after the drain", messages: observation.finalHistory, problems: [] }]
    : ended;
}

/** `validateTranscript` finds nothing in any history a run ends with. */
export const transcriptValid: Check = (observation) =>
  histories(observation).flatMap(({ label, messages, problems }) =>
    [...problems, ...validateTranscript(messages)].map((problem) => `${label}: ${problem}`),
  );

/** The same histories pass the strict OpenAI-shaped checker. */
export const openAIShape: Check = (observation) =>
  histories(observation).flatMap(({ label, messages }) =>
    checkOpenAIShape(messages).map((problem) => `${label}: ${problem}`),
  );

const resultsById = (messages: readonly AgentMessage[]) => {
  const byId = new Map<string, ToolResultMessage[]>();
  for (const message of messages)
    if (message.role === "toolResult") {
      const result = message as ToolResultMessage;
      byId.set(result.toolCallId, [...(byId.get(result.toolCallId) ?? []), result]);
    }
  return byId;
};

/** Ids the model gave to more than one call: the transcript checks report them; pairing them is ambiguous. */
const idsTheModelRepeated = (observation: Observation) => {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const message of observation.finalHistory)
    if (message.role === "assistant")
      for (const part of (message as AssistantMessage).content)
        if (part.type === "toolCall") (seen.has(part.id) ? repeated : seen).add(part.id);
  return repeated;
};

/** The history stores the result the events announced, once, for every call announced. */
export const historyAgreesWithEvents: Check = (observation) => {
  if (!observation.drained) return [];
  const stored = resultsById(observation.finalHistory);
  const repeated = idsTheModelRepeated(observation);
  return settled(observation).flatMap((record) =>
    heardOf(observation, record).flatMap((event) => {
      if (event.type !== "tool_call" && event.type !== "tool_result") return [];
      if (repeated.has(event.toolCallId)) return [];
      const statuses = (stored.get(event.toolCallId) ?? []).map((result) => result.status);
      if (statuses.length !== 1)
        return [`${record.label}: "${event.toolCallId}" has ${statuses.length} results in the history`];
      return event.type === "tool_result" && statuses[0] !== event.status
        ? [
            `${record.label}: "${event.toolCallId}" is ${event.status} in its event but ${statuses[0]} in the history`,
          ]
        : [];
    }),
  );
};

/** A call whose tool returned `ok` before its signal aborted (no `afterToolCall` pending) stays `ok`. */
export const finishedCallsKeepOk: Check = (observation) => {
  if (!observation.drained) return [];
  const stored = resultsById(observation.finalHistory);
  const repeated = idsTheModelRepeated(observation);
  const announced = new Map<string, string[]>();
  for (const event of observation.heard)
    if (event.type === "tool_result")
      announced.set(event.toolCallId, [...(announced.get(event.toolCallId) ?? []), event.status]);
  return [...observation.finishedOk].flatMap((id) => {
    if (repeated.has(id)) return [];
    const problems: string[] = [];
    const events = announced.get(id) ?? [];
    const results = (stored.get(id) ?? []).map((result) => result.status);
    if (events.length === 0 || events.some((status) => status !== "ok"))
      problems.push(`"${id}" finished ok, but its tool_result events say ${events.join(", ") || "nothing"}`);
    if (results.length === 0 || results.some((status) => status !== "ok"))
      problems.push(`"${id}" finished ok, but the history says ${results.join(", ") || "nothing"}`);
    return problems;
  });
};

const userText = (message: AgentMessage): string | undefined => {
  if (message.role !== "user") return undefined;
  const content = (message as { content: unknown }).content;
  return typeof content === "string"
    ? content
    : (content as { text: string }[]).map((part) => part.text).join("");
};

/** Everything a result reports besides the histories, where a run may hand back messages it did not use. */
const reportedBesideHistory = (result: RunResult) => {
  const { messages: _messages, newMessages: _newMessages, ...rest } = result;
  return JSON.stringify(rest, (_key, value) => (typeof value === "bigint" ? String(value) : value));
};

/** Every steered or followed-up message reaches the history (at the latest in the drain) or is reported. */
export const noQueuedMessageLost: Check = (observation) => {
  if (!observation.drained) return [];
  const inHistory = new Set(observation.finalHistory.map(userText));
  const reported = settled(observation).map((record) => reportedBesideHistory(record.result));
  return [...observation.steered, ...observation.followedUp]
    .filter((text) => !inHistory.has(text) && !reported.some((json) => json.includes(JSON.stringify(text))))
    .map((text) => `${text} never reached the history, nor was it reported on a result`);
};

/** A run ends within `abortGraceMs` (plus slack) of its first abort or its total timeout; the drain ends. */
export const endsWithinGrace: Check = (observation) => {
  const { abortGraceMs } = observation.raceCase.setup;
  return observation.runs.flatMap((record) => {
    if (record.kind === "drain")
      return record.settledAt === undefined ? ["the drain prompt never settled"] : [];
    const { startedAt, totalMs } = record;
    const timeout = startedAt !== undefined && totalMs !== undefined ? startedAt + totalMs : undefined;
    const trigger = Math.min(
      record.abortedAt ?? Number.POSITIVE_INFINITY,
      timeout ?? Number.POSITIVE_INFINITY,
    );
    const deadline = trigger + abortGraceMs + SETTLE_SLACK_MS;
    const reason = trigger === timeout ? "its total timeout" : "its abort";
    if (record.settledAt === undefined)
      return [`${record.label} never settled (${reason} at t=${trigger - EPOCH}, grace ${abortGraceMs} ms)`];
    return record.settledAt > deadline
      ? [
          `${record.label} settled at t=${record.settledAt - EPOCH}, after ${reason} at t=${trigger - EPOCH} + grace ${abortGraceMs} + slack ${SETTLE_SLACK_MS}`,
        ]
      : [];
  });
};

/** A run aborted before it started ends `aborted` and its prompt reaches neither the history nor the model. */
export const abortedQueuedRunNeverRuns: Check = (observation) =>
  observation.runs.flatMap((record) => {
    if (record.queuedAbort === undefined) return [];
    const problems: string[] = [];
    const { result, settledAt, abortedAt = 0, text } = record;
    const by = `${record.label} (${record.queuedAbort} while queued, t=${abortedAt - EPOCH})`;
    if (result && result.stopReason !== "aborted") problems.push(`${by} ended ${result.stopReason}`);
    if (record.queuedAbort === "run.abort()" && settledAt !== undefined && settledAt - abortedAt > AT_ONCE_MS)
      problems.push(`${by} settled only at t=${settledAt - EPOCH}`);
    if (text !== undefined) {
      if (observation.finalHistory.some((message) => userText(message) === text))
        problems.push(`${by}: its prompt entered the history`);
      if (observation.modelPrompts.some((prompt) => prompt.includes(JSON.stringify(text))))
        problems.push(`${by}: its prompt reached the model`);
    }
    return problems;
  });

/**
 * The trace (docs/observability.md): every span ended once, and no later than its run's span (a
 * call the orchestrator did not await may outlive its turn); each with the run id of the
 * `invoke_agent` span its tree hangs from; one run span per run that started, at the root (the
 * harness starts runs in no active span).
 */
export const spansEndOnceInTheirRun: Check = (observation) => {
  const { spans } = observation;
  const byId = new Map(spans.spans.map((span) => [span.spanId, span]));
  const runSpanOf = (span: RecordedSpan): RecordedSpan | undefined => {
    const parent = span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId);
    return parent === undefined ? undefined : parent.name === "invoke_agent" ? parent : runSpanOf(parent);
  };
  const problems: string[] = [];
  for (const span of spans.spans) {
    const runId = spans.runIdOf(span);
    const what = `${span.name} (${String(runId)})`;
    if (span.ends !== 1) problems.push(`${what}: ended ${span.ends} times`);
    if (typeof runId !== "string") problems.push(`${what}: no agent_core.run.id`);
    if (span.name === "invoke_agent") {
      if (span.parentSpanId !== undefined) problems.push(`${what}: a run span with a parent`);
      continue;
    }
    const runSpan = runSpanOf(span);
    if (runSpan === undefined) problems.push(`${what}: not under a run span of the case`);
    else if (spans.runIdOf(runSpan) !== runId)
      problems.push(`${what}: under the run span of ${String(spans.runIdOf(runSpan))}`);
    else if ((span.endedOrder ?? 0) > (runSpan.endedOrder ?? Number.POSITIVE_INFINITY))
      problems.push(`${what}: ended after its run span`);
  }
  for (const record of observation.runs) {
    if (heardOf(observation, record).length === 0) continue;
    const runSpans = spans.spans.filter(
      (span) => span.name === "invoke_agent" && spans.runIdOf(span) === record.run.runId,
    ).length;
    if (runSpans !== 1) problems.push(`${record.label}: ${runSpans} invoke_agent spans`);
  }
  return problems;
};

/** `prompt`, `abort`, `steer`, `followUp`, `approve` and `deny` never throw here. */
export const publicCallsDoNotThrow: Check = (observation) => observation.thrown;

export const invariants = {
  startsAndEndsOnce,
  nothingAfterAgentEnd,
  seqGapless,
  tsNonDecreasing,
  eventProtocol,
  oneResultPerCall,
  transcriptValid,
  openAIShape,
  historyAgreesWithEvents,
  finishedCallsKeepOk,
  noQueuedMessageLost,
  endsWithinGrace,
  abortedQueuedRunNeverRuns,
  publicCallsDoNotThrow,
  spansEndOnceInTheirRun,
} satisfies Record<string, Check>;

export type InvariantName = keyof typeof invariants;

export interface Failure {
  invariant: InvariantName;
  problems: string[];
}

/** Runs every invariant, or those of `only`; returns the ones violated. */
export function checkInvariants(observation: Observation, only?: readonly InvariantName[]): Failure[] {
  return (Object.entries(invariants) as [InvariantName, Check][])
    .filter(([invariant]) => only === undefined || only.includes(invariant))
    .map(([invariant, check]) => ({ invariant, problems: check(observation) }))
    .filter((failure) => failure.problems.length > 0);
}

// ----- the failure report -----

const MAX_EVENTS_SHOWN = 400;

/** `t`: when a listener heard it, in virtual ms (its `ts` comes from the core's clock). */
function describeEvent(event: AgentEvent, heardAt: number | undefined): string {
  const at = `#${event.seq} t=${(heardAt ?? EPOCH) - EPOCH} ${event.type}`;
  switch (event.type) {
    case "tool_call":
      return `${at} ${event.toolCallId} ${event.toolName} ${JSON.stringify(event.args)}`;
    case "tool_result":
      return `${at} ${event.toolCallId} ${event.status}${event.error ? ` (${event.error.slice(0, 80)})` : ""}`;
    case "text_delta":
      return `${at} ${JSON.stringify(event.text)}`;
    case "steering_mode":
      return `${at} ${event.mode} ${event.queueSize}`;
    case "steering_applied":
      return `${at} ${event.messages.map((message) => JSON.stringify(userText(message) ?? message.role)).join(", ")}`;
    case "plan_created":
      return `${at} ${event.steps.map((step) => step.id).join(", ")}`;
    case "error":
      return `${at} ${event.code}: ${event.message}`;
    case "agent_end":
      return `${at} ${event.stopReason}`;
    default:
      return at;
  }
}

function describeMessage(message: AgentMessage, index: number): string {
  if (message.role === "toolResult") {
    const result = message as ToolResultMessage;
    return `${index} toolResult ${result.toolCallId} ${result.status}`;
  }
  if (message.role === "assistant") {
    const parts = (message.content as { type: string; id?: string; text?: string }[]).map((part) =>
      part.type === "toolCall" ? `call ${part.id}` : `${part.type} ${JSON.stringify(part.text)}`,
    );
    return `${index} assistant ${parts.join(" | ")}`;
  }
  return `${index} ${message.role} ${JSON.stringify(userText(message) ?? "")}`;
}

export function describeFailures(observation: Observation, failures: readonly Failure[]): string {
  const lines = [`Race invariants violated (${observation.raceCase.mode}):`];
  for (const { invariant, problems } of failures) {
    lines.push(`✗ ${invariant}`);
    for (const problem of problems) lines.push(`    - ${problem}`);
  }
  lines.push("Timeline (virtual ms):", ...observation.actions.map((action) => `  ${action}`));
  lines.push("Runs:");
  for (const record of observation.runs) {
    const ended = record.result
      ? `${record.result.stopReason} at t=${(record.settledAt ?? EPOCH) - EPOCH}`
      : "never settled";
    lines.push(
      `  ${record.label} (${record.run.runId.slice(0, 8)}): created t=${record.createdAt - EPOCH}, ${ended}`,
    );
  }
  lines.push("Events heard:");
  for (const record of observation.runs) {
    lines.push(`  ${record.label}`);
    for (const event of heardOf(observation, record).slice(0, MAX_EVENTS_SHOWN))
      lines.push(`    ${describeEvent(event, observation.heardAt.get(event))}`);
  }
  lines.push(
    "History after the run(s):",
    ...observation.finalHistory.map((m, i) => `  ${describeMessage(m, i)}`),
  );
  return lines.join("\n");
}
