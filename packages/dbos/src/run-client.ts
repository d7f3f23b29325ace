import { DBOSClient } from "@dbos-inc/dbos-sdk";
import {
  ANSWERS,
  type DurableAnswer,
  type DurableMessage,
  MESSAGES,
  messageFor,
  stamped,
} from "./durable-messages.js";
import type { DurableRunResult } from "./durable-runtime.js";
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
    return this.#client.send(workflowId, stamped(answer), ANSWERS);
  }

  /** Steers a run wherever it executes (see `DurableRuntime.steer()`). */
  steer(workflowId: string, message: string): Promise<void> {
    return this.#message(workflowId, "steer", message);
  }

  /** Queues a follow-up for a run wherever it executes (see `DurableRuntime.followUp()`). */
  followUp(workflowId: string, message: string): Promise<void> {
    return this.#message(workflowId, "followUp", message);
  }

  /** Cancels a run: it stops at its next step, wherever it executes. */
  cancel(workflowId: string): Promise<void> {
    return this.#client.cancelWorkflow(workflowId);
  }

  async #message(workflowId: string, queue: DurableMessage["queue"], content: string): Promise<void> {
    const status = await this.#client.getWorkflow(workflowId);
    await this.#client.send(workflowId, messageFor(workflowId, status?.status, queue, content), MESSAGES);
  }

  close(): Promise<void> {
    return this.#client.destroy();
  }
}
