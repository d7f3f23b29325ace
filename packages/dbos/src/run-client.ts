import { InvalidConfigError, type Logger, refuseUnknownKeys, silentLogger } from "@agent-core/core";
import { DBOSClient } from "@dbos-inc/dbos-sdk";
import type pg from "pg";
import { createAnswersTable, sendOnce } from "./answer-ledger.js";
import { checkDatabaseUrl, checkReachable, connectionPool, createSystemTables } from "./database.js";
import { DatabaseWatch } from "./database-watch.js";
import { dbosLogger } from "./dbos-logger.js";
import {
  ANSWERS,
  cancelRun,
  checkAgentName,
  checkPrompt,
  checkStartOptions,
  checkTakesMessages,
  type DurableAnswer,
  MESSAGES,
  RunEndedError,
  resultOf,
  shown,
  UnknownRunError,
} from "./durable-messages.js";
import type { DurableRunResult } from "./durable-run.js";
import { EventStore } from "./event-store.js";
import { closeMailbox, createMailboxTable, sendMessage } from "./mailbox.js";
import { canNameRun, checkRunId } from "./run-ids.js";
import { RUN_WORKFLOW } from "./run-workflows.js";
import { checkDatabaseTimeout, checkLogger, checkName } from "./runtime-options.js";

/**
 * Starts and follows durable runs from a process that runs none itself (a web server in front of
 * the workers): runs are enqueued on the workers' queue, and whichever worker is free takes each.
 */
export class DurableRunClient {
  readonly #client: DBOSClient;
  readonly #queue: string;
  readonly #databaseUrl: string;
  /** Bounds what the client's callers wait while the database does not answer. */
  readonly #watch: DatabaseWatch;
  /** For the answers (and the event log they are checked against) and `cancel()`'s NOTIFY, made when first needed. */
  #pool: pg.Pool | undefined;
  /**
   * The tables of answers and of closed mailboxes, made at the first answer or message, and the
   * event log an answer is checked against: this client may send before a worker of its version
   * made them.
   */
  #tables: Promise<unknown> | undefined;
  /** The close, once begun: it happens once, and the client's calls are refused from then on. */
  #closed: Promise<void> | undefined;

  private constructor(client: DBOSClient, queue: string, databaseUrl: string, watch: DatabaseWatch) {
    this.#client = client;
    this.#queue = queue;
    this.#databaseUrl = databaseUrl;
    this.#watch = watch;
  }

  /**
   * `databaseTimeoutMs`: how long the client's calls wait on a database that does not answer
   * before they reject with `database_unreachable` (default 30 s), as `DurableRuntime`'s. On a
   * database where no worker has launched yet, it makes DBOS's system tables, as a launch would
   * (see `createSystemTables`): runs started then wait in the queue for the first worker.
   * `logger`: where DBOS's own log lines go, as `DurableRuntime`'s (default: silent).
   */
  static async connect(options: {
    databaseUrl: string;
    name?: string;
    queue?: string;
    databaseTimeoutMs?: number;
    logger?: Logger;
  }): Promise<DurableRunClient> {
    if (typeof options !== "object" || options === null)
      throw new InvalidConfigError(`connect()'s options must be an object, got ${shown(options)}.`);
    refuseUnknownKeys("connect() options", options, [
      "databaseUrl",
      "name",
      "queue",
      "databaseTimeoutMs",
      "logger",
    ]);
    checkDatabaseUrl(options.databaseUrl);
    checkName("name", options.name);
    checkName("queue", options.queue);
    checkDatabaseTimeout(options.databaseTimeoutMs);
    checkLogger(options.logger);
    // On a database where no worker has launched yet, its calls would find no DBOS tables.
    if (!(await checkReachable(options.databaseUrl))) await createSystemTables(options.databaseUrl);
    const client = await DBOSClient.create({
      systemDatabaseUrl: options.databaseUrl,
      applicationName: options.name ?? "agent-core",
      logger: dbosLogger(options.logger ?? silentLogger),
    });
    const watch = new DatabaseWatch(options.databaseUrl, options.databaseTimeoutMs ?? 30_000);
    return new DurableRunClient(client, options.queue ?? "agent-core.runs", options.databaseUrl, watch);
  }

