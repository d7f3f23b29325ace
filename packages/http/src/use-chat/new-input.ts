import { type ClientToolOutcome, canonicalJson } from "@agent-core/core";
import { HttpError } from "../http-error.js";
import { isToolPart, type ToolPartIn, textOf, toolNameOf, type UiMessageIn } from "./chat-request.js";
import type { AssistantTurn, CallRecord, ChatTranscript, Turn } from "./chat-transcript.js";

/** The calls the chat's agent waits for now (a suspended run's), by id. */
export interface Waiting {
  clientCalls: ReadonlySet<string>;
  approvals: ReadonlySet<string>;
}

/** What a post brings that the server has not seen: a new user message, or answers to waiting calls. */
export type NewInput =
  | {
      kind: "prompt";
      /**
       * The user's new messages, in order: one, or more when the posts of the earlier ones were
       * refused (useChat keeps a message whose post failed, and sends it again with the next one).
       */
      messages: { id: string; text: string }[];
      /** The page has no copy of the chat's last answer: the transcript lets it go (see `readNewInput`). */
      withoutLastAnswer: boolean;
    }
  | {
      kind: "answers";
      decisions: { toolCallId: string; approved: boolean; reason?: string }[];
      outputs: { toolCallId: string; outcome: ClientToolOutcome }[];
    };

/**
 * Reads what is new in the messages a page resent, checking every earlier one against the server's
 * transcript: the same ids and user texts, assistant texts the server streamed (or the start of
 * them: a page that went away mid-answer has less), tool calls the server made with their inputs,
 * and outputs and approval responses only for calls that wait for one (or the same ones the server
 * already has). Anything else is refused with a 4xx `HttpError` saying what differs.
 *
 * `lastAnswerAbandoned`: the page went away while the chat's last answer streamed. It may have
 * stopped before reading its first chunk, and useChat adds the assistant message with that chunk:
 * a new message right after the user's then comes in its place, and is taken without it.
 *
 * Several new user messages are taken together: a post the server refused (429, 401, a dropped
 * connection) leaves its message in the page, which useChat sends again before the next one.
 * Refusing them would end the chat for good: the page cannot take a message back.
 */
export function readNewInput(
  transcript: ChatTranscript,
  waiting: Waiting,
  messages: readonly UiMessageIn[],
  lastAnswerAbandoned: boolean,
): NewInput {
  const withoutLastAnswer = lastAnswerAbandoned && lacksLastAnswer(transcript.turns, messages);
  const turns = withoutLastAnswer ? transcript.turns.slice(0, -1) : transcript.turns;
  if (messages.length < turns.length)
    throw mismatch(
      `The chat has ${messages.length} messages where the server's has ${turns.length}: messages were removed (editing and regenerating are not supported).`,
    );
  const answers: Extract<NewInput, { kind: "answers" }> = { kind: "answers", decisions: [], outputs: [] };
  turns.forEach((turn, index) => {
    checkTurn(turn, messages[index] as UiMessageIn, index, waiting, answers);
  });
  const news = messages.slice(turns.length);
  if (news.length === 0) {
    if (answers.decisions.length === 0 && answers.outputs.length === 0)
      throw new HttpError(
        409,
        "nothing-new",
        "The messages bring nothing new: no user message, tool output or approval response the server waits for.",
      );
    return answers;
  }
  if (news.some((message) => message.role !== "user"))
    throw mismatch(
      `The chat has ${messages.length} messages where the server's has ${turns.length}: only new user messages may follow (editing and regenerating are not supported).`,
    );
  if (answers.decisions.length > 0 || answers.outputs.length > 0)
    throw new HttpError(
      409,
      "unsent-answers",
      "Send tool outputs and approval responses on their own, before a new message (useChat's sendAutomaticallyWhen does).",
    );
  return { kind: "prompt", messages: news.map(newUserMessage), withoutLastAnswer };
}

/** A new user message as the agent takes it: text only, and some of it. */
function newUserMessage(message: UiMessageIn): { id: string; text: string } {
  const unsupported = message.parts.find((part) => part.type !== "text");
  if (unsupported !== undefined)
    throw new HttpError(
      422,
      "unsupported-part",
      `A user message may only have text parts, not "${unsupported.type}".`,
    );
  const text = textOf(message);
  if (text.trim() === "") throw new HttpError(422, "empty-message", "The new message has no text.");
  return { id: message.id, text };
}

/** Whether a new user message stands where the transcript's last turn, an answer, is. */
function lacksLastAnswer(turns: readonly Turn[], messages: readonly UiMessageIn[]): boolean {
  return turns.at(-1)?.role === "assistant" && messages[turns.length - 1]?.role === "user";
}

