import { z } from "zod";
import { AgentConfigError, expecting, MESSAGE_NOT_PROMISED, show, validate } from "./config-issues.js";
import {
  type AssistantMessage,
  agentMessageSchema,
  llmMessageSchemaOf,
  type MessageInput,
  type ToolResultMessage,
  toolCallsOf,
} from "./messages.js";
import { hasThenMethod } from "./run/checked-messages.js";

/*
 * The checks of the messages an app hands an agent (a prompt, a steering or follow-up message, what
 * a queue callback returns): a bad one must not enter the history or the queues.
 */

const messageInputSchema = z.custom(
  (value) => typeof value === "string" || agentMessageSchema.safeParse(value).success,
  expecting('a string or an AgentMessage (e.g. { role: "user", content: "…" })'),
);

/**
 * Checks one message given to `prompt()`, `steer()` or `followUp()` (`what` names it in the error),
 * as `new Agent()` checks `config.messages`: a bad one must not enter the history or the queues.
 */
export function validateMessageInput(input: unknown, what: string): void {
  if (typeof input === "string") return;
  try {
    validate(messageInputSchema, input, what, "message", MESSAGE_NOT_PROMISED);
  } catch (error) {
    throw badFieldError(input, what) ?? error;
  }
}

/**
 * For a refused message of a role the model reads, the error that names its bad field
 * (`message.content.0.args must be present`) rather than the whole message; undefined for any
 * other refusal (no such role, a promise, a getter that throws), whose error says it as it is.
 * Asked only once a message is refused: a good one is parsed once.
 */
function badFieldError(input: unknown, what: string): unknown {
  try {
    const schema = llmMessageSchemaOf(input);
    if (schema === undefined || hasThenMethod(input)) return undefined;
    validate(underMessage(schema), { message: input }, what, "message");
  } catch (error) {
    if (error instanceof AgentConfigError) return error;
  }
  return undefined;
}

/** A role's schema as the field `message` of an object, so that the paths of its issues start there. */
function underMessage(schema: z.ZodType): z.ZodType {
  let wrapped = schemasUnderMessage.get(schema);
  if (wrapped === undefined) {
    wrapped = z.object({ message: schema });
    schemasUnderMessage.set(schema, wrapped);
  }
  return wrapped;
}

const schemasUnderMessage = new Map<z.ZodType, z.ZodType>();

/**
 * Checks a message for the steering or follow-up queue: as `validateMessageInput`, and neither a
 * tool result, which only a run may add (every call is answered by then, so it would answer none),
 * nor an assistant message with a tool call, which only the model makes (a queued one would reach
 * the history with no result, and one whose id the history uses would be refused): queued, it
 * would fail the run that applies it and, put back, every run after that one.
 */
export function validateQueuedMessage(input: unknown, what: string): void {
  validateMessageInput(input, what);
  if (typeof input !== "object") return;
  const message = input as { role?: unknown; toolCallId?: unknown };
  if (message.role === "toolResult")
    throw new AgentConfigError(what, [
      {
        path: "message",
        message: `must not be a tool result: only a run answers the model's tool calls, got the result of ${show(message.toolCallId)}`,
      },
    ]);
  const call = message.role === "assistant" ? toolCallsOf(input as AssistantMessage)[0] : undefined;
  if (call !== undefined)
    throw new AgentConfigError(what, [
      {
        path: "message",
        message: `must not hold a tool call: only the model's replies make tool calls, got the call ${show(call.id)}`,
      },
    ]);
}

/**
 * Checks the tool calls and results among a prompt's messages (each one already checked by
 * `validateMessageInput`): each call has an id of its own in the prompt (whether the history uses
 * it is asked when the run starts: the history can change while the prompt waits its turn). The
 * prompt enters the history once every call in it is answered (a new prompt denies or fails what
 * a suspended batch still waits for), so a result can only answer a call of an assistant message
 * before it in the prompt, still open: the history would refuse any other midway through the
 * prompt, and the run end with `invalid_history`.
 */
export function validatePromptToolResults(inputs: readonly MessageInput[]): void {
  // Mirrors the history's own rule: a user or assistant message closes the calls still open.
  let open: Set<string> | undefined;
  // Every call id of the prompt: the history refuses a second call of one id.
  let ids: Set<string> | undefined;
  for (const input of inputs) {
    if (typeof input === "string" || input.role === "user") open = undefined;
    else if (input.role === "assistant") {
      open = new Set();
      for (const { id } of toolCallsOf(input as AssistantMessage)) {
        ids ??= new Set();
        if (ids.has(id))
          throw new AgentConfigError("prompt", [
            {
              path: "message",
              message: `must give each tool call its own id, got a second call of id ${show(id)}`,
            },
          ]);
        ids.add(id);
        open.add(id);
      }
    } else if (input.role === "toolResult") {
      const { toolCallId } = input as ToolResultMessage;
      if (open?.delete(toolCallId) !== true)
        throw new AgentConfigError("prompt", [
          {
            path: "message",
            message: `must answer a tool call of an assistant message before it in the prompt (only a run answers the calls of the history), got the result of ${show(toolCallId)}`,
          },
        ]);
    }
  }
}

const callbackResultSchema = z.array(z.unknown(), expecting("an array of messages or undefined"));

/**
 * Checks what a `getSteeringMessages` or `getFollowUpMessages` callback returned (`what` names it),
 * as `steer()` and `followUp()` check their message: a bad one must not enter the history or the
 * queues, where it would fail every later run. `undefined` (and `null`) is nothing to add.
 */
export function validateCallbackMessages(result: unknown, what: string): void {
  if (result === undefined || result === null) return;
  if (!Array.isArray(result)) validate(callbackResultSchema, result, `${what} result`, "result");
  for (const input of result as unknown[]) validateQueuedMessage(input, `message from ${what}`);
}
