import {
  type Agent,
  InvalidConfigError,
  isLogger,
  LONGEST_TIMER_MS,
  type Logger,
  ownOptions,
  silentLogger,
} from "@agent-core/core";
import type { HookKey } from "./hook-tokens.js";
import type { AgentRequest, RunBackend } from "./run-backend.js";
import type { TokenLedger } from "./token-ledger.js";

/** Who is asking, as `authorize` found out: the user, and the documents they may touch. */
export interface Principal {
  userId: string;
  /** The document ids this user may run agents on; absent: any (anything else but a list: 500). */
  documents?: readonly string[];
}

/**
 * A limit of `points` requests per `durationSec` seconds, per user: `points` a whole number >= 1,
 * `durationSec` > 0 and at most 2,147,483.647 (the longest a timer waits, in seconds): anything else
 * is an `InvalidConfigError` when the server is made.
 */
export interface RateLimit {
  points: number;
  durationSec: number;
}

export interface AgentServerOptions {
  /**
   * The agent for a conversation. Called once per `(userId, conversationId)` (the agent keeps that
   * conversation's history) and once per run without a conversation id. Give this or `backend`.
   */
  agent?: (request: AgentRequest) => Agent | Promise<Agent>;
  /**
   * Where runs execute instead of agents in this process: a durable runtime's backend
   * (`durableBackend` of `@agent-core/dbos`) runs them in workers, and any server process sharing
   * its database serves any run. Give this or `agent`.
   */
  backend?: RunBackend;
  /** Who is asking, for every route; undefined (or a throw) answers 401. */
  authorize(request: Request): Principal | undefined | Promise<Principal | undefined>;
  /** Signs hook tokens: a secret of 32+ characters, or keys (the first signs, all verify). */
  hookSecret: string | readonly HookKey[];
  /** Prefix of every route (default ""): `"/api"` serves `POST /api/runs`. */
  basePath?: string;
  /** How long a client tool call waits for its result before it ends as `timeout` (default 60 s). */
  clientToolTimeoutMs?: number;
  /**
   * How runs wait for client tools: `"wait"` (default) keeps the run going, streaming, until the
   * result is posted; `"suspend"` ends the run as `awaiting_client_tool` (its `agent_end` lists the
   * calls with their tokens), and the last result posted resumes it as a new run (202 `{ runId }`).
   */
  clientTools?: "wait" | "suspend";
  /** How long the tokens of a suspended run's calls stay valid, and the run kept (default 1 h). */
  suspendedTtlMs?: number;
  /** A run's whole time (default 10 min), unless the agent sets its own `timeouts.totalMs`. */
  runTimeoutMs?: number;
  /** A heartbeat event after this long without one on a stream (default 15 s). */
  heartbeatMs?: number;
  /**
   * When a run's last stream goes away (the client left), the run is aborted after this long
   * without a stream re-attaching (default 5 s; 0: at once). Runs started with `outliveStream`
   * are never aborted for this.
   */
  detachGraceMs?: number;
  /**
   * Event streams open on one run at once, its start's included (default 16): past it,
   * `GET …/events` answers 429 `too-many-streams` (`Retry-After: 1`) until one closes.
   */
  maxStreamsPerRun?: number;
  /** Events kept per run for re-attaching (default 10,000; the oldest go first). */
  maxEventsPerRun?: number;
  /** How long an ended run can still be re-attached to (default 5 min); then it is forgotten (404). */
  retainEndedMs?: number;
  /**
   * Runs kept at once, starting, running or ended (default 10,000); past it `POST /runs` answers
   * 503. A run resumed from a suspended one takes that run's place (the suspended run, kept for
   * re-attaching, no longer counts): a resume is never refused for it.
   */
  maxRuns?: number;
  /**
   * Steering and follow-up messages a run may have waiting to be taken, together (default 100):
   * past it, `…/steer` and `…/follow-up` answer 429 `queue-full` (`Retry-After: 1`) and queue
   * nothing. A `backend` is given it with each message (`durableBackend` counts the messages its
   * run's workflow has not received yet, in the database).
   */
  maxQueuedMessages?: number;
  /**
   * Conversations idle this long, from the end of their last run, are forgotten then (default
   * 30 min), whether or not another request comes.
   */
  conversationTtlMs?: number;
  /**
   * How long a start's `Idempotency-Key` is remembered, from the start that first used it
   * (default 1 h): a repeat within it gets that start's run, never a second one; after it, the
   * key starts a new run. The default outlasts the time the server keeps a run of the default
   * `runTimeoutMs`, and bounds the keys kept in memory to an hour's starts.
   */
  idempotencyKeyTtlMs?: number;
  /** Largest request body (default 256 KiB). */
  maxBodyBytes?: number;
  /**
   * Per-user limits (memory); `false` turns one off. Defaults: start (`POST /runs`) 30/min,
   * callback (`POST …/tool-results`) 600/min; past one, 429 `rate-limited` with `Retry-After`.
   */
  rateLimits?: { start?: RateLimit | false; callback?: RateLimit | false };
  /** Where used hook tokens are recorded (default: in memory). */
  ledger?: TokenLedger;
  /** The clock (default `Date.now`); tokens expire by it. */
  now?: () => number;
  /**
   * Where the server's log lines go (a request that failed; a pino logger fits). Default: silent.
   * The agents log through their own `logger`.
   */
  logger?: Logger;
}

