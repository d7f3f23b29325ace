import { createHash, randomUUID } from "node:crypto";
import { ClientToolError, canonicalJson, InvalidConfigError } from "@agent-core/core";
import type { Pool, PoolClient } from "pg";
import { inTransaction } from "./database.js";
import {
  ANSWERS,
  type CallAnswer,
  checkAnswer,
  checkAnswerShape,
  type DurableAnswer,
  MESSAGES,
  stamped,
} from "./durable-messages.js";
import { EventStore } from "./event-store.js";
import { lockMailbox, lockOpenMailbox, markClosed, messagesWaitingIn } from "./mailbox.js";

/**
 * The approvals and client tool results sent to durable runs, one per call (and kind: a client
 * tool that needs approval gets both), so that a second answer to a call is refused where it is
 * sent. Sent on, it would reach a workflow that takes the first answer and drops the rest unseen:
 * a denial after an approval would look taken and change nothing.
 */

export async function createAnswersTable(pool: Pick<Pool, "query">): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS agent_core_answers (
    workflow_id text NOT NULL,
    tool_call_id text NOT NULL,
    kind text NOT NULL,
    approved boolean,
    digest text NOT NULL,
    PRIMARY KEY (workflow_id, tool_call_id, kind)
  )`);
}

/**
 * Sends `answer` with `send` unless the call has had one. An answer no run could take is refused
 * first, before `connection` is asked for the pool (see `checkAnswerShape`: a `kind` other than
 * "approval" or "tool-result", a cancel's too, an `approved` that is not a boolean, …). The same
 * answer again (a retried send) is taken as sent, whatever the run has done since, its end
 * included: nothing is sent twice. Another answer is refused as the agent refuses a second one in
 * process: `InvalidConfigError` (`Tool call "<id>" was already approved.`, or denied) or
 * `ClientToolError` (`Client tool call "<id>" already has its result.`), whatever the run has done
 * since. A first answer is sent only if `takesMessages` resolves (it throws `RunEndedError` for a
 * workflow that has ended), and checked as `checkAnswer` does. The answers to a workflow go one at
 * a time, from whichever process (a transaction's advisory lock), each recorded once it is sent:
 * of two sent at once, the second sees the first.
 */
export async function sendOnce(
  connection: () => Promise<Pool>,
  workflowId: string,
  answer: DurableAnswer,
  takesMessages: () => Promise<void>,
  send: (answer: DurableAnswer) => Promise<void>,
): Promise<void> {
  // Before anything is read, sent or recorded: what no run could take, whatever it has done.
  checkAnswerShape(answer);
  const digest = digestOf(answer);
  const pool = await connection();
  // Everything on the one connection that holds the lock: waiting for a second one while holding
  // it, answers at once could take every connection of the pool and wait for one another.
  await inTransaction(pool, async (client) => {
    await lockAnswers(client, workflowId);
    const { rows } = await client.query<{ approved: boolean | null; digest: string }>(
      "SELECT approved, digest FROM agent_core_answers WHERE workflow_id = $1 AND tool_call_id = $2 AND kind = $3",
      [workflowId, answer.toolCallId, answer.kind],
    );
    const first = rows[0];
    if (first === undefined) {
      // Under the mailbox's lock: a wait that times out meanwhile sees this answer and takes it,
      // or has closed its mailbox, and the answer is refused (it would never be read).
      await lockOpenMailbox(client, workflowId);
      await takesMessages();
      await checkAnswer(new EventStore(client), workflowId, answer);
      await send(stamped(answer));
      await client.query(
        "INSERT INTO agent_core_answers (workflow_id, tool_call_id, kind, approved, digest) VALUES ($1, $2, $3, $4, $5)",
        [
          workflowId,
          answer.toolCallId,
          answer.kind,
          answer.kind === "approval" ? answer.approved : null,
          digest,
        ],
      );
    } else if (first.digest !== digest) throw answeredBefore(answer, first.approved);
  });
}

/** The calls a run that ended waiting waits for, as its `agent_end` lists them. */
export interface WaitingCalls {
  pendingApprovals: readonly { toolCallId: string }[];
  pendingClientTools: readonly { toolCallId: string }[];
}

/**
 * In the workflow, as a wait for answers times out: says `false` and leaves the mailbox open when
 * an answer waits (the workflow takes it: the batch resumes), or when steering or follow-ups wait,
 * or the agent holds some it took and did not use (`holdsMessages`): they continue the workflow
 * in a run whose prompt settles the calls that waited (denied, or failed). Those calls are then
 * recorded here as answered, so that an answer sent to one of them from now on is refused as a
 * second answer is. Sent on, it would wait for the run's next wait, which would drop it unseen.
 * Else closes the mailbox and says `true`. Under the answers' lock, then the mailbox's (as
 * `sendOnce` takes them): an answer is either sent before (and found waiting) or sees the calls
 * answered, or the mailbox closed.
 */
export function endWait(
  pool: Pool,
  workflowId: string,
  waiting: WaitingCalls,
  holdsMessages: boolean,
): Promise<boolean> {
  return inTransaction(pool, async (client) => {
    await lockAnswers(client, workflowId);
    await lockMailbox(client, workflowId);
    if (await messagesWaitingIn(client, workflowId, [ANSWERS])) return false;
    if (!holdsMessages && !(await messagesWaitingIn(client, workflowId, [MESSAGES]))) {
      await markClosed(client, workflowId);
      return true;
    }
    // As the run's new prompt settles them: an approval denied; every call of the batch (one an
    // approval held back too) given its result.
    const approvals = waiting.pendingApprovals.map((call) => call.toolCallId);
    const results = [...approvals, ...waiting.pendingClientTools.map((call) => call.toolCallId)];
    await client.query(
      `INSERT INTO agent_core_answers (workflow_id, tool_call_id, kind, approved, digest)
       SELECT $1, id, 'approval', false, $4 FROM unnest($2::text[]) AS id
       UNION ALL SELECT $1, id, 'tool-result', NULL, $4 FROM unnest($3::text[]) AS id
       ON CONFLICT DO NOTHING`,
      [workflowId, approvals, results, SETTLED],
    );
    return false;
  });
}

/** The digest of a call settled by the conversation going on: no answer's (those are base64url). */
const SETTLED = "settled: the conversation went on";

/** The lock a workflow's answers are sent under, held until the transaction ends. */
function lockAnswers(client: PoolClient, workflowId: string): Promise<unknown> {
  return client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`agent-core.answers:${workflowId}`]);
}

/**
 * What tells two answers to a call apart, leaving out when each was sent. One that JSON cannot
 * write matches no other.
 */
function digestOf(answer: CallAnswer): string {
  const { sentAt: _, ...content } = answer;
  try {
    return createHash("sha256").update(canonicalJson(content)).digest("base64url");
  } catch {
    // A BigInt, or a cycle (the stack overflows).
    return randomUUID();
  }
}

function answeredBefore(answer: CallAnswer, approved: boolean | null): Error {
  if (answer.kind === "tool-result")
    return new ClientToolError(`Client tool call "${answer.toolCallId}" already has its result.`);
  return new InvalidConfigError(
    `Tool call "${answer.toolCallId}" was already ${approved ? "approved" : "denied"}.`,
  );
}
