import type { core, z } from "zod";
import { errorMessage, InvalidConfigError } from "./errors.js";
import { hasThenMethod, refusedPromise } from "./run/checked-messages.js";

// How a refused setting is reported: each bad field's path, the domain it must be in and the value
// it has, whichever schema (the agent's config, a prompt's options, a plug-in's options) refused it.

/** One bad setting: its dotted path (`timeouts.toolMs`) and what is wrong with it. */
export interface ConfigIssue {
  path: string;
  message: string;
}

/** An `InvalidConfigError` that lists every bad setting of a config, one line each. */
export class AgentConfigError extends InvalidConfigError {
  readonly issues: readonly ConfigIssue[];
  constructor(what: string, issues: readonly ConfigIssue[], options?: { cause?: unknown }) {
    const lines = issues.map((issue) => `${issue.path} ${issue.message}.`);
    super(
      lines.length === 1
        ? `Invalid ${what}: ${lines[0]}`
        : `Invalid ${what}:\n${lines.map((line) => `- ${line}`).join("\n")}`,
      options,
    );
    this.issues = issues;
  }
}

/**
 * A setting (or a message) at `path` that could not be read, a getter or a proxy that throws:
 * refused as a bad value is, the getter's error as the cause.
 */
export function unreadableError(what: string, path: string, cause: unknown): AgentConfigError {
  return new AgentConfigError(what, [{ path, message: `could not be read: ${errorMessage(cause)}` }], {
    cause,
  });
}

/**
 * Every message is the expected domain, whatever check failed: a field reads "must be <domain>,
 * got <value>" whether it was of the wrong type, NaN, infinite or out of range.
 */
export function expecting(domain: string): { error: string } {
  return { error: domain };
}

/**
 * Checks a plug-in's options against its zod schema; throws an `AgentConfigError` (an
 * `InvalidConfigError`) naming each bad field, as `new Agent()` does for its config.
 */
export function validateOptions(schema: z.ZodType, options: unknown, what: string): void {
  // A plug-in is mostly made with no options, once per agent: whether its schema takes `{}` is
  // asked once per schema rather than of every empty object.
  if (isEmptyObject(options)) {
    let accepted = takesEmptyOptions.get(schema);
    if (accepted === undefined) {
      accepted = schema.safeParse({}, PARSE_PARAMS).success;
      takesEmptyOptions.set(schema, accepted);
    }
    if (accepted) return;
  }
  validate(schema, options, what, "options");
}

const takesEmptyOptions = new WeakMap<z.ZodType, boolean>();

/**
 * Throws an `InvalidConfigError` for a key of `options` that is none of `known`, as `new Agent()`
 * refuses one of its config: a misspelt option would silently not apply, its default used. For a
 * package's options that no zod schema describes (`validateOptions` refuses an unknown key for a
 * `z.strictObject`). `what` names the options: "Invalid <what>: <key> is not an option (known: …)."
 */
export function refuseUnknownKeys(what: string, options: object, known: readonly string[]): void {
  const issue = unknownOptionProblem(options, known);
  if (issue !== undefined) throw new InvalidConfigError(`Invalid ${what}: ${issue.path} ${issue.message}.`);
}

/**
 * The first key of `options` that is none of `known`, as an issue (`concurency is not an option
 * (known: …)`): `refuseUnknownKeys` throws it, the run's services refuse an orchestrator's options
 * with it.
 */
export function unknownOptionProblem(options: object, known: readonly string[]): ConfigIssue | undefined {
  for (const key of Object.keys(options))
    if (!known.includes(key)) return { path: key, message: `is not an option (known: ${known.join(", ")})` };
  return undefined;
}

/**
 * A package's own copy of the options it was given, each read once, without those given as
 * `undefined` (an option left out, which keeps its default). Refused with an `InvalidConfigError`,
 * as `new Agent()` refuses its config: what is no object of options (a promise of them, not
 * awaited, would be none at all), a key none of `known` (`refuseUnknownKeys`), and an option that
 * cannot be read (a getter that throws), named, its error as the cause.
 */
export function ownOptions<Options extends object>(
  what: string,
  options: Options,
  known: readonly string[],
): Options {
  if (typeof options !== "object" || options === null || Array.isArray(options) || hasThenMethod(options))
    throw new InvalidConfigError(
      `${what} must be an object of options (the options themselves, not a promise of them), got ${
        options === null || typeof options !== "object"
          ? String(options)
          : Array.isArray(options)
            ? "an array"
            : "a promise"
      }.`,
    );
  refuseUnknownKeys(what, options, known);
  const own: Record<string, unknown> = {};
  for (const key of Object.keys(options)) {
    let value: unknown;
    try {
      value = (options as Record<string, unknown>)[key];
    } catch (cause) {
      throw new InvalidConfigError(`Invalid ${what}: ${key} could not be read: ${errorMessage(cause)}.`, {
        cause,
      });
    }
    if (value !== undefined) own[key] = value;
  }
  return own as Options;
}

function isEmptyObject(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Object.getPrototypeOf(value) !== Object.prototype)
    return false;
  for (const _key in value) return false;
  return true;
}

/**
 * Checks `input` against `schema`, or throws an `AgentConfigError` naming each bad field from
 * `root`. `itself` says what a promise should have been instead (settings unless told).
 */
