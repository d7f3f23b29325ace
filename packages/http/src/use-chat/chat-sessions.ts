import type { Agent, AgentRun } from "@agent-core/core";
import { ChatTranscript } from "./chat-transcript.js";

/** One chat on the server: its agent (history, waiting calls), its transcript, its latest run. */
export interface ChatSession {
  readonly agent: Agent;
  readonly transcript: ChatTranscript;
  /** The run streaming now or last, and when its stream is done with it (the transcript complete). */
  current: { run: AgentRun; streamed: Promise<void>; abandoned: boolean } | undefined;
  usedAt: number;
}

/** The chats of this process, one per `(user, chat id)`; idle ones are forgotten after `ttlMs`. */
export class ChatSessions {
  readonly #sessions = new Map<string, ChatSession>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(ttlMs: number, now: () => number) {
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  get size(): number {
    return this.#sessions.size;
  }

  get(userId: string, chatId: string): ChatSession | undefined {
    this.#forgetIdle();
    const session = this.#sessions.get(key(userId, chatId));
    if (session !== undefined) session.usedAt = this.#now();
    return session;
  }

  add(userId: string, chatId: string, agent: Agent): ChatSession {
    const session: ChatSession = {
      agent,
      transcript: new ChatTranscript(),
      current: undefined,
      usedAt: this.#now(),
    };
    this.#sessions.set(key(userId, chatId), session);
    return session;
  }

  /** Aborts every run and forgets every chat. */
  close(): void {
    for (const session of this.#sessions.values()) session.agent.abort(new Error("the server is closing"));
    this.#sessions.clear();
  }

  #forgetIdle(): void {
    const now = this.#now();
    for (const [name, session] of this.#sessions)
      if (!session.agent.busy && now - session.usedAt > this.#ttlMs) this.#sessions.delete(name);
  }
}

function key(userId: string, chatId: string): string {
  return `${userId}\u0000${chatId}`;
}
