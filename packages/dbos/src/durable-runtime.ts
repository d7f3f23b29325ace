import { randomUUID } from "node:crypto";
import {
  type Agent,
  AgentError,
  type AgentEvent,
  type AgentMessage,
  type AgentRun,
  CLOCK,
  EVENT_SINK,
  ID_SOURCE,
  InvalidConfigError,
  MODEL_STEP,
  type StopReason,
  TOOL_RUNNER,
} from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import {
  ANSWERS,
  CANCEL_CHANNEL,
  cancelRun,
  type DurableAnswer,
  MESSAGES,
  messageFor,
  receiveMessages,
  stamped,
} from "./durable-messages.js";
import { durableModelStep, durableToolRunner, RecordedClock } from "./durable-services.js";
import { EventStore } from "./event-store.js";

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
   * `workerConcurrency` runs at once per process, `globalConcurrency` across all of them.
   */
  queue?: { name?: string; workerConcurrency?: number; globalConcurrency?: number };
  /**
   * This worker's id (default "local", or `DBOS__VMID`). With several workers give each its own,
   * stable across restarts: a worker that launches resumes the runs a dead worker with its id left
   * (and never those of a worker still running).
   */
  executorId?: string;
  /** How long a run that waits for an approval or a client tool result waits (default 24 h). */
  answerTimeoutMs?: number;
}

/** The DBOS name of the workflow a durable run is, for starting runs from a `DBOSClient`. */
export const RUN_WORKFLOW = "agent-core.run";
const DEFAULT_QUEUE = "agent-core.runs";

/** How a durable run ended: what `run.result()` gives in process, minus what does not serialize. */
export interface DurableRunResult {
  /** The run that ended it: the workflow's id, or `<id>.2`, `.3`, … after each wait. */
  runId: string;
  /** Every run of the workflow, in order: the prompt's, then one per resumption. */
  runIds: string[];
  stopReason: StopReason;
  text: string;
  messages: AgentMessage[];
}

/** A durable run, wherever it runs now. */
export interface DurableRun {
  readonly runId: string;
  /** Resolves when the run ends, in this process or another one that resumed it. */
  result(): Promise<DurableRunResult>;
}

/**
 * Runs agents as DBOS workflows: every model call and every tool call is a recorded step, so a
 * run whose process dies resumes in the next process that launches (DBOS recovers it), without
 * calling the model again for what was recorded or running a recorded tool call again, and its
 * events go on with the next seq in the durable event log. No orchestrator changes: the runtime
 * only registers its own services in each agent's container. One per process (DBOS is).
 */
export class DurableRuntime {
  readonly #options: DurableRuntimeOptions;
  readonly #pool: pg.Pool;
  readonly #store: EventStore;
  readonly #workflow: (agentName: string, prompt: string) => Promise<DurableRunResult>;
  readonly #answerTimeoutSec: number;
  readonly #localWorkflow: (key: string) => Promise<DurableRunResult>;
  /** The agents of the runs executing in this process, by workflow id: what a cancel aborts. */
  readonly #executing = new Map<string, Agent>();
  #cancelListener: pg.Client | undefined;
  /** Agents made in this process and handed to `prompt()`, until their workflow takes them. */
  readonly #local = new Map<string, { agent: Agent; input: string; started: (run: AgentRun) => void }>();

