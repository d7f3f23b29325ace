import { randomUUID } from "node:crypto";
import type { AgentRun } from "@agent-core/core";
import { authorizedPrincipal } from "../authorize.js";
import { HttpError } from "../http-error.js";
import { logError } from "../log-error.js";
import { consume, limiter } from "../rate-limits.js";
import { readJsonBody } from "../request-parsing.js";
import { checkedAgent } from "../run-backend.js";
import { closingError } from "../run-start.js";
import { limitRunTime } from "../run-time-limit.js";
import { chatRequestBody, type UiMessageIn } from "./chat-request.js";
import { type ChatSession, ChatSessions } from "./chat-sessions.js";
import type { AssistantTurn } from "./chat-transcript.js";
import { type NewInput, readNewInput } from "./new-input.js";
import { streamRun } from "./stream-run.js";
import { uiMessageStreamResponse } from "./ui-chunks.js";
import { ownUseChatOptions, resolveUseChatOptions, type UseChatHandlerOptions } from "./use-chat-options.js";

/** The handler: a Fetch API handler for useChat's posts, plus what a process needs to stop it. */
export interface UseChatHandler {
  fetch(request: Request): Promise<Response>;
  /** Chats kept in memory now. */
  readonly chatCount: number;
  /** Aborts every run and forgets every chat; posts from then on are refused (503 `server-closing`). */
  close(): void;
}

/**
 * Serves `useChat` of `@ai-sdk/react` (its `DefaultChatTransport` posts here): each post of a chat
 * runs the chat's agent, one per `(user, chat id)` in this process, and streams the run as the AI
 * SDK's UI message stream. A new user message is a prompt; tool outputs and approval responses
 * answer the calls the agent's suspended run waits for (`clientTools: "suspend"`), which resumes it.
 * The chat's state stays on the server: what a page resends is checked against it (4xx when it
 * differs) and never becomes the model's history. Mount it on any route: it answers POST only.
 * See docs/interop.md#usechat for the mapping and every error.
 */
