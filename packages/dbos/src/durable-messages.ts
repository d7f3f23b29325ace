import {
  AgentError,
  ClientToolError,
  type ClientToolOutcome,
  checkClientToolOutcome,
  errorMessage,
  InvalidConfigError,
  refuseUnknownKeys,
  type UserMessage,
} from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import type pg from "pg";
import type { RecordedClock } from "./durable-services.js";
import type { EventStore } from "./event-store.js";

/**
 * What reaches a durable run from outside, as DBOS messages (delivered to the workflow wherever it
 * executes, kept until it receives them, even across a crash): answers to what it waits for, and
 * steering messages and follow-ups.
 */

/** An answer to a run that waits: an approval decision, or a client tool's result. */
export type DurableAnswer = (
  | { kind: "approval"; toolCallId: string; approved: boolean; reason?: string }
  | { kind: "tool-result"; toolCallId: string; outcome: ClientToolOutcome }
  /** Sent by `cancel()`: a run that waits ends there. */
  | { kind: "cancel" }
) & {
  /** When it was sent (default: now; one from the future is taken as now): the run's recorded clock moves on to it. */
  sentAt?: number;
};

/** A steering message or follow-up for a durable run, as sent; or its cancellation. */
export type DurableMessage =
  | { queue: "steer" | "followUp"; message: UserMessage & { timestamp: number } }
  | { queue: "cancel"; sentAt: number };

export const ANSWERS = "agent-core.answer";
export const MESSAGES = "agent-core.message";
/** The channel `NOTIFY` names cancelled runs on: the worker running one aborts it at once. */
export const CANCEL_CHANNEL = "agent_core_cancel";

