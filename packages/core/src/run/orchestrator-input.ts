import { z } from "zod";
import { InvalidHistoryError, ReservedEventError } from "../errors.js";
import { eventSchemaFor, InvalidEventError } from "../events/event-registry.js";
import type { OrchestratorEvent } from "../events/schemas.js";
import { agentMessageSchema, assistantMessageSchema, type ToolCall } from "../messages.js";

// What an orchestrator hands the run's services, checked before anything of it is kept: an event
// that would fail its schema, a message the history could not hold, a call the orchestrator could
// still change. Every consumer checks the stream, and the history outlives the run, so a bad value
// is refused here with a typed error rather than found later by someone else.

/**
 * `ctx.emit`'s event as the run publishes it: a copy, checked against its type's schema. Refuses
 * the framework's own types (`ReservedEventError`), types nobody registered and events that fail
 * their schema (`InvalidEventError`).
 */
export function checkedEvent(event: OrchestratorEvent, runId: string): OrchestratorEvent {
  const type = (event as { type?: unknown } | null)?.type;
  if (typeof event !== "object" || typeof type !== "string")
    throw new InvalidEventError('ctx.emit() takes an event: an object with a string "type".');
  if (Object.hasOwn(RESERVED_EVENTS, type))
    throw new ReservedEventError(type, RESERVED_EVENTS[type as keyof typeof RESERVED_EVENTS]);
  // Consumers validate every event: one nobody registered, or one that fails its schema, would
  // be rejected by all of them (and the stream would no longer keep the protocol).
  const schema = eventSchemaFor(type);
  if (schema === undefined)
    throw new InvalidEventError(
      `Unknown event type "${type}": register its schema (registerEventSchema) before emitting it.`,
    );
  const copy = { ...event };
  const checked = schema.safeParse({ ...copy, runId, seq: 0, ts: 0 });
  if (!checked.success)
    throw new InvalidEventError(`Invalid "${type}" event:\n${z.prettifyError(checked.error)}`, {
      cause: checked.error,
    });
  return copy;
}

/** `ctx.endTurn`'s message: `turn_end` carries it, so one that is not an assistant message is refused. */
export function checkTurnMessage(message: unknown): void {
  const parsed = assistantMessageSchema.safeParse(message);
  if (!parsed.success)
    throw new InvalidEventError(
      `ctx.endTurn() takes the turn's assistant message:\n${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
}

/** A call as a batch keeps it (a value that is not a call is kept as it is, for the batch to refuse). */
export function copyOf(call: ToolCall): ToolCall {
  if (call === null || typeof call !== "object") return call;
  const { id, name, args, originalId } = call;
  return originalId === undefined ? { id, name, args } : { id, name, args, originalId };
}

/**
 * Throws an `InvalidHistoryError` unless `message` is a message of the history (`agentMessageSchema`:
 * the three roles the model reads checked in full, an app's own role needing only its `role`). A
 * malformed one would make the history one that `new Agent({ messages })` refuses and a provider
 * rejects, for every later run of the agent.
 */
export function checkMessage(message: unknown, what: string): void {
  const parsed = agentMessageSchema.safeParse(message);
  if (!parsed.success)
    throw new InvalidHistoryError(`${what} got a malformed message:\n${z.prettifyError(parsed.error)}`);
}

/** Events only the framework emits, because their ordering rules are its guarantees. */
const RESERVED_EVENTS = {
  agent_start: "the framework (it starts every run)",
  agent_end: "the framework (it ends every run)",
  error: "the framework (throw an AgentError instead)",
  turn_start: "ctx.startTurn()",
  turn_end: "ctx.endTurn(message)",
  steering_mode: "ctx.decide() and ctx.generateObject() (every model decision reports it)",
  tool_call: "ctx.executeTools(calls)",
  tool_result: "ctx.executeTools(calls)",
  steering_applied: "ctx.applySteering(messages)",
} as const;
