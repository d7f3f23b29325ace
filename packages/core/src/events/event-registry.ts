import { z } from "zod";
import { AgentError, InvalidConfigError } from "../errors.js";
import { type AgentEvent, type Envelope, eventSchemas } from "./schemas.js";

/** The schema of one event type, envelope included: what `defineEventSchema(type, shape)` returns. */
export type EventSchema<T extends string = string> = z.ZodType<Envelope & { type: T }>;

/** An event that fails its schema, has a type no one registered, or is not an event at all. */
export class InvalidEventError extends AgentError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("invalid_event", message, options);
  }
}

// Module state, like the orchestrators of the root container: the protocol of this process.
const schemas = new Map<string, EventSchema>(Object.entries(eventSchemas));

/**
 * Adds a plug-in's event type to the protocol, so that every consumer (`parseAgentEvent`, the
 * conformance kit, the CLI) validates it. Registering the same schema again does nothing; a type of
 * core's, or one registered with another schema, throws an `InvalidConfigError`.
 */
export function registerEventSchema<T extends string>(type: T, schema: EventSchema<T>): void {
  if (typeof type !== "string" || type.trim() === "")
    throw new InvalidConfigError("registerEventSchema() needs a non-empty event type.");
  if (typeof (schema as Partial<EventSchema> | null)?.safeParse !== "function")
    throw new InvalidConfigError(
      `registerEventSchema("${type}") needs a zod schema (see defineEventSchema).`,
    );
  if (Object.hasOwn(eventSchemas, type))
    throw new InvalidConfigError(`"${type}" is a core event type: a plug-in cannot register it.`);
  const registered = schemas.get(type);
  if (registered === undefined) schemas.set(type, schema);
  else if (registered !== schema)
    throw new InvalidConfigError(
      `The event type "${type}" is already registered with another schema: two plug-ins cannot share a type, so namespace yours.`,
    );
}

/** The schema of a core or registered event type, or undefined for a type no one registered. */
export function eventSchemaFor(type: string): EventSchema | undefined {
  return schemas.get(type);
}

/** Validates any event of the protocol (core's and the registered plug-ins'), or says why it is not one. */
export function safeParseAgentEvent(
  value: unknown,
): { success: true; data: AgentEvent } | { success: false; error: InvalidEventError } {
  const type = (value as { type?: unknown } | null)?.type;
  if (typeof value !== "object" || typeof type !== "string")
    return { success: false, error: new InvalidEventError('An event is an object with a string "type".') };
  const schema = schemas.get(type);
  if (schema === undefined) {
    const known = [...schemas.keys()].join(", ");
    const message = `Unknown event type "${type}". Known types: ${known}. A plug-in's events are known once its package is imported.`;
    return { success: false, error: new InvalidEventError(message) };
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return { success: true, data: parsed.data as AgentEvent };
  const message = `Invalid "${type}" event:\n${z.prettifyError(parsed.error)}`;
  return { success: false, error: new InvalidEventError(message, { cause: parsed.error }) };
}

/** Like `safeParseAgentEvent`, but returns the event or throws its `InvalidEventError`. */
export function parseAgentEvent(value: unknown): AgentEvent {
  const parsed = safeParseAgentEvent(value);
  if (!parsed.success) throw parsed.error;
  return parsed.data;
}
