import type {
  Tool as AiSdkTool,
  ModelMessage,
  ToolExecutionOptions,
  ToolNeedsApprovalFunction,
  ToolSet,
} from "@ai-sdk/provider-utils";
import { errorMessage, InvalidConfigError } from "../errors.js";
import { isLlmMessage } from "../messages.js";
import { toModelPrompt } from "../model/prompt.js";
import { aiSdkInput } from "./ai-sdk-input-schema.js";
import {
  checkArgumentsObject,
  checkToolDefinition,
  defineTool,
  type ServerToolDefinition,
  type Tool,
  type ToolApprovalCheck,
  type ToolCallContext,
  type ToolDefinition,
} from "./define-tool.js";

/** Tools made with the AI SDK's `tool()` (or `dynamicTool()`), by name: what `streamText({ tools })` takes. */
export type AiSdkToolSet = ToolSet;

/**
 * The tools of an AI SDK `ToolSet` as agent-core tools, in the set's order; each key is its tool's
 * name. `new Agent({ tools })` and `ToolRegistry` take a `ToolSet` as it is: this is what they do
 * with it. Throws an `InvalidConfigError` naming the tool for one agent-core cannot run (a provider
 * tool, a schema it cannot check or show, a name model APIs refuse).
 */
export function fromAiSdkTools(toolSet: AiSdkToolSet): Tool[] {
  if (toolSet === null || typeof toolSet !== "object" || Array.isArray(toolSet))
    throw new InvalidConfigError("fromAiSdkTools() takes an AI SDK ToolSet: { name: tool({ … }) }.");
  return Object.keys(toolSet).map((name) => fromAiSdkTool(name, readTool(toolSet, name)));
}

/** A ToolSet's tool, read once; one that cannot be read (a getter that throws) is refused by name. */
function readTool(toolSet: AiSdkToolSet, name: string): AiSdkTool {
  try {
    return toolSet[name] as AiSdkTool;
  } catch (cause) {
    throw new InvalidConfigError(`Tool "${name}": could not be read: ${errorMessage(cause)}.`, { cause });
  }
}

function fromAiSdkTool(name: string, tool: AiSdkTool): Tool {
  const refuse = (why: string) => new InvalidConfigError(`Tool "${name}": ${why}`);
  if (tool === null || typeof tool !== "object")
    throw refuse("expected an AI SDK tool, an object made with tool().");
  // Read untyped: the tool may come from JavaScript.
  const { type, description, execute, needsApproval } = tool as Record<string, unknown>;
  if (type === "provider")
    throw refuse(
      `"${String((tool as { id?: unknown }).id)}" is a provider tool, which the provider's API defines and agent-core does not offer to models; use function tools.`,
    );
  if (type !== undefined && type !== "function" && type !== "dynamic")
    throw refuse(`unknown tool type ${JSON.stringify(type)}.`);
  if (description !== undefined && typeof description !== "string")
    throw refuse("description must be a string: agent-core has no tool context to compute one from.");
  // A non-function `execute` would otherwise make a client tool.
  if (execute !== undefined && typeof execute !== "function") throw refuse("execute must be a function.");

  const { inputSchema, jsonSchema } = aiSdkInput(name, tool.inputSchema);
  const common = {
    name,
    description: description ?? "",
    inputSchema,
    ...(needsApproval === undefined
      ? {}
      : {
          needsApproval:
            typeof needsApproval === "function"
              ? approvalCheckOf(needsApproval as ToolNeedsApprovalFunction<unknown, unknown>)
              : // Any other type is refused by checkToolDefinition below.
                (needsApproval as boolean),
        }),
  };
  // Without `execute` the AI SDK leaves the call to the app: in agent-core, to the user's side.
  const definition: ToolDefinition =
    typeof execute === "function"
      ? { ...common, execute: executeOf(execute as NonNullable<AiSdkTool["execute"]>) }
      : { ...common, execution: "client" };
  // A zod schema is converted as defineTool converts any; other schemas bring their own JSON Schema.
  if (jsonSchema === undefined) return defineTool(definition);
  checkToolDefinition(definition);
  checkArgumentsObject(name, jsonSchema);
  return { ...definition, jsonSchema };
}

/**
 * The AI SDK's `execute` run with agent-core's options: its signal (aborted on the run's abort and
 * on the tool's timeout) as `abortSignal`. agent-core gives tools no history and no tool context,
 * so `messages` is empty and `context` is `{}`. An `AsyncIterable` of preliminary outputs is read
 * to its end; the last value is the result, as `generateText` takes it. After an abort it is read
 * no further than its next value, and closed.
 */
function executeOf(execute: NonNullable<AiSdkTool["execute"]>): ServerToolDefinition["execute"] {
  return (args, { signal, toolCallId }) => {
    const options: ToolExecutionOptions<unknown> = {
      toolCallId,
      messages: [],
      abortSignal: signal,
      context: {},
    };
    const output: unknown = execute(args, options);
    return isAsyncIterable(output) ? lastValueOf(output, signal) : output;
  };
}

/** Read until the iterable ends, or until its next value after `signal` aborts: then it is closed. */
async function lastValueOf(outputs: AsyncIterable<unknown>, signal: AbortSignal): Promise<unknown> {
  let last: unknown;
  for await (const output of outputs) {
    // Leaving the loop calls the iterator's `return()`: a generator runs its `finally` and stops.
    if (signal.aborted) throw signal.reason;
    last = output;
  }
  return last;
}

/** `needsApproval(input, { toolCallId, messages, context })`, with the conversation so far as model messages. */
function approvalCheckOf(needsApproval: ToolNeedsApprovalFunction<unknown, unknown>): ToolApprovalCheck {
  return (args, { call, messages }: ToolCallContext) =>
    needsApproval(args, { toolCallId: call.id, messages: modelMessagesOf(messages), context: {} });
}

/** The history as the model saw it, without the system prompt: the AI SDK's `messages`. */
function modelMessagesOf(messages: ToolCallContext["messages"]): ModelMessage[] {
  // The v4 prompt's messages are model messages: the same roles and the same content parts.
  return toModelPrompt(undefined, messages.filter(isLlmMessage)) as ModelMessage[];
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === "function";
}
