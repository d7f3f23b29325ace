import {
  type Agent,
  InvalidConfigError,
  isLogger,
  LONGEST_TIMER_MS,
  type Logger,
  refuseUnknownKeys,
} from "@agent-core/core";
import { checkDatabaseUrl } from "./database.js";
import { shown } from "./durable-messages.js";

export interface DurableRuntimeOptions {
  /** The PostgreSQL database DBOS keeps its workflows in (created if missing), and the event log. */
  databaseUrl: string;
  /** The application's name in that database (default "agent-core"). */
  name?: string;
  /**
   * The agents runs may use, by name. Every process of the application registers the same ones:
   * a run that resumes in another process makes its agent there, from this factory.
   */
  agents: Record<string, () => Agent>;
  /**
   * Runs start through this DBOS queue, which every worker process of the application serves:
   * `workerConcurrency` runs at once per process, `globalConcurrency` across all of them (each an
   * integer of at least 1, `globalConcurrency` at least `workerConcurrency`).
   */
  queue?: { name?: string; workerConcurrency?: number; globalConcurrency?: number };
  /**
   * This worker's id (default "local", or `DBOS__VMID`). With several workers give each its own,
   * stable across restarts: a worker that launches resumes the runs a dead worker with its id left
   * (and never those of a worker still running).
   */
  executorId?: string;
  /** How long a run that waits for an approval or a client tool result waits (default 24 h; above 0). */
  answerTimeoutMs?: number;
  /**
   * How long the runtime's calls (`start()`, `result()`, `answer()`, `steer()`, `cancel()`, …) wait
   * on a database that does not answer before they reject with `database_unreachable` (default
   * 30 s; above 0, at most 2^31 - 1, the longest a timer waits). The runs themselves wait for it:
   * they go on once it is back.
   */
  databaseTimeoutMs?: number;
  /**
   * Where DBOS's own log lines go (a workflow that failed, a step retried, a run recovered), with
   * `source: "dbos"` and, for a line about a run, its `runId` in their fields; pino's shape, as
   * an agent's `logger`. Default: silent. The runs' agents log through their own `logger`.
   */
  logger?: Logger;
}

/**
 * Each runtime's `agents`, recorded when it is made: what `durableBackend()` checks its
 * `agentName` against (a name its runtime does not have would fail every start).
 */
export const runtimeAgents = new WeakMap<object, Readonly<Record<string, () => Agent>>>();

/**
 * Throws `InvalidConfigError` for an option of `new DurableRuntime()` that no runtime could use,
 * before anything is made: DBOS would take most of them and fail later, halfway through
 * `launch()` (a fractional or too low concurrency, an empty name), or never (a queue no worker
 * takes from, a wait that never times out, a `databaseTimeoutMs` past the longest timer that fails
 * every query at once).
 */
export function checkRuntimeOptions(options: DurableRuntimeOptions): void {
  if (typeof options !== "object" || options === null)
    throw new InvalidConfigError(`DurableRuntime's options must be an object, got ${shown(options)}.`);
  refuseUnknownKeys("DurableRuntime options", options, [
    "databaseUrl",
    "name",
    "agents",
    "queue",
    "executorId",
    "answerTimeoutMs",
    "databaseTimeoutMs",
    "logger",
  ]);
  checkDatabaseUrl(options.databaseUrl);
  const { agents, queue } = options;
  if (typeof agents !== "object" || agents === null || Array.isArray(agents))
    throw new InvalidConfigError(
      `agents must be an object of agent factories by name, got ${shown(agents)}.`,
    );
  for (const [name, make] of Object.entries(agents))
    if (typeof make !== "function")
      throw new InvalidConfigError(
        `agents.${name} must be a function that makes an Agent, got ${shown(make)}.`,
      );
  checkName("name", options.name);
  checkName("executorId", options.executorId);
  if (queue !== undefined) {
    if (typeof queue !== "object" || queue === null)
      throw new InvalidConfigError(`queue must be an object, got ${shown(queue)}.`);
    refuseUnknownKeys("queue options", queue, ["name", "workerConcurrency", "globalConcurrency"]);
    checkName("queue.name", queue.name);
    checkConcurrency("queue.workerConcurrency", queue.workerConcurrency);
    checkConcurrency("queue.globalConcurrency", queue.globalConcurrency);
    const { workerConcurrency, globalConcurrency } = queue;
    if (
      workerConcurrency !== undefined &&
      globalConcurrency !== undefined &&
      globalConcurrency < workerConcurrency
    )
      throw new InvalidConfigError(
        `queue.globalConcurrency (${globalConcurrency}) must be at least queue.workerConcurrency (${workerConcurrency}).`,
      );
  }
  checkDuration("answerTimeoutMs", options.answerTimeoutMs, Number.MAX_SAFE_INTEGER);
  checkDatabaseTimeout(options.databaseTimeoutMs);
  checkLogger(options.logger);
}

/** Throws `InvalidConfigError` unless `logger` is absent or has the four levels of a `Logger`. */
export function checkLogger(logger: unknown): void {
  if (logger !== undefined && !isLogger(logger))
    throw new InvalidConfigError("logger must have error, warn, info and debug methods.");
}

/**
 * Throws `InvalidConfigError` for a `databaseTimeoutMs` (of a runtime or a client) no timer can
 * wait: it is a query's timer too (`query_timeout`), and a longer one would fail every query at once.
 */
export function checkDatabaseTimeout(databaseTimeoutMs: unknown): void {
  checkDuration("databaseTimeoutMs", databaseTimeoutMs, LONGEST_TIMER_MS);
}

/** Throws `InvalidConfigError` unless `value` is absent or a non-empty string. */
export function checkName(option: string, value: unknown): void {
  if (value !== undefined && (typeof value !== "string" || value === ""))
    throw new InvalidConfigError(`${option} must be a non-empty string, got ${shown(value)}.`);
}

function checkConcurrency(option: string, value: unknown): void {
  if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 1))
    throw new InvalidConfigError(`${option} must be an integer of at least 1, got ${shown(value)}.`);
}

function checkDuration(option: string, value: unknown, longestMs: number): void {
  if (value !== undefined && !(typeof value === "number" && value > 0 && value <= longestMs))
    throw new InvalidConfigError(
      `${option} must be a number of milliseconds above 0, at most ${longestMs}, got ${shown(value)}.`,
    );
}
