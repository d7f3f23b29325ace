import { z } from "zod";
import { AgentError, InvalidConfigError } from "../errors.js";
import { type AgentEvent, type Envelope, envelopeSchema, eventSchemas } from "./schemas.js";

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
 * conformance kit, the CLI) validates it. Registering the same schema again, or one defined alike (a
 * package installed twice, each copy building its own), does nothing and the first stays; a type of
 * core's, or one registered with another schema, throws an `InvalidConfigError`.
 */
export function registerEventSchema<T extends string>(type: T, schema: EventSchema<T>): void {
  if (typeof type !== "string" || type.trim() === "")
    throw new InvalidConfigError("registerEventSchema() needs a non-empty event type.");
  // An event's type is matched exactly: " tool_call" would be a type of its own, no one's events.
  if (type.trim() !== type)
    throw new InvalidConfigError(
      `registerEventSchema(${JSON.stringify(type)}): an event type has no surrounding whitespace.`,
    );
  if (typeof (schema as Partial<EventSchema> | null)?.safeParse !== "function")
    throw new InvalidConfigError(
      `registerEventSchema("${type}") needs a zod schema (see defineEventSchema).`,
    );
  const mismatch = fieldsMismatch(type, schema);
  if (mismatch !== undefined)
    throw new InvalidConfigError(
      `registerEventSchema("${type}"): the schema ${mismatch}; build it with defineEventSchema("${type}", { … }).`,
    );
  if (Object.hasOwn(eventSchemas, type))
    throw new InvalidConfigError(`"${type}" is a core event type: a plug-in cannot register it.`);
  const registered = schemas.get(type);
  if (registered === undefined) schemas.set(type, schema);
  else if (registered !== schema && !definedAlike(registered, schema))
    throw new InvalidConfigError(
      `The event type "${type}" is already registered with another schema: two plug-ins cannot share a type, so namespace yours.`,
    );
}

/**
 * What an object schema's fields show it would get wrong about the events of `type`: a schema without
 * the envelope strips `runId`, `seq` and `ts` from every event it parses, one whose `type` field
 * takes another type fails them all. A schema that is no object (a union, a pipe) shows nothing.
 */
function fieldsMismatch(type: string, schema: EventSchema): string | undefined {
  try {
    const shape = (schema as { shape?: Record<string, Partial<z.ZodType> | undefined> }).shape;
    if (typeof shape !== "object" || shape === null) return undefined;
    const missing = Object.keys(envelopeSchema.shape).filter((key) => !Object.hasOwn(shape, key));
    if (missing.length > 0) return `has no ${missing.join(", ")} (the envelope every event carries)`;
    if (shape.type?.safeParse?.(type).success !== true)
      return `has a "type" field that does not take "${type}"`;
    return undefined;
  } catch {
    return undefined; // a schema that throws when read: its parse says so (safeParseEventOfType)
  }
}

function definedAlike(registered: EventSchema, schema: EventSchema): boolean {
  try {
    return sameDefinition(registered, schema);
  } catch {
    return false; // a definition that throws when read (a getter) cannot be shown to be the same
  }
}

/**
 * Whether two zod schemas were defined alike: the same kinds, fields, checks and values, their
 * functions (refinements, transforms) by source text. A package installed twice registers its
 * schemas once per copy, each copy building its own objects: those match; another plug-in's rarely
 * would. Asked only when a type is registered again, so it may walk the whole definition.
 */
function sameDefinition(a: unknown, b: unknown, compared = new Map<object, Set<object>>()): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a === "function" && typeof b === "function") return String(a) === String(b);
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  // A zod schema or check is compared by its definition, not by its methods and caches.
  const left = zodDefinition(a) ?? a;
  const right = zodDefinition(b) ?? b;
  const prototype = Object.getPrototypeOf(left);
  if (prototype !== Object.getPrototypeOf(right)) return false;
  // A RegExp, a Date: what they print is what they are.
  if (prototype !== Object.prototype && prototype !== Array.prototype && prototype !== null)
    return String(left) === String(right);
  // A recursive schema meets this pair again: it is equal unless some other part differs.
  const seen = compared.get(left) ?? new Set<object>();
  if (seen.has(right)) return true;
  compared.set(left, seen.add(right));
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every(
      (key) =>
        Object.hasOwn(right, key) &&
        sameDefinition(
          (left as Record<string, unknown>)[key],
          (right as Record<string, unknown>)[key],
          compared,
        ),
    )
  );
}

function zodDefinition(value: object): object | undefined {
  const definition = (value as { _zod?: { def?: unknown } })._zod?.def;
  return typeof definition === "object" && definition !== null ? definition : undefined;
}

/** The schema of a core or registered event type, or undefined for a type no one registered. */
export function eventSchemaFor(type: string): EventSchema | undefined {
  return schemas.get(type);
}

/** Validates any event of the protocol (core's and the registered plug-ins'), or says why it is not one. */
export function safeParseAgentEvent(value: unknown): ParsedEvent {
  const type = (value as { type?: unknown } | null)?.type;
  if (typeof value !== "object" || typeof type !== "string")
    return { success: false, error: new InvalidEventError('An event is an object with a string "type".') };
  const schema = schemas.get(type);
  if (schema === undefined) {
    const known = [...schemas.keys()].join(", ");
    const message = `Unknown event type "${type}". Known types: ${known}. A plug-in's events are known once its package is imported.`;
    return { success: false, error: new InvalidEventError(message) };
  }
  return safeParseEventOfType(schema, type, value);
}

type ParsedEvent = { success: true; data: AgentEvent } | { success: false; error: InvalidEventError };

/**
 * `value` checked against `schema`, the schema of its `type`: the event, or an `InvalidEventError`
 * naming the fields that fail it. Never throws, also for a schema that does.
 */
export function safeParseEventOfType(schema: EventSchema, type: string, value: unknown): ParsedEvent {
  let parsed: ReturnType<EventSchema["safeParse"]>;
  try {
    parsed = schema.safeParse(value);
  } catch (error) {
    // A plug-in's schema can throw (a refinement that does, an async one zod cannot run here): the
    // consumer reading a stream of events still gets an answer, which says whose fault it is.
    const reason = error instanceof Error ? error.message : String(error);
    const message = `The schema registered for "${type}" failed instead of judging the event: ${reason}`;
    return { success: false, error: new InvalidEventError(message, { cause: error }) };
  }
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
