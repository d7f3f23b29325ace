import type { Agent, AgentRun } from "@agent-core/core";
import { forgetOnceIdle } from "../idle-forgetting.js";
import { ChatTranscript } from "./chat-transcript.js";

/** One chat on the server: its agent (history, waiting calls), its transcript, its latest run. */
export interface ChatSession {
  readonly agent: Agent;
  readonly transcript: ChatTranscript;
  /** The run streaming now or last, and when its stream is done with it (the transcript complete). */
  current: { run: AgentRun; streamed: Promise<void>; abandoned: boolean } | undefined;
  usedAt: number;
  /** Stops the watch that forgets the chat once idle. */
  stopWatching: () => void;
}

/** The chats of this process, one per `(user, chat id)`; idle ones are forgotten after `ttlMs`. */
export class ChatSessions {
  readonly #sessions = new Map<string, ChatSession>();
  /** The agents of the chats kept: an agent has one chat's history, so it serves one chat. */
  readonly #agents = new Set<Agent>();
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
    // The same agent for two chats (a factory that returns one shared agent) would give each chat
    // the other's history, another user's too, and mix their waiting calls.
    if (this.#agents.has(agent))
      throw new TypeError(
        "agent() returned an agent that another chat has: return a new Agent for each (user, chat id).",
      );
    const session: ChatSession = {
      agent,
      transcript: new ChatTranscript(),
      current: undefined,
      usedAt: this.#now(),
      stopWatching: () => {},
    };
    const name = key(userId, chatId);
    this.#sessions.set(name, session);
    this.#agents.add(agent);
    // Forgotten once idle whether or not another post comes, never while its agent runs.
    session.stopWatching = forgetOnceIdle(
      {
        busy: () => agent.busy,
        idleFor: () => this.#now() - session.usedAt,
        ttlMs: () => this.#ttlMs,
        forget: () => this.#forget(name, session),
      },
      this.#ttlMs,
    );
    return session;
  }

  /** Aborts every run and forgets every chat. */
  close(): void {
    for (const session of this.#sessions.values()) {
      session.stopWatching();
      session.agent.abort(new Error("the server is closing"));
    }
    this.#sessions.clear();
    this.#agents.clear();
  }

  #forgetIdle(): void {
    const now = this.#now();
    for (const [name, session] of this.#sessions)
      if (!session.agent.busy && now - session.usedAt > this.#ttlMs) {
        session.stopWatching();
        this.#forget(name, session);
      }
  }

  #forget(name: string, session: ChatSession): void {
    this.#sessions.delete(name);
    this.#agents.delete(session.agent);
  }
}

function key(userId: string, chatId: string): string {
  return `${userId}\u0000${chatId}`;
}
