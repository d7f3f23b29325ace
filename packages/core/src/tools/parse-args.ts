import { z } from "zod";
import { errorMessage } from "../errors.js";

export type ParsedArgs = z.ZodSafeParseResult<unknown>;

/**
 * A call's arguments checked against a tool's schema: synchronously when the schema allows it (a
 * synchronous tool's result then needs no promise), else with a promise. Schemas validate
 * asynchronously when they hold an async refinement or transform, or when they wrap a validator
 * that answers with a promise (an AI SDK `zodSchema()`, a Standard Schema). Never throws or
 * rejects: a schema whose own code throws fails the arguments with what it threw.
 *
 * The schema runs once, in zod's async mode, which stays synchronous until a check answers with a
 * promise. zod's own `safeParse` is not used: it throws on the first such promise and drops it, so
 * an async refinement that rejects became an unhandled rejection, which ends a Node process.
 */
export function parseArgs(schema: z.ZodType, args: unknown): ParsedArgs | Promise<ParsedArgs> {
  let ran: z.core.ParsePayload | Promise<z.core.ParsePayload>;
  try {
    ran = schema._zod.run({ value: args, issues: [] }, ASYNC);
  } catch (error) {
    return threw(error);
  }
  return ran instanceof Promise ? ran.then(parsed, threw) : parsed(ran);
}

/**
 * The check when it can be made synchronously, else undefined: for the callers that must decide
 * at once (whether a client call waits, a plan's upfront check), which leave such arguments to the
 * check made when the call runs.
 */
export function parseArgsNow(schema: z.ZodType, args: unknown): ParsedArgs | undefined {
  const result = parseArgs(schema, args);
  // Settles without a rejection (see parseArgs): nothing is left unhandled.
  return result instanceof Promise ? undefined : result;
}

/** The issues as the model reads them: `path: message`, separated by "; ". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

const ASYNC: z.core.ParseContextInternal = { async: true };

/** A finished run of the schema as zod's `safeParse` reports it (its issues finalized the same way). */
function parsed(payload: z.core.ParsePayload): ParsedArgs {
  if (payload.issues.length === 0) return { success: true, data: payload.value };
  const config = z.core.config();
  const issues = payload.issues.map((issue) => z.core.util.finalizeIssue(issue, ASYNC, config));
  return { success: false, error: new z.ZodError(issues) };
}

/** A refinement or transform that threw: the arguments fail, and the model reads why. */
function threw(error: unknown): ParsedArgs {
  const message = `the input schema threw: ${errorMessage(error)}`;
  return { success: false, error: new z.ZodError([{ code: "custom", message, path: [] }]) };
}