  /**
   * Enqueues a run of the named agent; the same `runId` again is the same run (one that ends in
   * `.<digits>` is refused, see `DurableRuntime.start()`).
   */
  async start(agentName: string, prompt: string, options: { runId?: string } = {}): Promise<string> {
    checkAgentName(agentName);
    checkPrompt(prompt);
    checkStartOptions(options);
    checkRunId(options.runId);
    const handle = await this.#bounded(() =>
      this.#client.enqueue(
        {
          queueName: this.#queue,
          workflowName: RUN_WORKFLOW,
          ...(options.runId ? { workflowID: options.runId } : {}),
        },
        agentName,
        prompt,
      ),
    );
    return handle.workflowID;
  }

  /**
   * Resolves when the run ends, in whichever worker; `UnknownRunError` when none has that id,
   * `RunFailedError` when its workflow failed.
   */
  result(runId: string): Promise<DurableRunResult> {
    return this.#bounded(async () => {
      if (!canNameRun(runId) || !(await this.#client.getWorkflow(runId))) throw new UnknownRunError(runId);
      return resultOf(runId, this.#client.retrieveWorkflow<DurableRunResult>(runId).getResult());
    });
  }

  /**
   * Answers a run that waits for an approval or a client tool result, wherever it executes;
   * `RunEndedError` when its workflow has ended. An answer no run could take is refused before
   * anything is sent, and a second answer to a call unless it is the same one again (see
   * `DurableRuntime.answer()`).
   */
  answer(workflowId: string, answer: DurableAnswer): Promise<void> {
    return this.#bounded(async () => {
      if (!canNameRun(workflowId)) throw new RunEndedError(workflowId);
      return sendOnce(
        () => this.#withTables(),
        workflowId,
        answer,
        async () => checkTakesMessages(workflowId, (await this.#client.getWorkflow(workflowId))?.status),
        (sent) => this.#client.send(workflowId, sent, ANSWERS),
      );
    });
  }

  /** Steers a run wherever it executes (see `DurableRuntime.steer()`). */
  steer(workflowId: string, message: string): Promise<void> {
    return this.#message(workflowId, "steer", message);
  }

  /** Queues a follow-up for a run wherever it executes (see `DurableRuntime.followUp()`). */
  followUp(workflowId: string, message: string): Promise<void> {
    return this.#message(workflowId, "followUp", message);
  }

  /** Cancels a run wherever it executes (see `DurableRuntime.cancel()`). */
  cancel(workflowId: string): Promise<void> {
    return this.#bounded(async () => {
      if (!canNameRun(workflowId)) throw new UnknownRunError(workflowId);
      const pool = this.#connection();
      return cancelRun(
        workflowId,
        (await this.#client.getWorkflow(workflowId))?.status,
        (channel, payload) => pool.query("SELECT pg_notify($1, $2)", [channel, payload]),
        (message, topic) => this.#client.send(workflowId, message, topic),
        async () => closeMailbox(await this.#withTables(), workflowId, []),
      );
    });
  }

  /** The client's own connection (for reading the event log, and cancels' `NOTIFY`). */
  #connection(): pg.Pool {
    this.#pool ??= connectionPool(this.#databaseUrl, 1, { queryTimeoutMs: this.#watch.timeoutMs });
    return this.#pool;
  }

  /** The client's connection, once the tables it writes exist. */
  async #withTables(): Promise<pg.Pool> {
    const pool = this.#connection();
    this.#tables ??= Promise.all([
      createAnswersTable(pool),
      createMailboxTable(pool),
      new EventStore(pool).createTable(),
    ]);
    await this.#tables;
    return pool;
  }

  #message(workflowId: string, queue: "steer" | "followUp", content: string): Promise<void> {
    return this.#bounded(async () => {
      if (!canNameRun(workflowId)) throw new RunEndedError(workflowId);
      return sendMessage(
        await this.#withTables(),
        workflowId,
        async () => (await this.#client.getWorkflow(workflowId))?.status,
        queue,
        content,
        (message) => this.#client.send(workflowId, message, MESSAGES),
      );
    });
  }

  /**
   * A call of the client's, bounded by the database's answers (see `DatabaseWatch`); after
   * `close()`, refused (`InvalidConfigError`): its connections are closed.
   */
  async #bounded<T>(call: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new InvalidConfigError("This client has closed.");
    return this.#watch.bounded(call);
  }

  /** Closes the client's connections. Called again, it is the same close. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.#pool?.end();
      await this.#client.destroy();
    })();
    return this.#closed;
  }
}