/** Every option `createAgentServer` knows: any other key is refused (a misspelled one, most likely). */
const SERVER_OPTIONS: readonly (keyof AgentServerOptions)[] = [
  "agent",
  "backend",
  "authorize",
  "hookSecret",
  "basePath",
  "clientToolTimeoutMs",
  "clientTools",
  "suspendedTtlMs",
  "runTimeoutMs",
  "heartbeatMs",
  "detachGraceMs",
  "maxStreamsPerRun",
  "maxEventsPerRun",
  "retainEndedMs",
  "maxRuns",
  "maxQueuedMessages",
  "conversationTtlMs",
  "idempotencyKeyTtlMs",
  "maxBodyBytes",
  "rateLimits",
  "ledger",
  "now",
  "logger",
];

/** The server's own copy of its options (see `ownOptions`). */
export function ownServerOptions(options: AgentServerOptions): AgentServerOptions {
  const own = ownOptions("createAgentServer() options", options, SERVER_OPTIONS);
  if (own.rateLimits !== undefined) own.rateLimits = ownRateLimits(own.rateLimits);
  return own;
}

/** `rateLimits` as the server keeps it: `start` and `callback` only, each a limit's own copy. */
function ownRateLimits(rateLimits: NonNullable<AgentServerOptions["rateLimits"]>) {
  const own = ownOptions("rateLimits", rateLimits, ["start", "callback"]);
  for (const name of ["start", "callback"] as const) {
    const limit = own[name];
    if (typeof limit === "object" && limit !== null)
      own[name] = ownOptions(`rateLimits.${name}`, limit, ["points", "durationSec"]);
  }
  return own;
}

