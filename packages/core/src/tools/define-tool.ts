import type { JSONSchema7 } from "@ai-sdk/provider";
import { zodSchema } from "@ai-sdk/provider-utils";
import { z } from "zod";
import { InvalidConfigError } from "../errors.js";
import type { AgentMessage, ToolCall } from "../messages.js";

export interface ToolExecuteOptions {
  /** Aborted when the run is aborted (or, later, times out). Tools should pass it on to I/O. */
  signal: AbortSignal;
  /** The id the model gave this call. */
  toolCallId: string;
  /**
   * `runId:toolCallId`, the same whenever this call runs again (a durable run resumed after a
   * crash may run a call whose result was not recorded yet): hand it to external systems (a
   * payment API's idempotency key) so that the side effect happens once.
   */
  idempotencyKey: string;
}

/** One tool call about to run: what an approval check and the `beforeToolCall`/`afterToolCall` hooks get. */
export interface ToolCallContext {
  runId: string;
  call: ToolCall;
  /** Undefined when the model named a tool that is not registered. */
  tool: Tool | undefined;
  messages: readonly AgentMessage[];
}

interface ToolDefinitionBase<Schema extends z.ZodType> {
  name: string;
  description: string;
  /** A zod schema for the arguments; the model sees it as JSON Schema, calls are validated against it. */
  inputSchema: Schema;
  /** In parallel execution, run alone: wait for running calls, and start none while it runs. */
  sequential?: boolean;
  /** Calling it again with the same arguments is expected (a poller): stall detection skips it. */
  allowRepeats?: boolean;
  /**
   * Ask a person first: `true` for every call, or a function of the (validated) arguments for some.
   * A call that needs approval ends the run as `awaiting_approval` until `agent.approve()` /
   * `deny()`, as when `beforeToolCall` asks; a call whose arguments fail the schema is not asked
   * about (it gets its error result).
   */
  needsApproval?: boolean | ToolApprovalCheck<z.output<Schema>>;
}

/**
 * Whether a call needs a person's approval, from its arguments and the call's context. (Declared as
 * a method so that its arguments are bivariant, like `execute`'s: a tool of a narrower schema is
 * still a `Tool`.)
 */
export type ToolApprovalCheck<Args = unknown> = {
  check(args: Args, context: ToolCallContext): boolean | PromiseLike<boolean>;
}["check"];

/** A tool the agent's process runs. */
export interface ServerToolDefinition<Schema extends z.ZodType = z.ZodType, Result = unknown>
  extends ToolDefinitionBase<Schema> {
  execution?: "server";
  /** Returns the result (any JSON value; strings are sent as they are), or throws to report an error. */
  execute(args: z.output<Schema>, options: ToolExecuteOptions): Result | Promise<Result>;
}

/**
 * A tool that runs where the user is (a browser, an editor): the run announces the call
 * (`tool_call` with `execution: "client"`) and waits for `agent.submitToolResult()`, up to
 * `timeouts.clientToolMs` (default 60 s).
 */
export interface ClientToolDefinition<Schema extends z.ZodType = z.ZodType>
  extends ToolDefinitionBase<Schema> {
  execution: "client";
  execute?: never;
}

export type ToolDefinition<Schema extends z.ZodType = z.ZodType, Result = unknown> =
  | ServerToolDefinition<Schema, Result>
  | ClientToolDefinition<Schema>;

/**
 * What a tool runner runs: a server tool, or a client tool bound to its run, whose `execute` waits
 * for the result `agent.submitToolResult()` delivers.
 */
export type RunnableTool = Omit<ServerToolDefinition, "execution"> & {
  readonly execution?: "server" | "client";
  readonly jsonSchema: JSONSchema7;
};

/** A registered tool: its definition plus the JSON Schema sent to the model, computed once. */
export type Tool<Schema extends z.ZodType = z.ZodType, Result = unknown> =
  | ServerTool<Schema, Result>
  | ClientTool<Schema>;
export type ServerTool<Schema extends z.ZodType = z.ZodType, Result = unknown> = ServerToolDefinition<
  Schema,
  Result
> & { readonly jsonSchema: JSONSchema7 };
export type ClientTool<Schema extends z.ZodType = z.ZodType> = ClientToolDefinition<Schema> & {
  readonly jsonSchema: JSONSchema7;
};

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function defineTool<Schema extends z.ZodType, Result>(
  definition: ServerToolDefinition<Schema, Result>,
): ServerTool<Schema, Result>;
export function defineTool<Schema extends z.ZodType>(
  definition: ClientToolDefinition<Schema>,
): ClientTool<Schema>;
/** A tool whose kind (server or client) is decided at run time. */
export function defineTool<Schema extends z.ZodType, Result>(
  definition: ToolDefinition<Schema, Result>,
): Tool<Schema, Result>;
export function defineTool<Schema extends z.ZodType, Result>(
  definition: ToolDefinition<Schema, Result>,
): Tool<Schema, Result> {
  checkToolDefinition(definition);
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
  checkArgumentsObject(definition.name, jsonSchema);
  return { ...definition, jsonSchema };
}

/**
 * Model APIs take a tool's arguments as one JSON object (OpenAI and Anthropic refuse any other
 * root): a tool of `z.string()` would fail every model call that offers it, far from the cause.
 */
export function checkArgumentsObject(toolName: string, jsonSchema: JSONSchema7): void {
  if (jsonSchema.type !== "object")
    throw new InvalidConfigError(
      `Tool "${toolName}": inputSchema must describe an object of arguments (z.object({ … })): model APIs send a tool's arguments as one JSON object.`,
    );
}

/**
 * Throws an `InvalidConfigError` for a definition `defineTool` would refuse; for tools whose JSON
 * Schema comes from elsewhere (an AI SDK tool's own).
 */
export function checkToolDefinition(definition: Pick<ToolDefinition, "name" | "inputSchema">): void {
  // Tested as a string: the pattern would take a missing name as the text "undefined".
  if (typeof definition.name !== "string" || !TOOL_NAME.test(definition.name))
    throw new InvalidConfigError(
      `Invalid tool name ${typeof definition.name === "string" ? `"${definition.name}"` : String(definition.name)}: use 1-64 letters, digits, "_" or "-" (what model APIs accept).`,
    );
  const { description } = definition as { description?: unknown };
  if (description !== undefined && typeof description !== "string")
    throw new InvalidConfigError(`Tool "${definition.name}": description must be a string.`);
  if (!(definition.inputSchema instanceof z.ZodType))
    throw new InvalidConfigError(`Tool "${definition.name}": inputSchema must be a zod schema.`);
  // Read untyped: the definition may come from JavaScript.
  const { execution, execute } = definition as { execution?: unknown; execute?: unknown };
  if (execution === "client") {
    if (execute !== undefined)
      throw new InvalidConfigError(
        `Tool "${definition.name}": a client tool runs where the user is and has no execute.`,
      );
  } else if (execution !== undefined && execution !== "server")
    throw new InvalidConfigError(
      `Tool "${definition.name}": execution must be "server" or "client", got ${JSON.stringify(execution)}.`,
    );
  else if (typeof execute !== "function")
    throw new InvalidConfigError(`Tool "${definition.name}": execute must be a function.`);
  const { needsApproval } = definition as { needsApproval?: unknown };
  if (
    needsApproval !== undefined &&
    typeof needsApproval !== "boolean" &&
    typeof needsApproval !== "function"
  )
    throw new InvalidConfigError(
      `Tool "${definition.name}": needsApproval must be a boolean or a function of the arguments.`,
    );
}