  constructor(options: DurableRuntimeOptions) {
    if (typeof options.databaseUrl !== "string" || !/^postgres(ql)?:\/\//.test(options.databaseUrl))
      throw new InvalidConfigError(
        `databaseUrl must be a postgres:// URL, got ${JSON.stringify(options.databaseUrl)}.`,
      );
    this.#options = options;
    this.#pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4 });
    this.#store = new EventStore(this.#pool);
    this.#answerTimeoutSec = (options.answerTimeoutMs ?? 86_400_000) / 1000;
    this.#workflow = DBOS.registerWorkflow(
      (agentName: string, prompt: string) => this.#run(agentName, prompt),
      { name: RUN_WORKFLOW },
    );
    this.#localWorkflow = DBOS.registerWorkflow((key: string) => this.#runLocal(key), {
      name: "agent-core.local-run",
    });
  }

  /** Connects, creates what is missing, and resumes the runs a crashed process left. */
  async launch(): Promise<void> {
    DBOS.setConfig({
      name: this.#options.name ?? "agent-core",
      systemDatabaseUrl: this.#options.databaseUrl,
      logLevel: "warn",
      ...(this.#options.executorId === undefined ? {} : { executorID: this.#options.executorId }),
    });
    await DBOS.launch();
    await this.#store.createTable();
    // A cancelled run stops at once in the worker that runs it (and later through its messages
    // when none does).
    this.#cancelListener = new pg.Client({ connectionString: this.#options.databaseUrl });
    await this.#cancelListener.connect();
    this.#cancelListener.on("notification", ({ payload }) => {
      if (payload !== undefined) this.#executing.get(payload)?.abort(CANCELLED);
    });
    this.#cancelListener.on("error", () => {});
    await this.#cancelListener.query(`LISTEN ${CANCEL_CHANNEL}`);
    const queue = this.#options.queue;
    if (queue)
      await DBOS.registerQueue(queue.name ?? DEFAULT_QUEUE, {
        workerConcurrency: queue.workerConcurrency,
        globalConcurrency: queue.globalConcurrency,
        minPollingIntervalMs: 100,
      });
  }

  /**
   * Starts a run of the named agent (through the queue when there is one: any worker may take
   * it); `runId` makes the start idempotent (the same id: the same run).
   */
  async start(agentName: string, prompt: string, options: { runId?: string } = {}): Promise<DurableRun> {
    if (!(agentName in this.#options.agents))
      throw new InvalidConfigError(
        `No agent "${agentName}"; registered: ${Object.keys(this.#options.agents).join(", ") || "none"}.`,
      );
    const queue = this.#options.queue;
    const handle = await DBOS.startWorkflow(this.#workflow, {
      ...(options.runId ? { workflowID: options.runId } : {}),
      ...(queue ? { queueName: queue.name ?? DEFAULT_QUEUE } : {}),
    })(agentName, prompt);
    // Its handle: a run that executes here resolves without polling the database.
    return { runId: handle.workflowID, result: () => handle.getResult() };
  }

  /** A run started by any process. */
  retrieve(runId: string): DurableRun {
    return { runId, result: () => DBOS.retrieveWorkflow<DurableRunResult>(runId).getResult() };
  }

  /** The run's events stored so far after `after` (default: all), in seq order. */
  events(runId: string, after?: number): Promise<AgentEvent[]> {
    return this.#store.read(runId, after);
  }

  /**
   * Answers a run that waits (`awaiting_approval` or `awaiting_client_tool`): a durable message,
   * delivered to the run wherever it executes, even after its worker died.
   */
  answer(workflowId: string, answer: DurableAnswer): Promise<void> {
    return DBOS.send(workflowId, stamped(answer), ANSWERS);
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
   * aborted); a run that waits for an answer ends there.
   */
  cancel(workflowId: string): Promise<void> {
    return cancelRun(
      workflowId,
      (channel, payload) => this.#pool.query("SELECT pg_notify($1, $2)", [channel, payload]),
      (message, topic) => DBOS.send(workflowId, message, topic),
    );
  }

  async #message(workflowId: string, queue: "steer" | "followUp", content: string): Promise<void> {
    const status = await DBOS.getWorkflowStatus(workflowId);
    await DBOS.send(workflowId, messageFor(workflowId, status?.status, queue, content), MESSAGES);
  }

  async shutdown(): Promise<void> {
    await DBOS.shutdown();
    await this.#cancelListener?.end().catch(() => {});
    await this.#pool.end();
  }

  /**
   * Runs an agent made in this process as a durable workflow: its model and tool calls are
   * recorded steps and its events go to the durable log, as for a registered agent, but only this
   * process can finish it (the agent lives here); for runs another worker can resume, `start()` a
   * registered agent. The run is returned as the agent's own, to abort, steer and read in process.
   */
  async prompt(agent: Agent, input: string): Promise<AgentRun> {
    const key = randomUUID();
    let started!: (run: AgentRun) => void;
    const run = new Promise<AgentRun>((resolve) => {
      started = resolve;
    });
    this.#local.set(key, { agent, input, started });
    await DBOS.startWorkflow(this.#localWorkflow)(key);
    return run;
  }

  async #run(agentName: string, prompt: string): Promise<DurableRunResult> {
    const make = this.#options.agents[agentName];
    if (make === undefined) throw new InvalidConfigError(`No agent "${agentName}" in this process.`);
    return this.#durably(make(), prompt);
  }

  async #runLocal(key: string): Promise<DurableRunResult> {
    const local = this.#local.get(key);
    if (local === undefined)
      throw new InvalidConfigError("This run's agent lived in a process that has ended.");
    this.#local.delete(key);
    return this.#durably(local.agent, local.input, local.started);
  }

  /**
   * Whether a steering message or follow-up waits for the workflow: a read of DBOS's notifications
   * table (its system tables are documented). Should it fail, the answer is yes: a receive finds
   * out, at the cost of its round trips.
   */
  async #messagesWaiting(workflowId: string): Promise<boolean> {
    try {
      const { rows } = await this.#pool.query(
        "SELECT EXISTS (SELECT 1 FROM dbos.notifications WHERE destination_uuid = $1 AND topic = $2 AND NOT consumed) AS waiting",
        [workflowId, MESSAGES],
      );
      return rows[0]?.waiting === true;
    } catch {
      return true;
    }
  }

  /** Runs the prompt with the agent's services made durable, through every wait, to its end. */
  async #durably(agent: Agent, prompt: string, started?: (run: AgentRun) => void): Promise<DurableRunResult> {
    const workflowId = DBOS.workflowID as string;
    const clock = new RecordedClock(await checkOrchestrator(agent));
    const { container } = agent;
    // Registered on the agent's own container before its first prompt, when it resolves them.
    container.registerInstance(CLOCK, clock);
    // Model calls are one at a time, in the same order on replay: the point where steering and
    // follow-ups sent meanwhile are received without breaking determinism. The step records
    // whether any waits (one read), and only then are they received (recorded receives).
    const inbox = {
      waiting: () => this.#messagesWaiting(workflowId),
      receive: async () => {
        for (const received of await receiveMessages(clock))
          if (received.queue === "cancel") agent.abort(CANCELLED);
          else agent[received.queue](received.message);
      },
    };
    container.registerInstance(MODEL_STEP, durableModelStep(container.resolve(MODEL_STEP), { clock, inbox }));
    container.registerInstance(TOOL_RUNNER, durableToolRunner(container.resolve(TOOL_RUNNER), { clock }));
    // The prompt's run is the workflow; each resumption after a wait is a run of its own.
    const runIds: string[] = [];
    container.registerInstance(ID_SOURCE, {
      runId: () => {
        runIds.push(runIds.length === 0 ? workflowId : `${workflowId}.${runIds.length + 1}`);
        return runIds.at(-1) as string;
      },
    });
    container.registerInstance(EVENT_SINK, this.#store.sink());
    // Client tools suspend the run (a wait is a durable message, not a process holding on).
    this.#executing.set(workflowId, agent);
    try {
      return await this.#runToEnd(agent, prompt, clock, runIds, started);
    } finally {
      this.#executing.delete(workflowId);
    }
  }

  /** The prompt's run, and each that resumes it after a wait or continues it with late messages. */
  async #runToEnd(
    agent: Agent,
    prompt: string,
    clock: RecordedClock,
    runIds: string[],
    started: ((run: AgentRun) => void) | undefined,
  ): Promise<DurableRunResult> {
    const run = agent.prompt(prompt, { clientTools: "suspend" });
    started?.(run);
    let result = await run.result();
    for (;;) {
      if (result.stopReason === "awaiting_approval" || result.stopReason === "awaiting_client_tool") {
        await this.#store.flush();
        const answer = await DBOS.recv<DurableAnswer>(ANSWERS, this.#answerTimeoutSec);
        if (answer === null || answer.kind === "cancel") break;
        if (answer.sentAt !== undefined) clock.passed(answer.sentAt);
        const resumed = deliver(agent, answer);
        if (resumed !== undefined) result = await resumed.result();
        continue;
      }
      if (result.stopReason !== "completed") break;
      // Received and not used (an orchestrator that did not ask for them), or sent after the last
      // model call: they continue the conversation in a run of their own.
      const late = await receiveMessages(clock);
      if (late.some((received) => received.queue === "cancel")) break;
      const left = agent.takeQueued();
      const input = [...left.steering, ...left.followUps];
      for (const received of late) if (received.queue !== "cancel") input.push(received.message);
      if (input.length === 0) break;
      result = await agent.prompt(input, { clientTools: "suspend" }).result();
    }
    await this.#store.flush();
    return {
      runId: result.runId,
      runIds,
      stopReason: result.stopReason,
      text: result.text,
      messages: result.messages,
    };
  }
}

