import {
  type Agent,
  type AgentEvent,
  type AgentMessage,
  EVENT_SINK,
  ID_SOURCE,
  InvalidConfigError,
  MODEL_STEP,
  type StopReason,
  TOOL_RUNNER,
} from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import { durableModelStep, durableToolRunner } from "./durable-services.js";
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
}

/** How a durable run ended: what `run.result()` gives in process, minus what does not serialize. */
export interface DurableRunResult {
  runId: string;
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

const WORKFLOW = "agent-core.run";

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

  constructor(options: DurableRuntimeOptions) {
    if (typeof options.databaseUrl !== "string" || !/^postgres(ql)?:\/\//.test(options.databaseUrl))
      throw new InvalidConfigError(
        `databaseUrl must be a postgres:// URL, got ${JSON.stringify(options.databaseUrl)}.`,
      );
    this.#options = options;
    this.#pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4 });
    this.#store = new EventStore(this.#pool);
    this.#workflow = DBOS.registerWorkflow(
      (agentName: string, prompt: string) => this.#run(agentName, prompt),
      { name: WORKFLOW },
    );
  }

  /** Connects, creates what is missing, and resumes the runs a crashed process left. */
  async launch(): Promise<void> {
    DBOS.setConfig({
      name: this.#options.name ?? "agent-core",
      systemDatabaseUrl: this.#options.databaseUrl,
      logLevel: "warning",
    });
    await DBOS.launch();
    await this.#store.createTable();
  }

  /** Starts a run of the named agent; `runId` makes the start idempotent (the same id: the same run). */
  async start(agentName: string, prompt: string, options: { runId?: string } = {}): Promise<DurableRun> {
    if (!(agentName in this.#options.agents))
      throw new InvalidConfigError(
        `No agent "${agentName}"; registered: ${Object.keys(this.#options.agents).join(", ") || "none"}.`,
      );
    const handle = await DBOS.startWorkflow(
      this.#workflow,
      options.runId ? { workflowID: options.runId } : {},
    )(agentName, prompt);
    return this.retrieve(handle.workflowID);
  }

  /** A run started by any process. */
  retrieve(runId: string): DurableRun {
    return { runId, result: () => DBOS.retrieveWorkflow<DurableRunResult>(runId).getResult() };
  }

  /** The run's events stored so far after `after` (default: all), in seq order. */
  events(runId: string, after?: number): Promise<AgentEvent[]> {
    return this.#store.read(runId, after);
  }

  async shutdown(): Promise<void> {
    await DBOS.shutdown();
    await this.#pool.end();
  }

  async #run(agentName: string, prompt: string): Promise<DurableRunResult> {
    const runId = DBOS.workflowID as string;
    const make = this.#options.agents[agentName];
    if (make === undefined) throw new InvalidConfigError(`No agent "${agentName}" in this process.`);
    const agent = make();
    const { container } = agent;
    // Registered on the agent's own container before its first prompt, when it resolves them.
    container.registerInstance(MODEL_STEP, durableModelStep(container.resolve(MODEL_STEP)));
    container.registerInstance(TOOL_RUNNER, durableToolRunner(container.resolve(TOOL_RUNNER)));
    container.registerInstance(ID_SOURCE, { runId: () => runId });
    container.registerInstance(EVENT_SINK, this.#store.sink());
    const result = await agent.prompt(prompt).result();
    await this.#store.flush();
    return { runId, stopReason: result.stopReason, text: result.text, messages: result.messages };
  }
}
