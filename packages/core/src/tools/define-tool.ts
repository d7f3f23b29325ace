import type { JSONSchema7 } from "@ai-sdk/provider";
import { zodSchema } from "@ai-sdk/provider-utils";
import { z } from "zod";
import { InvalidConfigError } from "../errors.js";

export interface ToolExecuteOptions {
  /** Aborted when the run is aborted (or, later, times out). Tools should pass it on to I/O. */
  signal: AbortSignal;
  /** The id the model gave this call. */
  toolCallId: string;
}

export interface ToolDefinition<Schema extends z.ZodType = z.ZodType, Result = unknown> {
  name: string;
  description: string;
  /** A zod schema for the arguments; the model sees it as JSON Schema, calls are validated against it. */
  inputSchema: Schema;
  /** Returns the result (any JSON value; strings are sent as they are), or throws to report an error. */
  execute(args: z.output<Schema>, options: ToolExecuteOptions): Result | Promise<Result>;
  /** In parallel execution, run alone: wait for running calls, and start none while it runs. */
  sequential?: boolean;
  /** Calling it again with the same arguments is expected (a poller): stall detection skips it. */
  allowRepeats?: boolean;
}

/** A registered tool: its definition plus the JSON Schema sent to the model, computed once. */
export interface Tool<Schema extends z.ZodType = z.ZodType, Result = unknown>
  extends ToolDefinition<Schema, Result> {
  readonly jsonSchema: JSONSchema7;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function defineTool<Schema extends z.ZodType, Result>(
  definition: ToolDefinition<Schema, Result>,
): Tool<Schema, Result> {
  if (!TOOL_NAME.test(definition.name))
    throw new InvalidConfigError(
      `Invalid tool name "${definition.name}": use 1-64 letters, digits, "_" or "-" (what model APIs accept).`,
    );
  if (!(definition.inputSchema instanceof z.ZodType))
    throw new InvalidConfigError(`Tool "${definition.name}": inputSchema must be a zod schema.`);
  if (typeof definition.execute !== "function")
    throw new InvalidConfigError(`Tool "${definition.name}": execute must be a function.`);
  let jsonSchema: JSONSchema7;
  try {
    // The AI SDK's own conversion, so a tool reaches the model exactly as `streamText` would send it
    // (draft-7, input types, `additionalProperties: false` on every object for strict providers).
    jsonSchema = { ...(zodSchema(definition.inputSchema).jsonSchema as JSONSchema7) };
  } catch (error) {
    throw new InvalidConfigError(
      `Tool "${definition.name}": its inputSchema cannot be expressed as JSON Schema (${(error as Error).message}).`,
    );
  }
  delete jsonSchema.$schema;
  return { ...definition, jsonSchema };
}
