import { z } from "zod";

/**
 * The history is a list of agent messages. Three roles reach the model (`user`, `assistant`,
 * `toolResult`); any other role is an app's own kind (a note, a UI marker) that stays in the
 * history and is filtered out by `convertToLlm` before each model call.
 */

export const textContentSchema = z.object({ type: z.literal("text"), text: z.string() });
export const thinkingContentSchema = z.object({ type: z.literal("thinking"), text: z.string() });
export const toolCallContentSchema = z.object({
  type: z.literal("toolCall"),
  id: z.string(),
  name: z.string(),
  args: z.unknown(),
});

export const usageSchema = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  totalTokens: z.number(),
  reasoningTokens: z.number().optional(),
  cachedInputTokens: z.number().optional(),
});

export const userMessageSchema = z.object({
  role: z.literal("user"),
  content: z.union([z.string(), z.array(textContentSchema)], {
    error: "a string or an array of text blocks",
  }),
  timestamp: z.number().optional(),
});

export const assistantStopReasonSchema = z.enum(["stop", "toolUse", "length", "aborted", "error", "other"]);

export const assistantMessageSchema = z.object({
  role: z.literal("assistant"),
  content: z.array(
    z.discriminatedUnion("type", [textContentSchema, thinkingContentSchema, toolCallContentSchema], {
      error: 'one of "text", "thinking", "toolCall"',
    }),
  ),
  model: z.string().optional(),
  stopReason: assistantStopReasonSchema.optional(),
  usage: usageSchema.optional(),
  timestamp: z.number().optional(),
});

export const toolResultStatusSchema = z.enum(["ok", "error", "skipped", "timeout", "aborted", "denied"]);

export const toolResultMessageSchema = z.object({
  role: z.literal("toolResult"),
  toolCallId: z.string(),
  toolName: z.string(),
  /** The text the model sees. */
  content: z.string(),
  /** The tool's raw return value, for the app (never sent to the model). */
  details: z.unknown().optional(),
  isError: z.boolean(),
  status: toolResultStatusSchema,
  timestamp: z.number().optional(),
});

export type TextContent = z.infer<typeof textContentSchema>;
export type ThinkingContent = z.infer<typeof thinkingContentSchema>;
export type ToolCallContent = z.infer<typeof toolCallContentSchema>;
export type Usage = z.infer<typeof usageSchema>;
export type UserMessage = z.infer<typeof userMessageSchema>;
export type AssistantStopReason = z.infer<typeof assistantStopReasonSchema>;
export type AssistantMessage = z.infer<typeof assistantMessageSchema>;
export type ToolResultStatus = z.infer<typeof toolResultStatusSchema>;
export type ToolResultMessage = z.infer<typeof toolResultMessageSchema>;

/** An app-defined message kind: any role other than the three the model understands. */
export interface CustomMessage {
  role: string;
  [key: string]: unknown;
}

const LLM_MESSAGE_SCHEMAS = new Map<string, z.ZodType>([
  ["user", userMessageSchema],
  ["assistant", assistantMessageSchema],
  ["toolResult", toolResultMessageSchema],
]);

/** The schema of a message of a role the model reads (user, assistant, toolResult); undefined for any other. */
export function llmMessageSchemaOf(message: unknown): z.ZodType | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const { role } = message as { role?: unknown };
  return typeof role === "string" ? LLM_MESSAGE_SCHEMAS.get(role) : undefined;
}

/**
 * Any message of the history, e.g. one read back from a saved conversation: the three roles the
 * model understands are checked in full (their issues keep their paths), any other role is an
 * app's own kind and needs only its `role`.
 */
export const agentMessageSchema: z.ZodType<AgentMessage> = z
  .looseObject({ role: z.string() })
  .superRefine((message, ctx) => {
    const result = LLM_MESSAGE_SCHEMAS.get(message.role)?.safeParse(message);
    if (result === undefined || result.success) return;
    for (const issue of result.error.issues)
      ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
  });

/** A message the model understands. */
export type LlmMessage = UserMessage | AssistantMessage | ToolResultMessage;
/** A message of the history: one the model understands, or an app's own kind. */
export type AgentMessage = LlmMessage | CustomMessage;

/** A tool call as the model asked for it (`args` already parsed from the model's JSON). */
export interface ToolCall {
  id: string;
  name: string;
  args: unknown;
  /** The id the model gave, when it repeated one already in use and the call got a fresh `id`. */
  originalId?: string;
}

export function isLlmMessage(message: AgentMessage): message is LlmMessage {
  return message.role === "user" || message.role === "assistant" || message.role === "toolResult";
}

export function isAssistantMessage(message: AgentMessage): message is AssistantMessage {
  return message.role === "assistant";
}

export function isToolResultMessage(message: AgentMessage): message is ToolResultMessage {
  return message.role === "toolResult";
}

/** `steer("…")`, `followUp("…")` and `prompt("…")` take a string or a message. */
export type MessageInput = string | AgentMessage;

export function toMessage(input: MessageInput): AgentMessage {
  return toMessageAt(input, Date.now());
}

/** `toMessage` with the timestamp a string gets (the agent's clock's time). */
export function toMessageAt(input: MessageInput, timestamp: number): AgentMessage {
  return typeof input === "string" ? { role: "user", content: input, timestamp } : input;
}

export function toolCallsOf(message: AssistantMessage): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const part of message.content) {
    if (part.type === "toolCall") calls.push({ id: part.id, name: part.name, args: part.args });
  }
  return calls;
}

export function textOf(message: AssistantMessage): string {
  let text = "";
  // The history's messages are the app's to read, not to change; one changed anyway (a listener
  // that replaced `content`) must not throw where a run ends, which would leave the agent busy.
  if (!Array.isArray(message.content)) return text;
  for (const part of message.content) if (part?.type === "text") text += part.text;
  return text;
}

export const emptyUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });

export function addUsage(total: Usage, step: Usage): Usage {
  const reasoning =
    total.reasoningTokens === undefined && step.reasoningTokens === undefined
      ? undefined
      : (total.reasoningTokens ?? 0) + (step.reasoningTokens ?? 0);
  const cached =
    total.cachedInputTokens === undefined && step.cachedInputTokens === undefined
      ? undefined
      : (total.cachedInputTokens ?? 0) + (step.cachedInputTokens ?? 0);
  return usageOf(
    total.inputTokens + step.inputTokens,
    total.outputTokens + step.outputTokens,
    total.totalTokens + step.totalTokens,
    reasoning,
    cached,
  );
}

/**
 * A usage built whole, its optional counts included only when known: adding them afterwards
 * would give every usage (one per model call, one per sum) a second backing store.
 */
export function usageOf(
  inputTokens: number,
  outputTokens: number,
  totalTokens: number,
  reasoningTokens: number | undefined,
  cachedInputTokens: number | undefined,
): Usage {
  if (reasoningTokens === undefined)
    return cachedInputTokens === undefined
      ? { inputTokens, outputTokens, totalTokens }
      : { inputTokens, outputTokens, totalTokens, cachedInputTokens };
  return cachedInputTokens === undefined
    ? { inputTokens, outputTokens, totalTokens, reasoningTokens }
    : { inputTokens, outputTokens, totalTokens, reasoningTokens, cachedInputTokens };
}
