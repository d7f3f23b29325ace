import {
  type Agent,
  type AgentEvent,
  type AgentRun,
  InvalidConfigError,
  silentLogger,
} from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import type pg from "pg";
import { createAnswersTable, sendOnce } from "./answer-ledger.js";
import { CancelListener } from "./cancel-listener.js";
import { checkReachable, connectionPool } from "./database.js";
import { DatabaseWatch } from "./database-watch.js";
import { dbosLogger } from "./dbos-logger.js";
import {
  ANSWERS,
  cancelRun,
  checkAfter,
  checkAgentName,
  checkPrompt,
  checkStartOptions,
  checkTakesMessages,
  type DurableAnswer,
  MESSAGES,
  RunEndedError,
  resultOf,
  UnknownRunError,
} from "./durable-messages.js";
import type { DurableRunHost, DurableRunResult, ExecutingRun } from "./durable-run.js";
import { EventStore } from "./event-store.js";
import { closeMailbox, createMailboxTable, sendMessage } from "./mailbox.js";
import { canNameRun, checkRunId } from "./run-ids.js";
import { describe, RunWorkflows } from "./run-workflows.js";
import { checkRuntimeOptions, type DurableRuntimeOptions, runtimeAgents } from "./runtime-options.js";

const DEFAULT_QUEUE = "agent-core.runs";

/** A durable run, wherever it runs now. */
export interface DurableRun {
  readonly runId: string;
  /**
   * Resolves when the run ends, in this process or another one that resumed it; rejects with
   * `RunFailedError` when its workflow failed (its agent could not be made, …), and with an
   * `AgentError` of code `database_unreachable` when the database has not answered for
   * `databaseTimeoutMs` (the run goes on once it is back).
   */
  result(): Promise<DurableRunResult>;
}

/**
 * Runs agents as DBOS workflows: every model call and every tool call is a recorded step, so a
 * run whose process dies resumes in the next process that launches (DBOS recovers it), without
 * calling the model again for what was recorded or running a recorded tool call again, and its
 * events go on with the next seq in the durable event log. No orchestrator changes: the runtime
 * only registers its own services in each agent's container. One per process (DBOS is).
 * Options no runtime could use are refused by the constructor (`InvalidConfigError`), before
 * anything is made.
 */
export class DurableRuntime {
  readonly #options: DurableRuntimeOptions;
  readonly #pool: pg.Pool;
  readonly #store: EventStore;
  /** Bounds what the runtime's callers wait while the database does not answer. */
  readonly #watch: DatabaseWatch;
  /** The workflows the runs are, registered in DBOS. */
  readonly #workflows: RunWorkflows;
  /** The runs executing in this process, by workflow id: what a cancel aborts. */
  readonly #executing = new Map<string, ExecutingRun>();
  /** What the runs executing in this process use of the runtime. */
  readonly #host: DurableRunHost;
  /** Where the cancels of the runs executing here reach them. */
  readonly #cancels: CancelListener;
  /** The launch, once begun; `undefined` again after one that failed (nothing is left of it). */
  #launched: Promise<void> | undefined;
  /** The shutdown, once begun: it happens once, and the runtime does not launch again. */
  #shutDown: Promise<void> | undefined;

