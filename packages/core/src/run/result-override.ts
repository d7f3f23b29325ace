import { errorMessage } from "../errors.js";
import { type ToolResultMessage, toolResultStatusSchema } from "../messages.js";
import { jsonAsWritten } from "../tools/result-json.js";
import type { ToolResultOverride } from "./hooks.js";

/**
 * A tool's result with what `afterToolCall` returned: only the four fields the hook may replace,
 * each checked (a bad one fails the hook, as a throw would: the result must stay a valid message
 * whose event serializes), and `isError` true exactly when `status` is not "ok", whichever of the
 * two the hook set.
 */
export function withOverride(result: ToolResultMessage, override: unknown): ToolResultMessage {
  if (override === undefined || override === null) return result;
  const problem = problemOf(override);
  if (problem !== undefined) throw new TypeError(`afterToolCall returned an invalid override: ${problem}.`);
  const { content, details, isError, status } = override as ToolResultOverride;
  const newStatus = status ?? (isError === undefined ? result.status : statusFor(isError, result));
  const changed: ToolResultMessage = {
    ...result,
    content: content ?? result.content,
    isError: newStatus !== "ok",
    status: newStatus,
  };
  if ("details" in (override as object)) changed.details = details;
  return changed;
}

/** The status a bare `isError` means: the result's own when it already agrees. */
function statusFor(isError: boolean, result: ToolResultMessage): ToolResultMessage["status"] {
  if (isError === result.isError) return result.status;
  return isError ? "error" : "ok";
}

function problemOf(override: unknown): string | undefined {
  if (typeof override !== "object") return `expected an object of fields to replace, got ${typeof override}`;
  const { content, details, isError, status } = override as Record<string, unknown>;
  if (content !== undefined && typeof content !== "string")
    return `content must be a string, got ${typeof content}`;
  if (isError !== undefined && typeof isError !== "boolean")
    return `isError must be a boolean, got ${typeof isError}`;
  if (status !== undefined && !toolResultStatusSchema.safeParse(status).success)
    return `status must be one of ${toolResultStatusSchema.options.join(", ")}, got ${String(status)}`;
  if (status !== undefined && isError !== undefined && isError !== (status !== "ok"))
    return `isError ${isError} contradicts status ${String(status)}`;
  // Held to the rule of a tool's own result: JSON that reads as it was (a Map would read {}).
  try {
    jsonAsWritten(details);
  } catch (error) {
    return `details must be JSON, but ${errorMessage(error)}`;
  }
  return undefined;
}