/** The options with their defaults, checked once when the server is made. */
export function resolveOptions(options: AgentServerOptions) {
  const positive = (name: string, value: number | undefined, fallback: number, zero = false) => {
    if (value === undefined) return fallback;
    if (typeof value !== "number" || Number.isNaN(value) || value < 0 || (value === 0 && !zero))
      throw new InvalidConfigError(
        `${name} must be a number ${zero ? ">= 0" : "> 0"}, got ${String(value)}.`,
      );
    return value;
  };
  const duration = (name: string, value: number | undefined, fallback: number, zero = false) =>
    timerDuration(name, positive(name, value, fallback, zero));
  if ((options.agent === undefined) === (options.backend === undefined))
    throw new InvalidConfigError("Give either agent (a function returning an Agent) or backend, not both.");
  if (options.agent !== undefined && typeof options.agent !== "function")
    throw new InvalidConfigError("agent must be a function returning an Agent.");
  if (options.backend !== undefined && !hasMethods(options.backend, ["start", "find", "close"]))
    throw new InvalidConfigError(
      "backend must be a RunBackend: an object with start, find and close methods.",
    );
  if (typeof options.authorize !== "function")
    throw new InvalidConfigError("authorize must be a function returning the user (or undefined: 401).");
  if (options.logger !== undefined && !isLogger(options.logger))
    throw new InvalidConfigError("logger must have error, warn, info and debug methods.");
  // Both are called on every tool result: taken as they are, a wrong one would fail each post (500).
  if (options.ledger !== undefined && !hasMethods(options.ledger, ["use"]))
    throw new InvalidConfigError("ledger must be a TokenLedger: an object with a use method.");
  if (options.now !== undefined && typeof options.now !== "function")
    throw new InvalidConfigError("now must be a function returning the time in ms (as Date.now does).");
  if (options.basePath !== undefined && typeof options.basePath !== "string")
    throw new InvalidConfigError(`basePath must be a string, got ${typeof options.basePath}.`);
  const basePath = (options.basePath ?? "").replace(/\/+$/, "");
  if (basePath !== "" && !basePath.startsWith("/"))
    throw new InvalidConfigError(`basePath must start with "/", got "${options.basePath}".`);
  return {
    basePath,
    clientToolTimeoutMs: duration("clientToolTimeoutMs", options.clientToolTimeoutMs, 60_000),
    runTimeoutMs: duration("runTimeoutMs", options.runTimeoutMs, 600_000),
    heartbeatMs: duration("heartbeatMs", options.heartbeatMs, 15_000),
    detachGraceMs: duration("detachGraceMs", options.detachGraceMs, 5_000, true),
    maxStreamsPerRun: count("maxStreamsPerRun", options.maxStreamsPerRun, 16),
    maxEventsPerRun: count("maxEventsPerRun", options.maxEventsPerRun, 10_000),
    retainEndedMs: duration("retainEndedMs", options.retainEndedMs, 300_000, true),
    suspendedTtlMs: duration("suspendedTtlMs", options.suspendedTtlMs, 3_600_000),
    clientTools: clientToolMode(options.clientTools),
    maxRuns: count("maxRuns", options.maxRuns, 10_000),
    maxQueuedMessages: count("maxQueuedMessages", options.maxQueuedMessages, 100),
    conversationTtlMs: positive("conversationTtlMs", options.conversationTtlMs, 1_800_000),
    idempotencyKeyTtlMs: positive("idempotencyKeyTtlMs", options.idempotencyKeyTtlMs, 3_600_000),
    maxBodyBytes: count("maxBodyBytes", options.maxBodyBytes, 256 * 1024),
    now: options.now ?? Date.now,
    logger: options.logger ?? silentLogger,
  };
}

/**
 * A count option (`fallback` when not given): a whole number from 1. A fraction or an infinity
 * would be taken as no count is (1.5 streams, a body of Infinity bytes): refused, not rounded.
 */
export function count(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1)
    throw new InvalidConfigError(`${name} must be a whole number >= 1, got ${String(value)}.`);
  return value;
}

/** Whether `value` is an object with a function at each of `methods`. */
function hasMethods(value: unknown, methods: readonly string[]): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    methods.every((method) => typeof (value as Record<string, unknown>)[method] === "function")
  );
}

/**
 * A time a timer waits for (or that an agent's timeouts take, with the same bound): past
 * `LONGEST_TIMER_MS` Node fires it after 1 ms, so a run kept 30 days would be forgotten at once and an
 * agent refuses it on every start. Refused here, when the server is made.
 */
export function timerDuration(name: string, ms: number): number {
  if (ms > LONGEST_TIMER_MS)
    throw new InvalidConfigError(
      `${name} must be at most ${LONGEST_TIMER_MS} ms (about 24.8 days: the longest a timer waits), got ${ms}.`,
    );
  return ms;
}

function clientToolMode(mode: unknown): "wait" | "suspend" {
  if (mode === undefined) return "wait";
  if (mode === "wait" || mode === "suspend") return mode;
  throw new InvalidConfigError(`clientTools must be "wait" or "suspend", got ${JSON.stringify(mode)}.`);
}
