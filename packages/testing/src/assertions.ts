import {
  type AgentEvent,
  type AgentEventType,
  type AgentMessage,
  safeParseAgentEvent,
  validateTranscript,
} from "@agent-core/core";

/** Reads every event of a run (or any event stream) to its end. */
export async function collectEvents(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  // A slip (the run's result, a run not made) would otherwise reject with "events is not async
  // iterable", or, for a string, collect its characters.
  if (
    typeof events !== "object" ||
    events === null ||
    !(Symbol.asyncIterator in events || Symbol.iterator in events)
  )
    throw new TypeError(
      `collectEvents takes a run (or any async iterable of events), got ${events === null ? "null" : typeof events}.`,
    );
  const collected: AgentEvent[] = [];
  for await (const event of events) collected.push(event);
  return collected;
}

/** The `type` of each event, in order: handy for `expect(eventTypes(events)).toEqual([...])`. */
export function eventTypes(events: readonly AgentEvent[]): AgentEventType[] {
  checkEventList(events, "eventTypes");
  return events.map((event) => event.type);
}

/** The events of one type, narrowed. */
export function eventsOf<T extends AgentEventType>(
  events: readonly AgentEvent[],
  type: T,
): Extract<AgentEvent, { type: T }>[] {
  checkEventList(events, "eventsOf");
  if (typeof type !== "string")
    throw new TypeError(
      `eventsOf: the type must be an event type such as "tool_call", got ${type === null ? "null" : typeof type}.`,
    );
  return events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);
}

// What the helpers are given comes from a test's own code: a slip (the run itself, or a list with
// a hole) would otherwise fail inside them as "events.filter is not a function".
function checkEventList(events: unknown, helper: string): asserts events is readonly AgentEvent[] {
  checkIsList(events, helper);
  // Indexed, not forEach: a hole is no event either.
  for (let index = 0; index < events.length; index++) {
    const event: unknown = events[index];
    if (typeof event !== "object" || event === null)
      throw new TypeError(
        `${helper}: entry ${index} is not an event (${event === null ? "null" : typeof event}).`,
      );
  }
}

function checkIsList(events: unknown, helper: string): asserts events is readonly unknown[] {
  if (!Array.isArray(events))
    throw new TypeError(
      `${helper} takes the list of a run's events (run.events, or collectEvents(run)), got ${events === null ? "null" : typeof events}.`,
    );
}

/** Throws unless every tool call in the history has exactly one result, in call order, right after it. */
export function assertValidTranscript(messages: readonly AgentMessage[]): void {
  const problems = validateTranscript(messages);
  if (problems.length > 0) throw new Error(`Invalid transcript:\n- ${problems.join("\n- ")}`);
}

/** The stop reasons a run ends with without an `error` event (docs/events.md, ordering rule 2). */
const ENDINGS_WITHOUT_ERROR: ReadonlySet<string> = new Set([
  "completed",
  "awaiting_approval",
  "awaiting_client_tool",
]);

/**
 * Throws unless the events of one run keep the protocol: each matches its schema (core's, or the one
 * its plug-in registered: an unknown type fails); one runId;
 * `seq` 0, 1, 2… without gaps; `ts` never decreasing; `agent_start` first and `agent_end` last, once
 * each; `error` only right before `agent_end`, and there exactly when the run failed (any
 * `stopReason` but `completed`, `awaiting_approval` and `awaiting_client_tool`); every `tool_call`
 * answered by exactly one later `tool_result`; `turn_start`/`turn_end` in pairs, one turn at a time.
 */
export function assertEventProtocol(events: readonly AgentEvent[]): void {
  checkIsList(events, "assertEventProtocol");
  const problems: string[] = [];
  const runId = (events[0] as AgentEvent | null | undefined)?.runId;
  const open = new Set<string>();
  const answered = new Set<string>();
  let openTurns = 0;
  // Indexed, not forEach: a hole in the list is a missing event, not one to skip.
  for (let index = 0; index < events.length; index++) {
    const event: unknown = events[index];
    // Anything but an object (null, a number, a hole) has no fields to check beyond this.
    if (typeof event !== "object" || event === null) {
      problems.push(`event ${index} is not an event (${event === null ? "null" : typeof event})`);
      continue;
    }
    checkEvent(event as AgentEvent, index);
  }
  function checkEvent(event: AgentEvent, index: number): void {
    const parsed = safeParseAgentEvent(event);
    if (!parsed.success) problems.push(`event ${index}: ${parsed.error.message}`);
    if (event.runId !== runId) problems.push(`event ${index} has runId ${event.runId}, expected ${runId}`);
    if (event.seq !== index) problems.push(`event ${index} has seq ${event.seq}`);
    const previous: unknown = events[index - 1];
    if (typeof previous === "object" && previous !== null && event.ts < (previous as AgentEvent).ts)
      problems.push(
        `event ${index} has ts ${event.ts}, earlier than the event before it (${(previous as AgentEvent).ts})`,
      );
    if (event.type === "agent_start" && index !== 0) problems.push(`agent_start at ${index}, not first`);
    if (event.type === "agent_end" && index !== events.length - 1)
      problems.push(`agent_end at ${index}, not last`);
    if (event.type === "error" && event.toolCallId === undefined && index !== events.length - 2)
      problems.push(`error at ${index}, not before agent_end`);
    if (event.type === "turn_start" && ++openTurns > 1)
      problems.push(`turn_start at ${index} while a turn is open`);
    if (event.type === "turn_end" && --openTurns < 0)
      problems.push(`turn_end at ${index} without turn_start`);
    if (event.type === "tool_call") {
      if (open.has(event.toolCallId) || answered.has(event.toolCallId))
        problems.push(`tool_call "${event.toolCallId}" emitted twice`);
      open.add(event.toolCallId);
    }
    if (event.type === "tool_result") {
      if (!open.delete(event.toolCallId))
        problems.push(`tool_result "${event.toolCallId}" without an open tool_call`);
      answered.add(event.toolCallId);
    }
  }
  if (events[0]?.type !== "agent_start") problems.push("the first event is not agent_start");
  const last = events.at(-1);
  if (last?.type !== "agent_end") problems.push("the last event is not agent_end");
  else {
    const beforeEnd = events.at(-2);
    const failed = !ENDINGS_WITHOUT_ERROR.has(last.stopReason);
    const runError = beforeEnd?.type === "error" && beforeEnd.toolCallId === undefined;
    if (failed && !runError)
      problems.push(`the run ended "${last.stopReason}" without an error event before agent_end`);
    if (!failed && runError) problems.push(`the run ended "${last.stopReason}" after an error event`);
  }
  if (open.size > 0) problems.push(`tool calls without tool_result: ${[...open].join(", ")}`);
  if (openTurns !== 0) problems.push(`${openTurns} turn(s) without turn_end`);
  if (problems.length > 0) throw new Error(`Event protocol violated:\n- ${problems.join("\n- ")}`);
}
