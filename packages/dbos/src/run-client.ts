import { DBOSClient } from "@dbos-inc/dbos-sdk";
import type { DurableAnswer, DurableRunResult } from "./durable-runtime.js";
import { RUN_WORKFLOW } from "./durable-runtime.js";

/**
 * Starts and follows durable runs from a process that runs none itself (a web server in front of
 * the workers): runs are enqueued on the workers' queue, and whichever worker is free takes each.
 */
export class DurableRunClient {
  readonly #client: DBOSClient;
  readonly #queue: string;

  private constructor(client: DBOSClient, queue: string) {
    this.#client = client;
    this.#queue = queue;
  }

  static async connect(options: {
    databaseUrl: string;
    name?: string;
    queue?: string;
  }): Promise<DurableRunClient> {
    const client = await DBOSClient.create({
      systemDatabaseUrl: options.databaseUrl,
      applicationName: options.name ?? "agent-core",
    });
    return new DurableRunClient(client, options.queue ?? "agent-core.runs");
  }

  /** Enqueues a run of the named agent; the same `runId` again is the same run. */
  async start(agentName: string, prompt: string, options: { runId?: string } = {}): Promise<string> {
    const handle = await this.#client.enqueue(
      {
        queueName: this.#queue,
        workflowName: RUN_WORKFLOW,
        ...(options.runId ? { workflowID: options.runId } : {}),
      },
      agentName,
      prompt,
    );
    return handle.workflowID;
  }

  /** Resolves when the run ends, in whichever worker. */
  result(runId: string): Promise<DurableRunResult> {
    return this.#client.retrieveWorkflow<DurableRunResult>(runId).getResult();
  }

  /** Answers a run that waits for an approval or a client tool result, wherever it executes. */
  answer(workflowId: string, answer: DurableAnswer): Promise<void> {
    return this.#client.send(workflowId, answer, "agent-core.answer");
  }

  close(): Promise<void> {
    return this.#client.destroy();
  }
}