const CANCELLED = new Error("the durable run was cancelled");

/**
 * Hands an answer to the agent: the run that resumes once every waiting call is answered, or
 * undefined. An answer for no waiting call is dropped (the same on replay: the same answers
 * arrive in the same order).
 */
function deliver(agent: Agent, answer: Exclude<DurableAnswer, { kind: "cancel" }>): AgentRun | undefined {
  try {
    if (answer.kind === "tool-result") return agent.submitToolResult(answer.toolCallId, answer.outcome);
    return answer.approved ? agent.approve(answer.toolCallId) : agent.deny(answer.toolCallId, answer.reason);
  } catch {
    return undefined;
  }
}

/**
 * Records the orchestrator a run starts with and when (a step: a resumed run reads the record, and
 * its clock starts there) and refuses to go on with another orchestrator: a changed loop could
 * take another path through the recorded steps.
 */
async function checkOrchestrator(agent: Agent): Promise<number> {
  const current = `${agent.orchestrator.name}@${agent.orchestrator.version ?? "unversioned"}`;
  const started = await DBOS.runStep(async () => ({ orchestrator: current, at: Date.now() }), {
    name: "agent-core.orchestrator",
  });
  if (started.orchestrator !== current) throw new OrchestratorVersionError(started.orchestrator, current);
  return started.at;
}

/** A durable run resumed by a process whose orchestrator is not the one the run started with. */
export class OrchestratorVersionError extends AgentError {
  constructor(started: string, current: string) {
    super(
      "orchestrator_version",
      `This run started with orchestrator ${started}; this process has ${current}. Resume it with a worker that still has ${started} (see docs/durable-runs.md, "Upgrading").`,
    );
  }
}