  constructor(options: DurableRuntimeOptions) {
    checkRuntimeOptions(options);
    runtimeAgents.set(this, options.agents);
    // First: a second runtime in this process is refused before anything is made.
    this.#workflows = new RunWorkflows({
      options,
      host: () => this.#host,
      store: () => this.#store,
      shuttingDown: () => this.#shutDown !== undefined,
    });
    this.#options = options;
    this.#watch = new DatabaseWatch(options.databaseUrl, options.databaseTimeoutMs ?? 30_000);
    this.#pool = connectionPool(options.databaseUrl, 4, { queryTimeoutMs: this.#watch.timeoutMs });
    this.#store = new EventStore(this.#pool);
    this.#cancels = new CancelListener(options.databaseUrl, this.#pool, this.#executing);
    this.#host = {
      store: this.#store,
      pool: this.#pool,
      answerTimeoutMs: options.answerTimeoutMs ?? 86_400_000,
      executing: this.#executing,
    };
  }

  /**
   * Connects, creates what is missing, and resumes the runs a crashed process left. Called again,
   * it is the same launch (after one that failed, a new one: a launch that fails leaves nothing
   * running). A runtime that has shut down does not launch again (`InvalidConfigError`).
   */
  launch(): Promise<void> {
    if (this.#shutDown)
      return Promise.reject(new InvalidConfigError("This runtime has shut down: it does not launch again."));
    this.#launched ??= this.#launch().catch((error) => {
      this.#launched = undefined;
      throw error;
    });
    return this.#launched;
  }

  async #launch(): Promise<void> {
    DBOS.setConfig({
      name: this.#options.name ?? "agent-core",
      systemDatabaseUrl: this.#options.databaseUrl,
      logger: dbosLogger(this.#options.logger ?? silentLogger),
      ...(this.#options.executorId === undefined ? {} : { executorID: this.#options.executorId }),
    });
    // Out of reach, it fails here with a clear error, before DBOS holds anything open.
    await checkReachable(this.#options.databaseUrl, { missingIsFine: true });
    await DBOS.launch();
    try {
      await this.#store.createTable();
      await createAnswersTable(this.#pool);
      await createMailboxTable(this.#pool);
      const queue = this.#options.queue;
      if (queue)
        await DBOS.registerQueue(queue.name ?? DEFAULT_QUEUE, {
          workerConcurrency: queue.workerConcurrency,
          globalConcurrency: queue.globalConcurrency,
          minPollingIntervalMs: 100,
        });
      // A cancelled run stops at once in the worker that runs it (and later through its messages
      // when none does). Last: a listen that fails holds nothing, one that succeeded needs no undoing.
      await this.#cancels.listen();
    } catch (error) {
      // Launched halfway (a role that may not create the tables, say), DBOS would run the runs it
      // recovered without their tables, and hold the process open for ever.
      await DBOS.shutdown();
      throw error;
    }
  }

  /**
   * Throws `InvalidConfigError` unless the runtime has launched (waiting for a launch under way):
   * DBOS runs nothing before its launch, and the runtime's connections are closed after its shutdown.
   */
  async #ready(): Promise<void> {
    if (this.#shutDown) throw new InvalidConfigError("This runtime has shut down.");
    if (this.#launched === undefined)
      throw new InvalidConfigError("This runtime has not launched: await runtime.launch() first.");
    await this.#launched;
  }

  /**
   * A workflow's result (see `resultOf`). One this runtime's shutdown interrupted did not fail: the
   * next worker that launches goes on with the run (`retrieve(runId).result()` there).
   */
  async #resultOf(runId: string, result: Promise<DurableRunResult>): Promise<DurableRunResult> {
    try {
      return await resultOf(runId, result);
    } catch (error) {
      if (this.#shutDown === undefined) throw error;
      throw new InvalidConfigError(
        `This runtime shut down before run "${runId}" ended: the next worker that launches goes on with it.`,
      );
    }
  }

  /** A call of the runtime's: once it has launched, bounded by the database's answers (see `DatabaseWatch`). */
  async #bounded<T>(call: () => Promise<T>): Promise<T> {
    await this.#ready();
    return this.#watch.bounded(call);
  }

  /**
   * Starts a run of the named agent (through the queue when there is one: any worker may take
   * it); `runId` makes the start idempotent (the same id: the same run). A `runId` must be a
   * non-empty string that does not end in `.<digits>` (`InvalidConfigError`): the form of a
   * workflow's later runs, `<runId>.2`, …; the prompt a string.
   */
  async start(agentName: string, prompt: string, options: { runId?: string } = {}): Promise<DurableRun> {
    checkAgentName(agentName);
    checkPrompt(prompt);
    checkStartOptions(options);
    checkRunId(options.runId);
    // Its own: "constructor", "toString", "__proto__", … are no agents of `agents`, though `in` finds them.
    if (!Object.hasOwn(this.#options.agents, agentName))
      throw new InvalidConfigError(
        `No agent "${agentName}"; registered: ${Object.keys(this.#options.agents).join(", ") || "none"}.`,
      );
    const queue = this.#options.queue;
    const handle = await this.#bounded(() =>
      DBOS.startWorkflow(this.#workflows.registered, {
        ...(options.runId ? { workflowID: options.runId } : {}),
        ...(queue ? { queueName: queue.name ?? DEFAULT_QUEUE } : {}),
      })(agentName, prompt),
    );
    // Its handle: a run that executes here resolves without polling the database.
    return {
      runId: handle.workflowID,
      result: () => this.#bounded(() => this.#resultOf(handle.workflowID, handle.getResult())),
    };
  }

  /**
   * A run started by any process; its `result()` rejects with `UnknownRunError` when none has that
   * id, and with `RunFailedError` when its workflow failed.
   */
  retrieve(runId: string): DurableRun {
    return {
      runId,
      result: () =>
        this.#bounded(async () => {
          // DBOS would wait for a workflow that may yet start with that id: forever, for a typo.
          if (!canNameRun(runId) || !(await DBOS.getWorkflowStatus(runId))) throw new UnknownRunError(runId);
          return this.#resultOf(runId, DBOS.retrieveWorkflow<DurableRunResult>(runId).getResult());
        }),
    };
  }

  /**
   * The run's events stored so far after the seq `after` (default: all), in seq order; an `after`
   * that is no whole number from -1 is refused (`InvalidConfigError`).
   */
  async events(runId: string, after?: number): Promise<AgentEvent[]> {
    checkAfter(after);
    return this.#bounded(async () => (canNameRun(runId) ? this.#store.read(runId, after) : []));
  }

  /**
   * Answers a run that waits (`awaiting_approval` or `awaiting_client_tool`): a durable message,
   * delivered to the run wherever it executes, even after its worker died. Refuses an answer no run
   * could take before anything is sent (`InvalidConfigError`, for a client tool's result
   * `ClientToolError`: a `kind` other than "approval" or "tool-result", a `toolCallId` that is not
   * a non-empty string, an `approved` that is not a boolean, …; see `checkAnswerShape`). Throws
   * `RunEndedError` when the workflow has ended (its wait timed out, it was cancelled), and refuses
   * a second answer to a call unless it is the same one again, which is taken as sent even after
   * the workflow ended (see `sendOnce`).
   */
  answer(workflowId: string, answer: DurableAnswer): Promise<void> {
    return this.#bounded(async () => {
      if (!canNameRun(workflowId)) throw new RunEndedError(workflowId);
      return sendOnce(
        async () => this.#pool,
        workflowId,
        answer,
        async () => checkTakesMessages(workflowId, (await DBOS.getWorkflowStatus(workflowId))?.status),
        (sent) => DBOS.send(workflowId, sent, ANSWERS),
      );
    });
  }

  /**
   * Steers a durable run (see `agent.steer()`), wherever it executes: a durable message the run
   * takes before its next model call and delivers at the boundary after it. Throws
   * `RunEndedError` when the workflow has ended.
   */
  steer(workflowId: string, message: string): Promise<void> {
    return this.#message(workflowId, "steer", message);
  }

  /** Queues a follow-up for a durable run (see `agent.followUp()`), like `steer()`. */
  followUp(workflowId: string, message: string): Promise<void> {
    return this.#message(workflowId, "followUp", message);
  }

  /**
   * Cancels a run wherever it executes: it ends as `aborted` (a tool running gets its signal
   * aborted); a run that waits for an answer ends there. A run whose workflow has ended is left as
   * it ended; an id no workflow has is refused with `UnknownRunError`.
   */
  cancel(workflowId: string): Promise<void> {
    return this.#bounded(async () => {
      if (!canNameRun(workflowId)) throw new UnknownRunError(workflowId);
      return cancelRun(
        workflowId,
        (await DBOS.getWorkflowStatus(workflowId))?.status,
        (channel, payload) => this.#pool.query("SELECT pg_notify($1, $2)", [channel, payload]),
        (message, topic) => DBOS.send(workflowId, message, topic),
        () => closeMailbox(this.#pool, workflowId, []),
      );
    });
  }

  #message(workflowId: string, queue: "steer" | "followUp", content: string): Promise<void> {
    return this.#bounded(async () => {
      if (!canNameRun(workflowId)) throw new RunEndedError(workflowId);
      return sendMessage(
        this.#pool,
        workflowId,
        async () => (await DBOS.getWorkflowStatus(workflowId))?.status,
        queue,
        content,
        (message) => DBOS.send(workflowId, message, MESSAGES),
      );
    });
  }

  /**
   * Stops the runtime: its runs stop where they are (the next worker that launches recovers them)
   * and its connections close. Called again, it is the same shutdown.
   */
  shutdown(): Promise<void> {
    // The runs executing here stop as in a crash: nothing they publish from now on is stored.
    this.#store.stop();
    this.#shutDown ??= this.#shutdown();
    return this.#shutDown;
  }

  async #shutdown(): Promise<void> {
    // A launch under way ends first: DBOS would launch after its shutdown, and hold the process open.
    await this.#launched?.catch(() => {});
    this.#cancels.closing();
    await DBOS.shutdown();
    await this.#cancels.close();
    await this.#pool.end();
  }

  /**
   * Runs an agent made in this process as a durable workflow: its model and tool calls are
   * recorded steps and its events go to the durable log, as for a registered agent, but only this
   * process can finish it (the agent lives here); for runs another worker can resume, `start()` a
   * registered agent. The run is returned as the agent's own, to abort, steer and read in process.
   * Anything else than an `Agent`, and an input that is not a string, are refused before a
   * workflow starts (`InvalidConfigError`).
   */
  async prompt(agent: Agent, input: string): Promise<AgentRun> {
    if (typeof (agent as Partial<Agent> | null)?.prompt !== "function")
      throw new InvalidConfigError(`runtime.prompt() takes an Agent, got ${describe(agent)}.`);
    // As start() refuses it: taken, the workflow would fail on it (a RunFailedError, recorded).
    checkPrompt(input);
    const { key, run } = this.#workflows.handOver(agent, input);
    const handle = await this.#bounded(() => DBOS.startWorkflow(this.#workflows.local)(key)).catch(
      (error: unknown) => {
        // Not launched, shut down, or the database did not answer: the caller has no run to
        // follow, so the runtime keeps nothing of it (each refused call would leave its agent here).
        this.#workflows.withdraw(key);
        throw error;
      },
    );
    // A workflow that fails before the run begins (an agent that has run before) rejects.
    return Promise.race([run, resultOf(handle.workflowID, handle.getResult()).then(() => run)]);
  }
}
