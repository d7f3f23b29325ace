import { z } from "zod";

/** The states of a tool part of a UI message, as `useChat` keeps them. */
const toolStates = [
  "input-streaming",
  "input-available",
  "approval-requested",
  "approval-responded",
  "output-available",
  "output-error",
  "output-denied",
] as const;

const isToolType = (type: string) => type.startsWith("tool-") || type === "dynamic-tool";

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const toolPart = z.looseObject({
  type: z.string().refine(isToolType),
  // Any string: the id is the provider's, streamed as it came (empty, or long), and the page must
  // be able to send it back. It is only looked up in the server's transcript; the body's size
  // (maxBodyBytes) bounds it.
  toolCallId: z.string(),
  /** Only on `dynamic-tool` parts; a static part names its tool in its type, `tool-<name>`. */
  toolName: z.string().optional(),
  state: z.enum(toolStates),
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  errorText: z.string().optional(),
  approval: z
    .looseObject({ id: z.string().min(1), approved: z.boolean().optional(), reason: z.string().optional() })
    .optional(),
});
/** Reasoning, step boundaries, files, data parts…: kept by the page, read by nobody here. */
const otherPart = z.looseObject({ type: z.string().min(1) });

/**
 * A part, checked against the schema its `type` picks. Not a union of the three: a union refuses a
 * part that fails all three with the issue of whichever failed least, "Invalid input" at `type`,
 * which names neither the field that is wrong (`text`, `errorText`, `state`) nor what it must be.
 */
const uiPart = otherPart.transform((part, context) => {
  const schema = part.type === "text" ? textPart : isToolType(part.type) ? toolPart : otherPart;
  const checked = schema.safeParse(part);
  if (checked.success) return checked.data as z.output<typeof textPart | typeof toolPart | typeof otherPart>;
  for (const issue of checked.error.issues)
    context.addIssue({ code: "custom", message: issue.message, path: issue.path, input: part });
  return z.NEVER;
});

const uiMessage = z.looseObject({
  id: z.string().min(1).max(200),
  // System messages are the server's (the agent's system prompt): a page cannot send one.
  role: z.enum(["user", "assistant"]),
  // No count of its own: an answer has as many parts as its run made (a reply of many tool calls,
  // a long plan), and the page must be able to send it back. maxBodyBytes bounds it.
  parts: z.array(uiPart),
});

/**
 * What `useChat`'s `DefaultChatTransport` posts: the chat's id, every message of the chat, and
 * what made it post. Fields a page adds (`body` of the transport) are allowed and ignored.
 */
export function chatRequestBody(maxMessages: number) {
  return z.looseObject({
    id: z.string().min(1).max(200),
    messages: z.array(uiMessage).min(1).max(maxMessages),
    trigger: z.string(),
    messageId: z.string().optional(),
  });
}

export type UiMessageIn = z.output<typeof uiMessage>;
export type ToolPartIn = z.output<typeof toolPart>;

export function isToolPart(part: UiMessageIn["parts"][number]): part is ToolPartIn {
  return isToolType(part.type);
}

/** The tool a part is about: `tool-<name>`, or a dynamic tool part's `toolName`. */
export function toolNameOf(part: ToolPartIn): string | undefined {
  return part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
}

/** The message's text: its text parts, in order. */
export function textOf(message: UiMessageIn): string {
  let text = "";
  for (const part of message.parts) if (part.type === "text") text += (part as { text: string }).text;
  return text;
}
