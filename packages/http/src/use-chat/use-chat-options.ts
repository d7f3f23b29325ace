import {
  type Agent,
  InvalidConfigError,
  isLogger,
  type Logger,
  ownOptions,
  silentLogger,
} from "@agent-core/core";
import type { AgentRequest } from "../run-backend.js";
import { count, type Principal, type RateLimit, timerDuration } from "../server-options.js";

export interface UseChatHandlerOptions {
  /**
   * The agent of a chat: called once per `(userId, chat id)` (`conversationId` is the chat's id);
   * the agent keeps the chat's history and its waiting tool calls between posts.
   */
  agent: (request: AgentRequest) => Agent | Promise<Agent>;
  /** Who is asking; undefined (or a throw) answers 401. */
  authorize(request: Request): Principal | undefined | Promise<Principal | undefined>;
  /** A run's whole time (default 10 min), unless the agent sets its own `timeouts.totalMs`. */
  runTimeoutMs?: number;
  /** Chats idle this long, from the end of their last answer, are forgotten (default 30 min). */
  chatTtlMs?: number;
  /** Largest request body (default 1 MiB: useChat posts the whole chat every time). */
  maxBodyBytes?: number;
  /** Most messages a chat may have (default 1,000). */
  maxMessages?: number;
  /** Posts per user (memory); `false` turns it off. Default 60 a minute. */
  rateLimit?: RateLimit | false;
  /** The clock (default `Date.now`). */
  now?: () => number;
  /** Where the handler's log lines go (a post that failed; a pino logger fits). Default: silent. */
  logger?: Logger;
}

/** Every option `createUseChatHandler` knows: any other key is refused (a misspelled one, most likely). */
const USE_CHAT_OPTIONS: readonly (keyof UseChatHandlerOptions)[] = [
  "agent",
  "authorize",
  "runTimeoutMs",
  "chatTtlMs",
  "maxBodyBytes",
  "maxMessages",
  "rateLimit",
  "now",
  "logger",
];

/** The handler's own copy of its options (see `ownOptions`). */
export function ownUseChatOptions(options: UseChatHandlerOptions): UseChatHandlerOptions {
  const own = ownOptions("createUseChatHandler() options", options, USE_CHAT_OPTIONS);
  if (typeof own.rateLimit === "object" && own.rateLimit !== null)
    own.rateLimit = ownOptions("rateLimit", own.rateLimit, ["points", "durationSec"]);
  return own;
}

/** The options with their defaults, checked once when the handler is made. */
export function resolveUseChatOptions(options: UseChatHandlerOptions) {
  if (typeof options.agent !== "function")
    throw new InvalidConfigError("agent must be a function returning an Agent.");
  if (typeof options.authorize !== "function")
    throw new InvalidConfigError("authorize must be a function returning the user (or undefined: 401).");
  if (options.logger !== undefined && !isLogger(options.logger))
    throw new InvalidConfigError("logger must have error, warn, info and debug methods.");
  if (options.now !== undefined && typeof options.now !== "function")
    throw new InvalidConfigError("now must be a function returning the time in ms (as Date.now does).");
  const positive = (name: string, value: number | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    if (typeof value !== "number" || !(value > 0))
      throw new InvalidConfigError(`${name} must be a number > 0, got ${String(value)}.`);
    return value;
  };
  return {
    runTimeoutMs: timerDuration("runTimeoutMs", positive("runTimeoutMs", options.runTimeoutMs, 600_000)),
    chatTtlMs: positive("chatTtlMs", options.chatTtlMs, 1_800_000),
    maxBodyBytes: count("maxBodyBytes", options.maxBodyBytes, 1024 * 1024),
    maxMessages: count("maxMessages", options.maxMessages, 1_000),
    now: options.now ?? Date.now,
    logger: options.logger ?? silentLogger,
  };
}
