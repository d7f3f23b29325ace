import { InvalidConfigError } from "@agent-core/core";
import type pg from "pg";
import { inTransaction } from "./database.js";
import { type DurableMessage, MESSAGES, messageFor, RunEndedError, shown } from "./durable-messages.js";

/**
 * A durable run's mailbox for steering messages and follow-ups: open while its workflow may still
 * receive them, closed by the workflow as it ends. A message is sent, and a mailbox closed, under
 * one lock of the workflow's, so a message is either sent before the close (and the close sees it
 * waiting: the workflow goes on and receives it) or refused after it (`RunEndedError`). Without
 * the lock a message sent between the workflow's last receive and its end would be taken and
 * never read.
 */

export async function createMailboxTable(pool: Pick<pg.Pool, "query">): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS agent_core_closed_mailboxes (
    workflow_id text PRIMARY KEY,
    closed_at timestamptz NOT NULL DEFAULT now()
  )`);
}

/**
 * Sends a steering message or follow-up with `send` while the workflow's mailbox is open and its
 * status (read by `status`; `undefined`: no such workflow) takes messages; else `RunEndedError`.
 * A message that is not a string is refused before anything is sent (`InvalidConfigError`).
 * Everything on the one connection that holds the lock, the send aside (DBOS sends on its own).
 */
export function sendMessage(
  pool: pg.Pool,
  workflowId: string,
  status: () => Promise<string | undefined>,
  queue: "steer" | "followUp",
  content: string,
  send: (message: DurableMessage) => Promise<void>,
): Promise<void> {
  // Taken, anything else would fail the run that receives it (`agent.steer()` refuses it there).
  if (typeof content !== "string")
    return Promise.reject(
      new InvalidConfigError(
        `A ${queue === "steer" ? "steering message" : "follow-up"} must be a string, got ${shown(content)}.`,
      ),
    );
  return inTransaction(pool, async (client) => {
    await lockOpenMailbox(client, workflowId);
    await send(messageFor(workflowId, await status(), queue, content));
  });
}

/**
 * Takes the workflow's mailbox lock, held until `client`'s transaction ends, and refuses a closed
 * mailbox (`RunEndedError`): what a message is sent under, and an answer too (see `sendOnce`), so
 * that neither reaches a workflow past its last look at what waits for it.
 */
export async function lockOpenMailbox(client: pg.PoolClient, workflowId: string): Promise<void> {
  await lockMailbox(client, workflowId);
  if (await isClosed(client, workflowId)) throw new RunEndedError(workflowId);
}

/**
 * In the workflow, once its run has nothing left to do: closes the mailbox and says so, or, when
 * something sent on one of the `keptOpenBy` topics (a message or a cancel on `MESSAGES`; an answer
 * on `ANSWERS`) waits to be received, leaves it open and says `false` (the workflow then receives
 * it). With no topics it closes whatever waits: a workflow that ends without taking more
 * (cancelled, failed) leaves what was sent before unread.
 */
export function closeMailbox(
  pool: pg.Pool,
  workflowId: string,
  keptOpenBy: readonly string[],
): Promise<boolean> {
  return inTransaction(pool, async (client) => {
    await lockMailbox(client, workflowId);
    if (keptOpenBy.length > 0 && (await messagesWaitingIn(client, workflowId, keptOpenBy))) return false;
    await markClosed(client, workflowId);
    return true;
  });
}

/** Closes the workflow's mailbox, under its lock (`lockMailbox`): what is sent from then on is refused. */
export async function markClosed(client: pg.PoolClient, workflowId: string): Promise<void> {
  await client.query(
    "INSERT INTO agent_core_closed_mailboxes (workflow_id) VALUES ($1) ON CONFLICT DO NOTHING",
    [workflowId],
  );
}

/** The lock a workflow's messages are sent under and its mailbox closed, held until the transaction ends. */
export function lockMailbox(client: pg.PoolClient, workflowId: string): Promise<unknown> {
  return client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`agent-core.mailbox:${workflowId}`]);
}

async function isClosed(client: pg.PoolClient, workflowId: string): Promise<boolean> {
  const { rowCount } = await client.query(
    "SELECT 1 FROM agent_core_closed_mailboxes WHERE workflow_id = $1",
    [workflowId],
  );
  return rowCount === 1;
}

/**
 * Whether anything sent to the workflow on `topics` (default: the messages' topic, a cancel too)
 * is not received yet: a read of DBOS's notifications table (its system tables are documented).
 */
export async function messagesWaitingIn(
  db: Pick<pg.ClientBase, "query">,
  workflowId: string,
  topics: readonly string[] = [MESSAGES],
): Promise<boolean> {
  const { rows } = await db.query(
    "SELECT EXISTS (SELECT 1 FROM dbos.notifications WHERE destination_uuid = $1 AND topic = ANY($2) AND NOT consumed) AS waiting",
    [workflowId, topics],
  );
  return rows[0]?.waiting === true;
}

/**
 * Whether a steering message or follow-up waits for the workflow. Should the read fail, the
 * answer is yes: a receive finds out, at the cost of its round trips.
 */
export async function messagesWaiting(pool: Pick<pg.Pool, "query">, workflowId: string): Promise<boolean> {
  try {
    return await messagesWaitingIn(pool, workflowId);
  } catch {
    return true;
  }
}

/** Whether a cancel waits for the workflow (as `messagesWaiting`, of cancels only). */
export async function cancelWaiting(pool: Pick<pg.Pool, "query">, workflowId: string): Promise<boolean> {
  try {
    const { rows } = await pool.query(
      `SELECT EXISTS (SELECT 1 FROM dbos.notifications WHERE destination_uuid = $1 AND topic = $2
        AND NOT consumed AND message LIKE '%"queue":"cancel"%') AS waiting`,
      [workflowId, MESSAGES],
    );
    return rows[0]?.waiting === true;
  } catch {
    return false;
  }
}
