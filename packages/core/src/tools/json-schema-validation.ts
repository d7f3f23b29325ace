import type { JSONSchema7 } from "@ai-sdk/provider";
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";

/** One way a value fails a schema: where (`["items", 0, "id"]`; empty for the value itself) and why. */
export interface SchemaIssue {
  path: (string | number)[];
  message: string;
}

/** Checks a value against one compiled JSON Schema: no issues when it conforms. */
export type JsonSchemaValidator = (value: unknown) => SchemaIssue[];

const AJV_OPTIONS: Options = {
  // Every issue at once, so the model can fix all of its arguments in one retry.
  allErrors: true,
  // Schemas written for other tools carry keywords of their own (`x-…`, UI hints): ignored, as
  // annotations, rather than refusing the tool.
  strict: false,
  // `format` is an annotation, as JSON Schema 2019-09 and later define it by default: checking
  // formats would take a second package (ajv-formats) and refuse values the tool may accept.
  validateFormats: false,
  // Tools' schemas may share an `$id`: each is compiled on its own, never registered by id.
  addUsedSchema: false,
  logger: false,
};

/**
 * How many schemas one ajv compiles before a new one takes over. An ajv keeps every schema and
 * validator it compiled for as long as it lives (in its code-generation scope, whatever its
 * cache holds): one for the whole process would grow with every compile, and tools are compiled
 * again for each new agent (an MCP server's, listed again). A validator keeps its own ajv alive.
 */
const COMPILES_PER_AJV = 1000;

/** One ajv per dialect, made when first needed and renewed every `COMPILES_PER_AJV` compiles. */
const dialects = {
  draft7: renewed(() => new Ajv(AJV_OPTIONS)),
  draft2019: renewed(() => new Ajv2019(AJV_OPTIONS)),
  draft2020: renewed(() => new Ajv2020(AJV_OPTIONS)),
};

/**
 * Compiles `schema` once. Its dialect is the one its `$schema` names — draft 2020-12 or 2019-09 —
 * and draft-07 without one: the dialect the AI SDK's `JSONSchema7` type, its zod and Standard
 * Schema conversions and the providers' tool APIs use. Throws an `Error` saying why when ajv
 * cannot compile the schema (an invalid schema, an unknown `$schema`, a `$ref` that resolves nowhere).
 */
export function compileJsonSchema(schema: JSONSchema7): JsonSchemaValidator {
  const known = knownDialectOf(schema.$schema);
  // A schema without an `$id` gets one of its own: with none, and never registered (see
  // `addUsedSchema`), ajv resolves no `"$ref": "#"`, the usual way to write a recursive schema.
  const based =
    typeof schema === "object" && schema !== null && schema.$id === undefined
      ? { ...schema, $id: `urn:agent-core:schema:${++unnamed}` }
      : schema;
  const validate =
    known === undefined
      ? ajvFor(based).compile(based)
      : dialects[known.dialect]().compile({ ...based, $schema: known.id });
  return (value) => (validate(value) ? [] : issuesOf(validate));
}

/** How many schemas without an `$id` were compiled: each gets a distinct one. */
let unnamed = 0;

/**
 * Each dialect's `$schema`, as http or https, with or without the empty fragment: schemas are
 * written with any of them (`https://json-schema.org/draft-07/schema#` is common), but ajv knows a
 * meta-schema by one spelling only, `id`, and would refuse the others as unknown.
 */
const KNOWN_DIALECTS = [
  {
    uri: /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/,
    dialect: "draft7",
    id: "http://json-schema.org/draft-07/schema#",
  },
  {
    uri: /^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/,
    dialect: "draft2019",
    id: "https://json-schema.org/draft/2019-09/schema",
  },
  {
    uri: /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/,
    dialect: "draft2020",
    id: "https://json-schema.org/draft/2020-12/schema",
  },
] as const;

function knownDialectOf(uri: string | undefined): (typeof KNOWN_DIALECTS)[number] | undefined {
  return uri === undefined ? undefined : KNOWN_DIALECTS.find((known) => known.uri.test(uri));
}

function ajvFor(schema: JSONSchema7): Ajv {
  const dialect = schema.$schema;
  if (dialect?.includes("/draft/2020-12/")) return dialects.draft2020();
  if (dialect?.includes("/draft/2019-09/")) return dialects.draft2019();
  return dialects.draft7();
}

function issuesOf(validate: ValidateFunction): SchemaIssue[] {
  return (validate.errors ?? []).map(issueOf);
}

/** An ajv error as a path into the value and a message: a missing or extra property is named in the path. */
function issueOf(error: ErrorObject): SchemaIssue {
  const path = pathOf(error.instancePath);
  if (error.keyword === "required")
    return { path: [...path, String(error.params.missingProperty)], message: "is required" };
  if (error.keyword === "additionalProperties")
    return {
      path: [...path, String(error.params.additionalProperty)],
      message: "is not an allowed property",
    };
  return { path, message: error.message ?? `fails "${error.keyword}"` };
}

/** A JSON Pointer (`/items/0/id`) as path segments, array indexes as numbers. */
function pathOf(pointer: string): (string | number)[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((segment) => {
      const key = segment.replaceAll("~1", "/").replaceAll("~0", "~");
      return /^(0|[1-9]\d*)$/.test(key) ? Number(key) : key;
    });
}

/** `make()`'s value, made again on every `COMPILES_PER_AJV`th call: each call is for one compile. */
function renewed<T>(make: () => T): () => T {
  let made: T | undefined;
  let calls = 0;
  return () => {
    if (made === undefined || calls === COMPILES_PER_AJV) {
      made = make();
      calls = 0;
    }
    calls++;
    return made;
  };
}
