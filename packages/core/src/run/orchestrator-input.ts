import { z } from "zod";
import { errorMessage, InvalidHistoryError, ReservedEventError } from "../errors.js";
import { eventSchemaFor, InvalidEventError, safeParseEventOfType } from "../events/event-registry.js";
import type { OrchestratorEvent } from "../events/schemas.js";
import { agentMessageSchema, assistantMessageSchema, type ToolCall } from "../messages.js";

// What an orchestrator hands the run's services, checked before anything of it is kept: an event
// that would fail its schema, a message the history could not hold, a call the orchestrator could
// still change. Every consumer checks the stream, and the history outlives the run, so a bad value
// is refused here with a typed error rather than found later by someone else.

/**
 * `ctx.emit`'s event as the run publishes it: the fields its type's schema checked. Refuses
 * the framework's own types (`ReservedEventError`), types nobody registered, events that fail
 * their schema and a `custom` event whose `data` is not JSON (`InvalidEventError`).
 */
export function checkedEvent(event: OrchestratorEvent, runId: string): OrchestratorEvent {
  const notAnEvent = 'ctx.emit() takes an event: an object with a string "type".';
  if (typeof event !== "object" || event === null) throw new InvalidEventError(notAnEvent);
  // Read once, here: a getter or a proxy that throws is the event's fault, said as such, and one
  // that answers otherwise on a later read cannot show the schema one event and publish another.
  let fields: Record<string, unknown>;
  try {
    fields = { ...event };
  } catch (cause) {
    throw new InvalidEventError(`ctx.emit()'s event could not be read: ${errorMessage(cause)}.`, { cause });
  }
  const { type } = fields;
  if (typeof type !== "string") throw new InvalidEventError(notAnEvent);
  if (Object.hasOwn(RESERVED_EVENTS, type))
    throw new ReservedEventError(type, RESERVED_EVENTS[type as keyof typeof RESERVED_EVENTS]);
  // Consumers validate every event: one nobody registered, or one that fails its schema, would
  // be rejected by all of them (and the stream would no longer keep the protocol).
  const schema = eventSchemaFor(type);
  if (schema === undefined)
    throw new InvalidEventError(
      `Unknown event type "${type}": register its schema (registerEventSchema) before emitting it.`,
    );
  fields.runId = runId;
  fields.seq = 0;
  fields.ts = 0;
  const checked = safeParseEventOfType(schema, type, fields);
  if (!checked.success) throw checked.error;
  // What the schema read, not the caller's object: a field it does not describe (a BigInt, a
  // `toJSON` that throws) would reach every consumer unchecked, and break one that serializes the
  // event. The envelope is the publisher's to add.
  const { runId: _runId, seq: _seq, ts: _ts, ...payload } = checked.data as Record<string, unknown>;
  // `data` is the one payload no schema describes: a value that is not JSON would break every
  // consumer that serializes the event (an HTTP stream, the durable log), far from its cause.
  if (type === "custom") {
    const { data } = payload;
    const problem = data === undefined ? undefined : notJson(data, "data");
    if (problem !== undefined) throw new InvalidEventError(`Invalid "custom" event: ${problem}.`);
  }
  return payload as OrchestratorEvent;
}

/**
 * Where `value` is not JSON that reads the same in process as after `JSON.stringify`, as
 * `"<path>: <why>"`, or undefined when it is: `null`, booleans, strings, finite numbers, arrays of
 * such values and plain objects (prototype `Object.prototype` or `null`) of them, with `undefined`
 * allowed as an object's property (JSON leaves the property out, and it reads `undefined` either
 * way). Refused: BigInt, symbols, functions, NaN and ±Infinity (JSON writes `null`), `undefined` or
 * a hole in an array (JSON writes `null`), cycles, and every other object (a `Date`, a `Map`, a
 * class instance, with or without `toJSON`: a listener would get the object, a client its JSON).
 * The same object twice, not inside itself, is fine: JSON writes it twice.
 */
export function notJson(value: unknown, path: string): string | undefined {
  try {
    return jsonProblem(value, path, []);
  } catch (error) {
    // A getter or a proxy's trap that throws, or data nested deeper than the stack.
    return `${path}: could not be read (${reasonOf(error)})`;
  }
}

function jsonProblem(
  value: unknown,
  path: string,
  ancestors: { object: object; path: string }[],
): string | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `${path}: ${value} is not JSON (JSON writes null)`;
    case "bigint":
      return `${path}: BigInt is not JSON`;
    case "symbol":
      return `${path}: a symbol is not JSON`;
    case "function":
      return `${path}: a function is not JSON`;
    case "undefined":
      return `${path}: undefined is not JSON`;
  }
  if (value === null) return undefined;
  const object = value as object;
  const cycle = ancestors.find((ancestor) => ancestor.object === object);
  if (cycle !== undefined) return `${path}: a cycle is not JSON (this is ${cycle.path} again)`;
  ancestors.push({ object, path });
  if (Array.isArray(object)) {
    for (let index = 0; index < object.length; index++) {
      const item: unknown = object[index];
      const at = `${path}[${index}]`;
      if (item === undefined) return `${at}: undefined in an array is not JSON (JSON writes null)`;
      const problem = jsonProblem(item, at, ancestors);
      if (problem !== undefined) return problem;
    }
  } else {
    const prototype: unknown = Object.getPrototypeOf(object);
    if (!isPlainPrototype(prototype)) {
      const name = (prototype as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      const what =
        typeof name === "string" && name !== ""
          ? `${/^[AEIOU]/.test(name) ? "an" : "a"} ${name}`
          : "an object with a prototype";
      return `${path}: ${what} is not JSON (only plain objects and arrays are: convert it first)`;
    }
    for (const key of Object.keys(object)) {
      const at = `${path}${keyPath(key)}`;
      let item: unknown;
      try {
        item = (object as Record<string, unknown>)[key];
      } catch (error) {
        return `${at}: could not be read (${reasonOf(error)})`;
      }
      if (item === undefined) continue;
      const problem = jsonProblem(item, at, ancestors);
      if (problem !== undefined) return problem;
    }
  }
  ancestors.pop();
  return undefined;
}

/** `Object.prototype` (of this realm or another: data from a `vm` context or a worker), or `null`. */
function isPlainPrototype(prototype: unknown): boolean {
  if (prototype === null || prototype === Object.prototype) return true;
  return (
    Object.getPrototypeOf(prototype) === null &&
    (prototype as { constructor?: { name?: unknown } }).constructor?.name === "Object"
  );
}

function reasonOf(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "it threw";
  }
}

/** `.key`, or `["some key"]` for a key that is not an identifier. */
function keyPath(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
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
