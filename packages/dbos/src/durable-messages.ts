import { AgentError, type ClientToolOutcome, type UserMessage } from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { RecordedClock } from "./durable-services.js";

/**
 * What reaches a durable run from outside, as DBOS messages (delivered to the workflow wherever it
 * executes, kept until it receives them, even across a crash): answers to what it waits for, and
 * steering messages and follow-ups.
 */

/** An answer to a run that waits: an approval decision, or a client tool's result. */
export type DurableAnswer = (
  | { kind: "approval"; toolCallId: string; approved: boolean; reason?: string }
  | { kind: "tool-result"; toolCallId: string; outcome: ClientToolOutcome }
) & {
  /** When it was sent (default: now): the run's recorded clock moves on to it. */
  sentAt?: number;
};

/** A steering message or follow-up for a durable run, as sent. */
export interface DurableMessage {
  queue: "steer" | "followUp";
  message: UserMessage & { timestamp: number };
}

export const ANSWERS = "agent-core.answer";
export const MESSAGES = "agent-core.message";

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

/** The answer as sent: stamped with the sending time. */
export function stamped(answer: DurableAnswer): DurableAnswer {
  return answer.sentAt === undefined ? { ...answer, sentAt: Date.now() } : answer;
}

/**
 * The message to send, once the workflow's status (`undefined`: no such workflow) says it still
 * takes messages; else `RunEndedError`.
 */
export function messageFor(
  workflowId: string,
  status: string | undefined,
  queue: DurableMessage["queue"],
  content: string,
): DurableMessage {
  if (status === undefined || ENDED.has(status)) throw new RunEndedError(workflowId);
  return { queue, message: { role: "user", content, timestamp: Date.now() } };
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
    clock.passed(message.message.timestamp);
    received.push(message);
  }
}