export function validate(
  schema: z.ZodType,
  input: unknown,
  what: string,
  root: string,
  itself = SETTINGS_NOT_PROMISED,
): void {
  // zod takes a promise for an object whose fields are all optional: settings an async function
  // built, passed without `await`, would silently be none at all.
  if (refusedPromise(input))
    throw new AgentConfigError(what, [{ path: root, message: `must be ${itself}, got a promise` }]);
  let result: ReturnType<z.ZodType["safeParse"]>;
  try {
    result = schema.safeParse(input, PARSE_PARAMS);
  } catch (cause) {
    throw unreadableError(what, root, cause);
  }
  if (result.success) return;
  const pathOf = (path: readonly PropertyKey[]) => (path.length === 0 ? root : path.map(String).join("."));
  const issues = result.error.issues
    .flatMap((issue) => leafIssues(issue, []))
    .flatMap((issue) =>
      // A key a group of settings does not know: named, with the ones it knows (the message).
      issue.unknownKeys !== undefined
        ? issue.unknownKeys.map((key) => ({
            path: pathOf([...issue.path, key]),
            message: `is not a setting (${issue.message})`,
          }))
        : [
            {
              path: pathOf(issue.path),
              message: `must be ${issue.message}, got ${show(valueAt(input, issue.path))}`,
            },
          ],
    );
  throw new AgentConfigError(what, issues);
}

const SETTINGS_NOT_PROMISED = "the settings themselves, not a promise of them (await it first)";
export const MESSAGE_NOT_PROMISED = "the message itself, not a promise of it (await it first)";

/**
 * The error of a `z.strictObject` of settings: `domain` when its value is of the wrong kind; a key
 * it does not know is named by `validate`, with the keys the object knows.
 */
export function settingsError(domain: string): { error: (issue: core.$ZodRawIssue) => string | undefined } {
  return { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : domain) };
}

/** Domains zod's type names do not read as: its `int` is what the checks elsewhere call a whole number. */
const TYPE_DOMAINS: Readonly<Record<string, string>> = {
  int: "a whole number",
  nan: "NaN",
  null: "null",
  // A required field left out (zod's `z.unknown()` one, which takes any value but needs the key).
  nonoptional: "present",
};

/**
 * The domain of a type check whose schema has no message of its own (zod asks the parse's error map
 * only then): "must be an object", where zod's default would read "must be Invalid input: expected
 * object, received number". Other checks keep zod's message.
 */
function expectedType(issue: core.$ZodRawIssue): string | undefined {
  if (issue.code === "unrecognized_keys") return knownKeys(issue.inst);
  // An enum or a literal: the values it takes, as JSON writes them.
  if (issue.code === "invalid_value") {
    const values = issue.values.map((value) => show(value));
    return values.length === 1 ? values[0] : `one of ${values.join(", ")}`;
  }
  if (issue.code !== "invalid_type") return undefined;
  const type = String(issue.expected);
  return TYPE_DOMAINS[type] ?? `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

const PARSE_PARAMS = { error: expectedType };

/** "known: a, b" for the object schema that met a key it does not know (any strict one: a plug-in's too). */
function knownKeys(schema: unknown): string | undefined {
  const shape = (schema as { _zod?: { def?: { shape?: unknown } } } | undefined)?._zod?.def?.shape;
  return typeof shape === "object" && shape !== null ? `known: ${Object.keys(shape).join(", ")}` : undefined;
}

/**
 * A union (`stall`) reports only "no option matched"; when the value is of one option's type and
 * only its fields are wrong, those fields are the useful issues.
 */
function leafIssues(
  issue: core.$ZodIssue,
  prefix: PropertyKey[],
): { path: PropertyKey[]; message: string; unknownKeys?: string[] }[] {
  const path = [...prefix, ...issue.path];
  if (issue.code === "invalid_union") {
    const typeMatched = issue.errors.filter((branch) =>
      branch.every((inner) => inner.path.length > 0 || inner.code === "unrecognized_keys"),
    );
    if (typeMatched.length === 1) return (typeMatched[0] ?? []).flatMap((inner) => leafIssues(inner, path));
  }
  if (issue.code === "unrecognized_keys") return [{ path, message: issue.message, unknownKeys: issue.keys }];
  return [{ path, message: issue.message }];
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) value = (value as Record<PropertyKey, unknown>)[key];
  return value;
}

const SHOWN_CHARACTERS = 80;

/**
 * JSON where it says the truth; `String()` for NaN, infinities, functions, undefined and the like;
 * "a promise" for a promise, which JSON shows as `{}`.
 */
export function show(value: unknown): string {
  if (hasThenMethod(value)) return "a promise";
  let text: string | undefined;
  if (typeof value !== "number" || Number.isFinite(value)) {
    try {
      text = typeof value === "function" ? undefined : JSON.stringify(value);
    } catch {
      text = undefined;
    }
  }
  try {
    text ??= String(value);
  } catch {
    // No text of its own (a null-prototype object JSON cannot write, a proxy that throws).
    text = tagOf(value);
  }
  return text.length > SHOWN_CHARACTERS ? `${text.slice(0, SHOWN_CHARACTERS)}…` : text;
}

/** `[object Object]` and the like; a proxy that throws even on its `Symbol.toStringTag` gets a word. */
function tagOf(value: unknown): string {
  try {
    return Object.prototype.toString.call(value);
  } catch {
    return "an object that cannot be read";
  }
}