function checkTurn(
  turn: Turn,
  message: UiMessageIn,
  index: number,
  waiting: Waiting,
  answers: Extract<NewInput, { kind: "answers" }>,
): void {
  if (message.id !== turn.id || message.role !== turn.role)
    throw mismatch(
      `Message ${index} is not the server's: expected the ${turn.role} message "${turn.id}", got the ${message.role} message "${message.id}".`,
    );
  if (turn.role === "user") {
    if (textOf(message) !== turn.text) throw mismatch(`Message "${turn.id}" was edited.`);
    return;
  }
  if (!turn.text.startsWith(textOf(message)))
    throw mismatch(`The text of message "${turn.id}" is not what the server streamed.`);
  for (const part of message.parts) if (isToolPart(part)) checkToolPart(turn, part, waiting, answers);
}

function checkToolPart(
  turn: AssistantTurn,
  part: ToolPartIn,
  waiting: Waiting,
  answers: Extract<NewInput, { kind: "answers" }>,
): void {
  const id = part.toolCallId;
  const call = turn.calls.get(id);
  if (call === undefined)
    throw new HttpError(409, "unknown-tool-call", `Message "${turn.id}" has no tool call "${id}".`);
  const sameInput =
    part.state === "input-streaming" ||
    canonicalJson(part.input ?? null) === canonicalJson(call.input ?? null);
  if (toolNameOf(part) !== call.toolName || !sameInput)
    throw new HttpError(
      409,
      "tool-call-mismatch",
      `Tool call "${id}" is not the server's: its tool or input differs.`,
    );
  if (part.approval !== undefined && part.approval.id !== call.approvalId)
    throw new HttpError(
      409,
      "unknown-approval",
      `Tool call "${id}" has no approval request "${part.approval.id}".`,
    );
  switch (part.state) {
    case "output-available":
    case "output-error": {
      const outcome: ClientToolOutcome =
        part.state === "output-available" ? { result: part.output ?? null } : { error: part.errorText ?? "" };
      if (waiting.clientCalls.has(id)) addOutput(answers, id, outcome);
      else if (!sameOutcome(call, part))
        throw new HttpError(
          409,
          "unexpected-tool-output",
          `Tool call "${id}" does not wait for an output, and has not this one.`,
        );
      return;
    }
    case "approval-responded": {
      const approved = part.approval?.approved;
      if (approved === undefined)
        throw new HttpError(
          422,
          "invalid-approval",
          `The approval response of "${id}" says neither yes nor no.`,
        );
      const reason = part.approval?.reason;
      if (waiting.approvals.has(id))
        addDecision(answers, { toolCallId: id, approved, ...(reason === undefined ? {} : { reason }) });
      else if (call.decision?.approved !== approved)
        throw new HttpError(
          409,
          "unexpected-approval",
          `Tool call "${id}" does not wait for an approval, and was not answered so.`,
        );
      return;
    }
    case "output-denied":
      if (call.outcome?.state !== "output-denied")
        throw new HttpError(409, "unexpected-tool-output", `Tool call "${id}" was not denied.`);
      return;
    default:
      // Still waiting in the page's eyes: the page knows less than the server, which is fine.
      return;
  }
}

/**
 * Takes a waiting call's output once: a part repeated with the same output is one answer, and two
 * different outputs are refused before either is delivered (which one the page meant cannot be told).
 */
function addOutput(
  answers: Extract<NewInput, { kind: "answers" }>,
  toolCallId: string,
  outcome: ClientToolOutcome,
): void {
  const earlier = answers.outputs.find((output) => output.toolCallId === toolCallId);
  if (earlier === undefined) answers.outputs.push({ toolCallId, outcome });
  else if (canonicalJson(earlier.outcome) !== canonicalJson(outcome))
    throw new HttpError(
      409,
      "unexpected-tool-output",
      `Tool call "${toolCallId}" has two different outputs in this post.`,
    );
}

/** Takes an answer to an approval request once, as {@link addOutput} takes an output. */
function addDecision(
  answers: Extract<NewInput, { kind: "answers" }>,
  decision: Extract<NewInput, { kind: "answers" }>["decisions"][number],
): void {
  const earlier = answers.decisions.find((taken) => taken.toolCallId === decision.toolCallId);
  if (earlier === undefined) answers.decisions.push(decision);
  else if (canonicalJson(earlier) !== canonicalJson(decision))
    throw new HttpError(
      409,
      "unexpected-approval",
      `Tool call "${decision.toolCallId}" has two different approval responses in this post.`,
    );
}

/** Whether the page's output is the one the server has for the call (a resent, answered call). */
function sameOutcome(call: CallRecord, part: ToolPartIn): boolean {
  const outcome = call.outcome;
  if (outcome === undefined || outcome.state !== part.state) return false;
  if (outcome.state === "output-available")
    return canonicalJson(part.output ?? null) === canonicalJson(outcome.output ?? null);
  return outcome.state !== "output-error" || outcome.errorText === part.errorText;
}

function mismatch(message: string): HttpError {
  return new HttpError(409, "history-mismatch", message);
}
