import type { Agent, AgentRun } from "@agent-core/core";
import { MAX_TIMER_MS } from "../server-options.js";
import { ChatTranscript } from "./chat-transcript.js";

/** One chat on the server: its agent (history, waiting calls), its transcript, its latest run. */
export interface ChatSession {
  readonly agent: Agent;
  readonly transcript: ChatTranscript;
  /** The run streaming now or last, and when its stream is done with it (the transcript complete). */
  current: { run: AgentRun; streamed: Promise<void>; abandoned: boolean } | undefined;
  usedAt: number;
  /** Forgets the chat once idle for the TTL, whether or not another post comes. */
  forgetTimer: ReturnType<typeof setTimeout> | undefined;
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
      forgetTimer: undefined,
    };
    this.#sessions.set(key(userId, chatId), session);
    this.#forgetWhenIdle(key(userId, chatId), session, this.#ttlMs);
    return session;
  }

  /**
   * Forgets the chat after `waitMs` if it was idle for the TTL by then (never while its agent
   * runs), else looks again once it may be: a handler that gets no more posts must still let go
   * of its chats' agents and transcripts.
   */
  #forgetWhenIdle(name: string, session: ChatSession, waitMs: number): void {
    session.forgetTimer = setTimeout(
      () => {
        // Forgotten already (by a post that found it idle on a clock moved ahead): nothing to do.
        if (this.#sessions.get(name) !== session) return;
        const idleFor = this.#now() - session.usedAt;
        if (!session.agent.busy && idleFor >= this.#ttlMs) {
          this.#sessions.delete(name);
          return;
        }
        this.#forgetWhenIdle(name, session, session.agent.busy ? this.#ttlMs : this.#ttlMs - idleFor);
      },
      // A longer wait would fire after 1 ms: it is waited for in steps.
      Math.min(waitMs, MAX_TIMER_MS),
    );
    // Forgetting a chat later is no reason to keep the process alive.
    session.forgetTimer.unref?.();
  }

  /** Aborts every run and forgets every chat. */
  close(): void {
    for (const session of this.#sessions.values()) {
      clearTimeout(session.forgetTimer);
      session.agent.abort(new Error("the server is closing"));
    }
    this.#sessions.clear();
  }

  #forgetIdle(): void {
    const now = this.#now();
    for (const [name, session] of this.#sessions)
      if (!session.agent.busy && now - session.usedAt > this.#ttlMs) {
        clearTimeout(session.forgetTimer);
        this.#sessions.delete(name);
      }
  }
}

function key(userId: string, chatId: string): string {
  return `${userId}\u0000${chatId}`;
}