export function createUseChatHandler(given: UseChatHandlerOptions): UseChatHandler {
  const options = ownUseChatOptions(given);
  const config = resolveUseChatOptions(options);
  const sessions = new ChatSessions(config.chatTtlMs, config.now);
  /** Chats whose agent is being made, by user and chat id: posts at once of a new chat share it. */
  const making = new Map<string, Promise<ChatSession>>();
  const postLimit = limiter(options.rateLimit, { points: 60, durationSec: 60 }, "rateLimit");
  const body = chatRequestBody(config.maxMessages);
  /** Whether `close()` was called: no chat begins or goes on from then on. */
  let closed = false;

  async function post(request: Request): Promise<Response> {
    if (request.method !== "POST")
      throw new HttpError(405, "method-not-allowed", "Use POST here.", { headers: { allow: "POST" } });
    if (closed) throw closingError();
    const { userId } = await authorizedPrincipal(options.authorize, request);
    await consume(postLimit, userId);
    const chat = await readJsonBody(request, body, config.maxBodyBytes);
    if (chat.trigger !== "submit-message")
      throw new HttpError(
        422,
        "unsupported-trigger",
        `Only "submit-message" is supported, not "${chat.trigger}": the server keeps the chat's history, so it cannot be regenerated.`,
      );
    const session = sessions.get(userId, chat.id) ?? (await newChat(userId, chat.id, chat.messages));
    // Another post of the chat (a double submit) may begin a run while this one waits: that run is
    // waited for in turn (refused as busy while it streams), so the messages are read against the
    // chat as it is, not against an answer this page has not seen.
    for (let last = session.current; ; last = session.current) {
      await settled(last);
      if (session.current === last) break;
    }
    // Closed while this post waited: a run begun now would be neither aborted nor forgotten.
    if (closed) throw closingError();
    const abandoned = session.current?.abandoned ?? false;
    const input = readNewInput(session.transcript, waitingOf(session), chat.messages, abandoned);
    const [run, turn] = input.kind === "prompt" ? prompt(session, input) : answer(session, input);
    // The agent's own timeouts.totalMs, when it sets one, is the run's whole time.
    if (run !== undefined && session.agent.timeouts.totalMs === undefined)
      limitRunTime(session.agent, run, config.runTimeoutMs);
    const response = uiMessageStreamResponse(streamRun(session, run, turn, request.signal));
    if (run !== undefined) idleFromItsEnd(session);
    return response;
  }

  /**
   * A chat is idle from when its answer ended, not from the post that asked for it: a run that
   * takes its time (up to runTimeoutMs) must not eat into the chatTtlMs the user has to reply.
   */
  function idleFromItsEnd(session: ChatSession): void {
    void session.current?.streamed.then(() => {
      session.usedAt = config.now();
    });
  }

  async function newChat(
    userId: string,
    chatId: string,
    messages: readonly UiMessageIn[],
  ): Promise<ChatSession> {
    // A chat the server never had, or forgot: its answers cannot be checked, so it cannot go on.
    // (Only user messages: the posts of all but the last were refused, and it starts now.)
    if (messages.some((message) => message.role !== "user"))
      throw new HttpError(
        404,
        "chat-not-found",
        `The server has no chat "${chatId}" (it was forgotten, or never was): start a new one.`,
      );
    // A page that posts twice at once (a double submit) must not have the agent made twice: the
    // factory is asked once per chat, and both posts go on with the one session.
    const name = `${userId}\u0000${chatId}`;
    let made = making.get(name);
    if (made === undefined) {
      made = (async () => {
        const agent = checkedAgent(
          await options.agent({ userId, conversationId: chatId, documentId: undefined }),
        );
        // Made after close(): kept, the chat would outlive the handler.
        if (closed) throw closingError();
        return sessions.add(userId, chatId, agent);
      })();
      making.set(name, made);
      // Made or failed, it is no longer being made: a failed factory is asked again next time.
      made.then(
        () => making.delete(name),
        () => making.delete(name),
      );
    }
    return made;
  }

  function prompt(
    session: ChatSession,
    input: Extract<NewInput, { kind: "prompt" }>,
  ): [AgentRun, AssistantTurn] {
    if (input.withoutLastAnswer) session.transcript.dropLastAnswer();
    const turn = session.transcript.addExchange(
      input.messages.map(({ id, text }) => ({ role: "user", id, text })),
      `msg-${randomUUID()}`,
    );
    const run = session.agent.prompt(
      input.messages.map((message) => message.text),
      { clientTools: "suspend" },
    );
    return [run, turn];
  }

  /** Approvals first: a batch that also waits for client calls resumes on its last output. */
  function answer(
    session: ChatSession,
    input: Extract<NewInput, { kind: "answers" }>,
  ): [AgentRun | undefined, AssistantTurn] {
    const turn = session.transcript.lastAnswer as AssistantTurn;
    let resumed: AgentRun | undefined;
    for (const { toolCallId, approved, reason } of input.decisions) {
      resumed = approved ? session.agent.approve(toolCallId) : session.agent.deny(toolCallId, reason);
      const call = turn.calls.get(toolCallId);
      if (call !== undefined) call.decision = { approved, ...(reason === undefined ? {} : { reason }) };
    }
    for (const { toolCallId, outcome } of input.outputs) {
      resumed = session.agent.submitToolResult(toolCallId, outcome) ?? resumed;
      // Taken: the page may resend it (with the rest of a batch) before the run's result says so.
      const call = turn.calls.get(toolCallId);
      if (call !== undefined)
        call.outcome =
          "error" in outcome
            ? { state: "output-error", errorText: outcome.error }
            : { state: "output-available", output: outcome.result };
    }
    return [resumed, turn];
  }

  return {
    async fetch(request) {
      try {
        return await post(request);
      } catch (error) {
        if (error instanceof HttpError) return error.toResponse();
        logError(
          config.logger,
          { err: error, method: request.method, url: request.url },
          "agent-core http: a useChat request failed",
        );
        return new HttpError(500, "internal", "The server failed to answer this request.").toResponse();
      }
    },
    get chatCount() {
      return sessions.size;
    },
    close() {
      closed = true;
      sessions.close();
    },
  };
}

/**
 * Waits for a run of the chat (its `current`) when its page went away (it ends within the abort grace) or its
 * stream is finishing; a run still streaming to a page answers 409.
 */
async function settled(current: ChatSession["current"]): Promise<void> {
  if (current === undefined) return;
  if (!current.run.done && !current.abandoned)
    throw new HttpError(409, "chat-busy", "The chat is answering; wait for the answer, or stop it first.");
  await current.streamed;
}

function waitingOf(session: ChatSession) {
  return {
    clientCalls: new Set(session.agent.pendingClientTools.map((call) => call.toolCallId)),
    approvals: new Set(session.agent.pendingApprovals.map((call) => call.toolCallId)),
  };
}