/** DBOS statuses of a workflow that takes no more messages. */
const ENDED = new Set(["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]);

/** A message for a durable run whose workflow has ended (or never was). */
export class RunEndedError extends AgentError {
  constructor(workflowId: string) {
    super(
      "run_ended",
      `Durable run "${workflowId}" has ended (or does not exist): it takes no more messages.`,
    );
  }
}

/** A run id that names no workflow (a later run's id, `<id>.2`, names none of its own). */
export class UnknownRunError extends AgentError {
  constructor(runId: string) {
    const later = /^(.+)\.\d+$/.exec(runId)?.[1];
    super(
      "unknown_run",
      `No durable run "${runId}"${later === undefined ? "" : `: a later run of workflow "${later}" has no result of its own, the workflow's has`}.`,
    );
  }
}

/** What made a durable run's workflow fail: the code and the message of its error. */
export interface RunFailure {
  /**
   * `agent_factory_failed` (the agent's factory threw, or made no `Agent`), an `AgentError`'s own
   * code (`invalid_config`, `orchestrator_version`, …), or `workflow_error` for anything else.
   */
  code: string;
  message: string;
}

/**
 * A durable run's workflow failed outside its agent's run: its agent could not be made, resumed
 * under another orchestrator version, its log could not be written, …. DBOS marked the workflow
 * `ERROR`: it never runs again. What `result()` rejects with, wherever it is read.
 */
export class RunFailedError extends AgentError {
  /** The workflow's id. */
  readonly runId: string;
  readonly failure: RunFailure;

  constructor(runId: string, failure: RunFailure) {
    super("run_failed", `Durable run "${runId}" failed: ${failure.message}`);
    this.runId = runId;
    this.failure = failure;
  }
}

/** What failed, as `RunFailedError.failure` says it. */
export function failureOf(error: unknown): RunFailure {
  const { code, name } = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    name?: unknown;
  };
  const message = errorMessage(error);
  // An AgentError's code (DBOS hands back a copy of the error that keeps its fields, not its class).
  if (typeof code === "string" && /^[a-z][a-z0-9_]*$/.test(code)) return { code, message };
  const named = typeof name === "string" && name !== "" && name !== "Error" && !message.startsWith(name);
  return { code: "workflow_error", message: named ? `${name}: ${message}` : message };
}

/**
 * A workflow's result, or its failure as a `RunFailedError`: DBOS rejects with a copy of what the
 * workflow threw (its class lost), or with an error of its own (a workflow cancelled through DBOS).
 */
export async function resultOf<T>(runId: string, result: Promise<T>): Promise<T> {
  try {
    return await result;
  } catch (error) {
    if (error instanceof RunFailedError) throw error;
    const copy = (typeof error === "object" && error !== null ? error : {}) as {
      name?: unknown;
      failure?: Partial<RunFailure>;
    };
    const failure = copy.failure;
    if (
      copy.name === "RunFailedError" &&
      typeof failure?.code === "string" &&
      typeof failure.message === "string"
    )
      throw new RunFailedError(runId, { code: failure.code, message: failure.message });
    throw new RunFailedError(runId, failureOf(error));
  }
}

/** An answer to one call: what `answer()` takes (a cancel is `cancel()`'s own). */
export type CallAnswer = Exclude<DurableAnswer, { kind: "cancel" }>;

/**
 * Throws, before anything is sent or recorded, unless `answer` is one a run could take, whatever
 * the run: an object whose `kind` is "approval" or "tool-result" (else `InvalidConfigError`),
 * whose `toolCallId` is a non-empty string, an approval's `approved` a boolean and its `reason`
 * (if any) a string, a result's `outcome` `{ result }` or `{ error: string }`, and whose `sentAt`
 * (if any) is a finite number; each refused as the agent refuses it in process: for an approval
 * `InvalidConfigError`, for a result `ClientToolError`. Taken, `approved: "false"` would approve
 * in the workflow (a string is true) while the answers' ledger recorded a denial.
 */
export function checkAnswerShape(answer: unknown): asserts answer is CallAnswer {
  if (typeof answer !== "object" || answer === null || Array.isArray(answer))
    throw new InvalidConfigError(`An answer must be an object, got ${shown(answer)}.`);
  const { kind, toolCallId, sentAt } = answer as Record<string, unknown>;
  if (kind !== "approval" && kind !== "tool-result")
    throw new InvalidConfigError(`An answer's kind must be "approval" or "tool-result", got ${shown(kind)}.`);
  const Refusal = kind === "approval" ? InvalidConfigError : ClientToolError;
  if (typeof toolCallId !== "string" || toolCallId === "")
    throw new Refusal(`An answer's toolCallId must be a non-empty string, got ${shown(toolCallId)}.`);
  if (sentAt !== undefined && (typeof sentAt !== "number" || !Number.isFinite(sentAt)))
    throw new Refusal(
      `An answer's sentAt must be a finite number (ms since the epoch), got ${shown(sentAt)}.`,
    );
  if (kind === "tool-result")
    return checkClientToolOutcome(toolCallId, (answer as { outcome?: unknown }).outcome);
  const { approved, reason } = answer as { approved?: unknown; reason?: unknown };
  if (typeof approved !== "boolean")
    throw new InvalidConfigError(`An approval's approved must be true or false, got ${shown(approved)}.`);
  if (reason !== undefined && typeof reason !== "string")
    throw new InvalidConfigError(`A denial's reason must be a string, got ${typeof reason}.`);
}

/** A value as a refusal shows it: a string quoted (and cut), a number or boolean as it is, else its type. */
export function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean" || value === undefined || value === null)
    return String(value);
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * Throws, as the agent's `approve()`, `deny()` or `submitToolResult()` would in process, when the
 * workflow's last run has ended waiting and does not wait for the answer's call. In the workflow
 * such an answer would be dropped, and the run would go on waiting until `answerTimeoutMs` with
 * no one told why. A run that has not suspended yet is checked only for a call whose result is
 * stored (in any of the workflow's runs): it waits for nothing again. Any other answer sent before
 * the run waits is kept for its wait. (What no run could take, `checkAnswerShape` refuses first.)
 */
export async function checkAnswer(
  store: Pick<EventStore, "lastRun" | "last" | "hasResult">,
  workflowId: string,
  answer: CallAnswer,
): Promise<void> {
  const { toolCallId } = answer;
  const lastRun = await store.lastRun(workflowId);
  const last = await store.last(lastRun);
  const refusal =
    answer.kind === "approval"
      ? new InvalidConfigError(`No tool call "${toolCallId}" is waiting for approval.`)
      : new ClientToolError(`No client tool call "${toolCallId}" is waiting for a result.`);
  if (last?.type !== "agent_end") {
    if (await store.hasResult(runsUpTo(workflowId, lastRun), toolCallId)) throw refusal;
    return;
  }
  const waits = (calls: { toolCallId: string }[] | undefined) =>
    (calls ?? []).some((call) => call.toolCallId === toolCallId);
  if (!waits(answer.kind === "approval" ? last.pendingApprovals : last.pendingClientTools)) throw refusal;
}

/** The workflow's runs up to `lastRun`: `<id>`, `<id>.2`, …. */
function runsUpTo(workflowId: string, lastRun: string): string[] {
  const count = lastRun === workflowId ? 1 : Number(lastRun.slice(workflowId.length + 1));
  return Array.from({ length: count }, (_, index) =>
    index === 0 ? workflowId : `${workflowId}.${index + 1}`,
  );
}

/**
 * The answer as sent: stamped with the sending time, or its own `sentAt` if earlier. One from the
 * future is taken as now: the run's recorded clock moves on to it, and a clock moved ahead would
 * put off the next run's `totalMs` and the next wait's `answerTimeoutMs` by as much.
 */
export function stamped(answer: DurableAnswer): DurableAnswer {
  const now = Date.now();
  return { ...answer, sentAt: Math.min(answer.sentAt ?? now, now) };
}

/**
 * Throws unless `start()`'s options are an object of no other option than `runId` (checked by
 * `checkRunId`): a misspelled `runid` would start a new run on every call, not the same one.
 */
export function checkStartOptions(options: unknown): asserts options is { runId?: unknown } {
  if (typeof options !== "object" || options === null)
    throw new InvalidConfigError(`start()'s options must be an object ({ runId? }), got ${shown(options)}.`);
  refuseUnknownKeys("start() options", options, ["runId"]);
}

/** Throws unless `after` is absent or a seq a read may start after: a whole number from -1. */
export function checkAfter(after: unknown): void {
  if (after !== undefined && !(Number.isInteger(after) && (after as number) >= -1))
    throw new InvalidConfigError(
      `after must be a whole number from -1 (the seq of the last event read), got ${shown(after)}.`,
    );
}

/**
 * Throws `InvalidConfigError` unless `agentName` is a string: no agent has another name, and a
 * client, which knows no agents, would enqueue a run that fails in the worker (and `42` would
 * name the agent "42" there).
 */
export function checkAgentName(agentName: unknown): void {
  if (typeof agentName !== "string")
    throw new InvalidConfigError(`An agent's name must be a string, got ${shown(agentName)}.`);
}

/**
 * Throws unless `prompt` is a string: a run's workflow takes its prompt as one, and anything else
 * would start a workflow only to fail it.
 */
export function checkPrompt(prompt: unknown): void {
  if (typeof prompt !== "string")
    throw new InvalidConfigError(`A durable run's prompt must be a string, got ${shown(prompt)}.`);
}

/** Throws `RunEndedError` unless the workflow's status (`undefined`: no such workflow) takes messages. */
export function checkTakesMessages(workflowId: string, status: string | undefined): void {
  if (status === undefined || ENDED.has(status)) throw new RunEndedError(workflowId);
}

/**
 * The message to send, once the workflow's status (`undefined`: no such workflow) says it still
 * takes messages; else `RunEndedError`.
 */
export function messageFor(
  workflowId: string,
  status: string | undefined,
  queue: "steer" | "followUp",
  content: string,
): DurableMessage {
  checkTakesMessages(workflowId, status);
  return { queue, message: { role: "user", content, timestamp: Date.now() } };
}

/**
 * How many steering messages and follow-ups sent to the workflow are in the database, not yet
 * received by its run (it receives them at the end of each model call). Its cancels, on the same
 * topic, are not counted.
 */
export async function queuedMessages(db: Pick<pg.ClientBase, "query">, workflowId: string): Promise<number> {
  const { rows } = await db.query<{ count: string }>(
    `SELECT count(*) FROM dbos.notifications
     WHERE destination_uuid = $1 AND topic = $2 AND NOT consumed AND message NOT LIKE '%"queue":"cancel"%'`,
    [workflowId, MESSAGES],
  );
  return Number(rows[0]?.count);
}

/**
 * Cancels a run wherever it is (`status`: its workflow's, `undefined` when none has that id:
 * `UnknownRunError`; an ended one is left as it is): two durable messages reach it if no worker runs it now (a dead
 * worker's run, recovered, or a queued one takes the cancel before it calls the model or a tool
 * again) or if it waits for an answer; then its mailbox is closed (`closeMailbox`); then a
 * `NOTIFY` makes the worker running it abort it at once. The messages go first: a cancel a worker
 * takes live is already stored, so if that worker dies (it may be the process that cancelled) the
 * run that recovers takes it too.
 */
export async function cancelRun(
  workflowId: string,
  status: string | undefined,
  notify: (channel: string, payload: string) => Promise<unknown>,
  send: (message: unknown, topic: string) => Promise<void>,
  closeMailbox: () => Promise<unknown>,
): Promise<void> {
  // An id no workflow has is a mistake to say (DBOS would refuse the messages with an error of its
  // own); a workflow that has ended stays as it ended, with nothing sent that no one would read.
  if (status === undefined) throw new UnknownRunError(workflowId);
  if (ENDED.has(status)) return;
  const sentAt = Date.now();
  await send({ queue: "cancel", sentAt } satisfies DurableMessage, MESSAGES);
  await send({ kind: "cancel", sentAt } satisfies DurableAnswer, ANSWERS);
  // The run ends at the cancel, leaving unread whatever else waits for it: what is sent from now on
  // is refused (`RunEndedError`) rather than taken and never read, wherever the run is (in the
  // queue, waiting, running, or in no worker). The workflow's own close finds it closed.
  await closeMailbox();
  await notify(CANCEL_CHANNEL, workflowId);
}

/**
 * In the workflow: every message sent to the run and not yet received, oldest first. Each receive
 * is recorded, so a replay receives the same messages at the same points.
 */
export async function receiveMessages(clock: RecordedClock): Promise<DurableMessage[]> {
  const received: DurableMessage[] = [];
  for (;;) {
    const message = await DBOS.recv<DurableMessage>(MESSAGES, 0);
    if (message === null) return received;
    clock.passed(message.queue === "cancel" ? message.sentAt : message.message.timestamp);
    received.push(message);
  }
}
