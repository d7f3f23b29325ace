import { z } from "zod";
import { errorMessage } from "../errors.js";

export type ParsedArgs = z.ZodSafeParseResult<unknown>;

/**
 * A call's arguments checked against a tool's schema: synchronously when the schema allows it (a
 * synchronous tool's result then needs no promise), else through zod's async parse. Schemas
 * validate asynchronously when they hold an async refinement or transform, or when they wrap a
 * validator that answers with a promise (an AI SDK `zodSchema()`, a Standard Schema). Never throws
 * or rejects: a schema whose own code throws fails the arguments with what it threw.
 */
export function parseArgs(schema: z.ZodType, args: unknown): ParsedArgs | Promise<ParsedArgs> {
  return (
    parseArgsNow(schema, args) ?? schema.safeParseAsync(args).catch((error: unknown) => threw(error, args))
  );
}

/**
 * The check when it can be made synchronously, else undefined: for the callers that must decide
 * at once (whether a client call waits, a plan's upfront check), which leave such arguments to the
 * check made when the call runs.
 */
export function parseArgsNow(schema: z.ZodType, args: unknown): ParsedArgs | undefined {
  try {
    return schema.safeParse(args);
  } catch (error) {
    if (error instanceof z.core.$ZodAsyncError) return undefined;
    return threw(error, args);
  }
}

/** The issues as the model reads them: `path: message`, separated by "; ". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

/** A refinement or transform that threw: the arguments fail, and the model reads why. */
function threw(error: unknown, args: unknown): ParsedArgs {
  const message = `the input schema threw: ${errorMessage(error)}`;
  return { success: false, error: new z.ZodError([{ code: "custom", message, path: [], input: args }]) };
}
