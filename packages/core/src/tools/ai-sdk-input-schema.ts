import type { JSONSchema7 } from "@ai-sdk/provider";
import { asSchema, type FlexibleSchema, type Schema } from "@ai-sdk/provider-utils";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { z } from "zod";
import { errorMessage, InvalidConfigError } from "../errors.js";
import { compileJsonSchema, type SchemaIssue } from "./json-schema-validation.js";

/**
 * An AI SDK tool's input schema as agent-core checks and shows it: `inputSchema`, a zod schema that
 * validates the arguments exactly as the tool's own schema does (so every part of agent-core that
 * checks arguments — the tool runner, client calls, plan-execute's plans — checks these too), and
 * `jsonSchema`, the JSON Schema the model is sent (undefined for a zod schema: `defineTool`
 * converts it as it does any other).
 */
export interface AiSdkInput {
  inputSchema: z.ZodType;
  jsonSchema: JSONSchema7 | undefined;
}

/** A validator's answer: the value to run with (a schema may transform it), or what is wrong. */
type Checked = { value: unknown } | { issues: SchemaIssue[] };
type Check = (value: unknown) => Checked | PromiseLike<Checked>;

// The mark the AI SDK puts on the schemas `jsonSchema()` and `zodSchema()` make.
const AI_SDK_SCHEMA = Symbol.for("vercel.ai.schema");

/** Throws an `InvalidConfigError` naming the tool for a schema agent-core cannot check or show. */
export function aiSdkInput(toolName: string, schema: FlexibleSchema | undefined): AiSdkInput {
  const refuse = (why: string) => new InvalidConfigError(`Tool "${toolName}": ${why}`);
  // zod 4 itself: used as it is, like a `defineTool` schema.
  if (schema instanceof z.ZodType) return { inputSchema: schema, jsonSchema: undefined };
  if (typeof schema === "function") return aiSdkInput(toolName, lazySchemaOf(schema, refuse));
  if (isAiSdkSchema(schema)) {
    const jsonSchema = jsonSchemaOf(() => schema.jsonSchema, refuse);
    const check = schema.validate ? aiSdkCheck(schema.validate) : ajvCheck(jsonSchema, refuse);
    return { inputSchema: checkedBy(check), jsonSchema };
  }
  if (isStandardSchema(schema)) {
    // Another zod (3, mini, a second copy), valibot, arktype, …: their own validation, and the JSON
    // Schema the AI SDK would send for them (which needs the vendor's JSON Schema support).
    const jsonSchema = jsonSchemaOf(() => asSchema(schema).jsonSchema, refuse);
    return { inputSchema: checkedBy(standardCheck(schema)), jsonSchema };
  }
  throw refuse(
    "inputSchema must be a zod schema, a jsonSchema() schema or a Standard Schema, as tool() takes.",
  );
}

function lazySchemaOf(lazy: () => unknown, refuse: (why: string) => Error): FlexibleSchema {
  let schema: unknown;
  try {
    schema = lazy();
  } catch (error) {
    throw refuse(`its lazy inputSchema threw: ${errorMessage(error)}`);
  }
  if (!isAiSdkSchema(schema)) throw refuse("its lazy inputSchema did not return a schema.");
  return schema;
}

function jsonSchemaOf(read: () => unknown, refuse: (why: string) => Error): JSONSchema7 {
  let jsonSchema: unknown;
  try {
    jsonSchema = read();
  } catch (error) {
    throw refuse(`its inputSchema cannot be expressed as JSON Schema (${errorMessage(error)}).`);
  }
  if (isPromiseLike(jsonSchema))
    throw refuse(
      "its JSON Schema is a promise; agent-core needs it when the tool is registered: await it and pass jsonSchema(resolved).",
    );
  if (jsonSchema === null || typeof jsonSchema !== "object" || Array.isArray(jsonSchema))
    throw refuse("its JSON Schema is not an object.");
  return jsonSchema as JSONSchema7;
}

/** A schema that brings only its JSON Schema: ajv validates it, compiled once. */
function ajvCheck(jsonSchema: JSONSchema7, refuse: (why: string) => Error): Check {
  let validate: ReturnType<typeof compileJsonSchema>;
  try {
    validate = compileJsonSchema(jsonSchema);
  } catch (error) {
    throw refuse(`its JSON Schema cannot be compiled: ${errorMessage(error)}`);
  }
  return (value) => {
    const issues = validate(value);
    return issues.length === 0 ? { value } : { issues };
  };
}

/** A schema's own `validate` (jsonSchema()'s option; zodSchema()'s zod). */
function aiSdkCheck(validate: NonNullable<Schema["validate"]>): Check {
  const checked = (result: Awaited<ReturnType<typeof validate>>): Checked =>
    result.success ? { value: result.value } : { issues: issuesOfError(result.error) };
  return (value) => {
    const result = validate(value);
    return isPromiseLike(result) ? Promise.resolve(result).then(checked) : checked(result);
  };
}

function standardCheck(schema: StandardSchemaV1): Check {
  const checked = (result: StandardSchemaV1.Result<unknown>): Checked =>
    result.issues === undefined ? { value: result.value } : { issues: result.issues.map(standardIssue) };
  return (value) => {
    const result = schema["~standard"].validate(value);
    return isPromiseLike(result) ? Promise.resolve(result).then(checked) : checked(result);
  };
}

/**
 * A zod schema whose one check is `check`: its issues become zod issues (path and message), a
 * validator that throws is an issue too, never an exception out of the parse. When `check` answers
 * with a promise the transform does too, and zod wants an async parse (see `parseArgs`).
 */
function checkedBy(check: Check): z.ZodType {
  return z.unknown().transform((value, context) => {
    const report = (checked: Checked) => {
      if ("value" in checked) return checked.value;
      for (const { path, message } of checked.issues)
        context.issues.push({ code: "custom", message, path, input: value });
      return z.NEVER;
    };
    const threw = (error: unknown) =>
      report({ issues: [{ path: [], message: `the input schema threw: ${errorMessage(error)}` }] });
    let checked: Checked | PromiseLike<Checked>;
    try {
      checked = check(value);
    } catch (error) {
      return threw(error);
    }
    // Never rejects: a sync parse drops the promise (and asks for an async parse), so a rejection
    // would be unhandled.
    return isPromiseLike(checked) ? Promise.resolve(checked).then(report, threw) : report(checked);
  });
}

/** What a failed `validate` says: a zod error's issues, a Standard Schema's (the AI SDK's `cause`), or its message. */
function issuesOfError(error: Error): SchemaIssue[] {
  const issues = (error as { issues?: unknown }).issues ?? (error as { cause?: unknown }).cause;
  if (Array.isArray(issues) && issues.every(isIssueLike)) return issues.map(standardIssue);
  return [{ path: [], message: errorMessage(error) }];
}

function isIssueLike(value: unknown): value is StandardSchemaV1.Issue {
  return typeof (value as { message?: unknown } | null)?.message === "string";
}

function standardIssue(issue: StandardSchemaV1.Issue): SchemaIssue {
  const path = (issue.path ?? []).map((segment) => {
    const key = typeof segment === "object" ? segment.key : segment;
    return typeof key === "number" ? key : String(key);
  });
  return { path, message: issue.message };
}

function isAiSdkSchema(value: unknown): value is Schema {
  return (
    typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[AI_SDK_SCHEMA] === true
  );
}

function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const standard = (value as { "~standard"?: { validate?: unknown } } | null | undefined)?.["~standard"];
  return typeof standard?.validate === "function";
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}
