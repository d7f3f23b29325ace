import { randomUUID } from "node:crypto";
import { type Agent, AgentError, type AgentRun, errorMessage, InvalidConfigError } from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { failureOf, RunFailedError } from "./durable-messages.js";
import { type DurableRunHost, type DurableRunResult, runDurably } from "./durable-run.js";
import type { EventStore } from "./event-store.js";
import type { DurableRuntimeOptions } from "./runtime-options.js";

/** The DBOS name of the workflow a durable run is, for starting runs from a `DBOSClient`. */
export const RUN_WORKFLOW = "agent-core.run";

/**
 * What the workflows use of the runtime that registers them, read when a workflow runs: the
 * runtime registers them before it makes anything else (a second runtime in the process is
 * refused there), and its store and connections after.
 */
export interface WorkflowsRuntime {
  /** The runtime's options: the agents a run may use, as they are when it starts. */
  readonly options: Pick<DurableRuntimeOptions, "agents">;
  /** What the runs use of the runtime. */
  host(): DurableRunHost;
  /** The durable event log, where the run of a workflow that failed is ended. */
  store(): Pick<EventStore, "endFailedRun">;
  /** Whether the runtime has begun to shut down: a workflow it stopped did not fail. */
  shuttingDown(): boolean;
}

/** An agent made in this process and handed to `prompt()`, until its workflow takes it. */
interface LocalAgent {
  agent: Agent;
  input: string;
  started: (run: AgentRun) => void;
}

/**
 * The DBOS workflows a durable run is, registered by name (the names, and the source of the
 * functions registered, are what DBOS recovers runs by: see `RUN_WORKFLOW`): one for a run of a
 * registered agent, which any worker can resume, and one for a run of an agent made in this process.
 */
export class RunWorkflows {
  /** The workflow of a registered agent's run: `(agentName, prompt)`. */
  readonly registered: (agentName: string, prompt: string) => Promise<DurableRunResult>;
  /** The workflow of a run of an agent made in this process: `(key)` of `handOver()`. */
  readonly local: (key: string) => Promise<DurableRunResult>;
  readonly #runtime: WorkflowsRuntime;
  /** Agents made in this process and handed to `prompt()`, until their workflow takes them. */
  readonly #local = new Map<string, LocalAgent>();

  /** Registers the workflows; a second runtime's in this process are refused (`InvalidConfigError`). */
  constructor(runtime: WorkflowsRuntime) {
    try {
      this.registered = DBOS.registerWorkflow(
        (agentName: string, prompt: string) => this.#failingClearly(() => this.#run(agentName, prompt)),
        { name: RUN_WORKFLOW },
      );
      this.local = DBOS.registerWorkflow((key: string) => this.#failingClearly(() => this.#runLocal(key)), {
        name: "agent-core.local-run",
      });
    } catch (error) {
      // DBOS's registry is the process's: a second runtime's workflows would be the first's names.
      throw new InvalidConfigError(
        `A DurableRuntime was made in this process already, and there is one per process (DBOS is): ${errorMessage(error).split("\n")[0]}`,
      );
    }
    this.#runtime = runtime;
  }

  /**
   * Leaves an agent made in this process for the `local` workflow to take, under the key it is
   * started with; `run` resolves with the agent's run once the workflow has begun it.
   */
  handOver(agent: Agent, input: string): { key: string; run: Promise<AgentRun> } {
    const key = randomUUID();
    let started!: (run: AgentRun) => void;
    const run = new Promise<AgentRun>((resolve) => {
      started = resolve;
    });
    this.#local.set(key, { agent, input, started });
    return { key, run };
  }

  /**
   * Takes back an agent handed over for a workflow that did not start (`prompt()` rejected): it
   * must not stay in this process, and a workflow DBOS starts for it late finds no agent to run.
   */
  withdraw(key: string): void {
    this.#local.delete(key);
  }

  /**
   * The body of a workflow, failing with a `RunFailedError` (what every `result()` rejects with)
   * after the run's stored log is ended as a failed run's, so that no stream of it waits forever.
   * DBOS marks the workflow `ERROR` and never runs it again.
   */
  async #failingClearly(body: () => Promise<DurableRunResult>): Promise<DurableRunResult> {
    try {
      return await body();
    } catch (error) {
      // Stopped by this runtime's shutdown (DBOS, then the pool, closed under it), the workflow did
      // not fail: DBOS leaves it pending, and the next worker that launches goes on with its log.
      if (this.#runtime.shuttingDown()) throw error;
      const workflowId = DBOS.workflowID as string;
      const failed =
        error instanceof RunFailedError ? error : new RunFailedError(workflowId, failureOf(error));
      // A log that cannot be written (the database is gone) is left as it is.
      await this.#runtime
        .store()
        .endFailedRun(workflowId, failed.failure)
        .catch(() => {});
      throw failed;
    }
  }

  async #run(agentName: string, prompt: string): Promise<DurableRunResult> {
    const { agents } = this.#runtime.options;
    const make = Object.hasOwn(agents, agentName) ? agents[agentName] : undefined;
    if (make === undefined) throw new InvalidConfigError(`No agent "${agentName}" in this process.`);
    let agent: Agent;
    try {
      agent = make();
    } catch (error) {
      throw new AgentError(
        "agent_factory_failed",
        `The factory of agent "${agentName}" threw: ${errorMessage(error)}`,
      );
    }
    if (typeof (agent as Partial<Agent> | null)?.prompt !== "function")
      throw new AgentError(
        "agent_factory_failed",
        `The factory of agent "${agentName}" made ${describe(agent)}, not an Agent.`,
      );
    return runDurably(agent, prompt, this.#runtime.host());
  }

  async #runLocal(key: string): Promise<DurableRunResult> {
    const local = this.#local.get(key);
    if (local === undefined)
      throw new InvalidConfigError("This run's agent lived in a process that has ended.");
    this.#local.delete(key);
    return runDurably(local.agent, local.input, this.#runtime.host(), local.started);
  }
}

/** What a factory made instead of an agent, for its error: "undefined", "a Promise", "a number". */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value !== "object") return `a ${typeof value}`;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" && name !== "Object" ? `a ${name}` : "an object";
}
