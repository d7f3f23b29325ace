import {
  type Agent,
  type AgentMessage,
  type AgentRun,
  CLOCK,
  EVENT_SINK,
  ID_SOURCE,
  InvalidConfigError,
  MODEL_STEP,
  type StopReason,
  TimeoutError,
  TOOL_RUNNER,
} from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { Pool } from "pg";
import { endWait } from "./answer-ledger.js";
import { isConnectionError } from "./database.js";
import { ANSWERS, type DurableAnswer, MESSAGES, receiveMessages } from "./durable-messages.js";
import {
  durableModelStep,
  durableToolRunner,
  type RecordedAbort,
  RecordedClock,
} from "./durable-services.js";
import type { EventStore } from "./event-store.js";
import { cancelWaiting, closeMailbox, messagesWaiting } from "./mailbox.js";
import { checkOrchestrator } from "./orchestrator-record.js";
import { ReplayOrder } from "./replay-order.js";
import { RunDeadline } from "./run-deadline.js";

/**
 * The body of a durable run's workflow: what executes inside `DBOS.registerWorkflow`, in this
 * process or, after a crash, in the one that resumes it. Its steps, their names and their order
 * are what DBOS recorded: a change here is a change to every recorded run's replay.
 */

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

/** What a durable run uses of the runtime that executes it. */
export interface DurableRunHost {
  /** The durable event log the run's events go to. */
  readonly store: Pick<EventStore, "sink" | "flush" | "read">;
  /** Reads whether messages wait for the run, and closes its mailbox as it ends. */
  readonly pool: Pool;
  /** How long a run that waits for an approval or a client tool result waits (ms). */
  readonly answerTimeoutMs: number;
  /** The runs executing in this process, by workflow id: what a cancel's `NOTIFY` reaches. */
  readonly executing: Map<string, ExecutingRun>;
}

/** A run executing in this process, as a cancel's `NOTIFY` reaches it. */
export interface ExecutingRun {
  /**
   * Aborts the run, recorded: the model or tool call it interrupts records it, so a replay aborts
   * at the same point. While the run replays what it recorded, nothing happens: aborted there, it
   * would end at another point than its first execution and make other events for the seqs
   * already stored. The cancel's message, stored before its `NOTIFY`, reaches the run at its first
   * live call instead.
   */
  cancel(): void;
}

/** What a cancelled run's agent is aborted with, whether the cancel came as a NOTIFY or a message. */
export const CANCELLED = new Error("the durable run was cancelled");

/**
 * In the workflow: runs the prompt with the agent's services made durable, through every wait, to
 * its end. `started` is handed the prompt's run as soon as it begins.
 */
export async function runDurably(
  agent: Agent,
  prompt: string,
  host: DurableRunHost,
  started?: (run: AgentRun) => void,
): Promise<DurableRunResult> {
  const workflowId = DBOS.workflowID as string;
  // Whether this execution ran a step live (or still replays what an earlier one recorded).
  let executing = false;
  const clock = new RecordedClock(
    await checkOrchestrator(agent, () => {
      executing = true;
    }),
  );
  const { container } = agent;
  // Registered on the agent's own container before its first prompt, when it resolves them.
  container.registerInstance(CLOCK, clock);
  // Model calls are one at a time, in the same order on replay: the point where steering and
  // follow-ups sent meanwhile are received without breaking determinism. The step records
  // whether any waits (one read), and only then are they received (recorded receives).
  let live = false;
  // The abort this execution took live, which every step that ends from then on records.
  let taken: RecordedAbort | undefined;
  const abort = (why: RecordedAbort) => {
    taken ??= why;
    agent.abort(why === "cancel" ? CANCELLED : new TimeoutError("total", why.timeout));
  };
  // The agent's `timeouts.totalMs` is kept here, not in the agent (its runs get none): see `RunDeadline`.
  const deadline = new RunDeadline(agent.timeouts.totalMs, (totalMs) => abort({ timeout: totalMs }));
  const inbox = {
    waiting: () => messagesWaiting(host.pool, workflowId),
    // A cancel sent while no worker ran this run had no one to NOTIFY: it waits as a message.
    firstLive: () => {
      const first = !live;
      live = true;
      executing = true;
      if (first) deadline.live();
      return first;
    },
    expired: () => deadline.expired(),
    cancelWaiting: () => cancelWaiting(host.pool, workflowId),
    taken: () => taken,
    abort,
    receive: async () => {
      for (const received of await receiveMessages(clock))
        if (received.queue === "cancel") abort("cancel");
        else agent[received.queue](received.message);
    },
  };
  container.registerInstance(MODEL_STEP, durableModelStep(container.resolve(MODEL_STEP), { clock, inbox }));
  // A recovered workflow hands the tool results back in the order the log has them.
  const order = executing ? undefined : new ReplayOrder((runId) => loggedResults(host.store, runId));
  container.registerInstance(
    TOOL_RUNNER,
    durableToolRunner(container.resolve(TOOL_RUNNER), { clock, inbox, order }),
  );
  // The prompt's run is the workflow; each resumption after a wait is a run of its own.
  const runIds: string[] = [];
  container.registerInstance(ID_SOURCE, {
    // Called as each run begins: its time limit counts from its recorded start.
    runId: () => {
      // An abort ends the run it was taken in (a timeout's run may be continued by a message).
      taken = undefined;
      deadline.begin(clock.now(), executing);
      runIds.push(runIds.length === 0 ? workflowId : `${workflowId}.${runIds.length + 1}`);
      return runIds.at(-1) as string;
    },
  });
  container.registerInstance(EVENT_SINK, host.store.sink());
  host.executing.set(workflowId, {
    // Not while it replays (see `ExecutingRun.cancel`), nor while it waits: no run takes it then,
    // and the cancel's answer ends the wait.
    cancel: () => {
      if (executing && agent.busy) abort("cancel");
    },
  });
  try {
    return await runToEnd(agent, prompt, host, clock, runIds, deadline, started);
  } finally {
    deadline.end();
    host.executing.delete(workflowId);
  }
}

/** The prompt's run, and each that resumes it after a wait or continues it with late messages. */
async function runToEnd(
  agent: Agent,
  prompt: string,
  host: DurableRunHost,
  clock: RecordedClock,
  runIds: string[],
  deadline: RunDeadline,
  started: ((run: AgentRun) => void) | undefined,
): Promise<DurableRunResult> {
  // Client tools suspend the run (a wait is a durable message, not a process holding on). The
  // agent's `totalMs` is the deadline's (a run resumed after a wait keeps these options).
  const options = { clientTools: "suspend", timeouts: { totalMs: undefined } } as const;
  const ended = async (run: AgentRun) => {
    try {
      return await run.result();
    } finally {
      deadline.end();
    }
  };
  const run = agent.prompt(prompt, options);
  // An agent resolves its services once, at its first prompt: one that ran before runs with the
  // services it had then, none of them this workflow's (its run id tells).
  if (run.runId !== runIds[0]) {
    const error = new InvalidConfigError(
      "This agent has run before, so its runs keep the services of its first: a durable run needs an agent that has never run. Make a new Agent (pass the history as `messages`).",
    );
    run.abort(error);
    throw error;
  }
  started?.(run);
  let result = await ended(run);
  let cancelled = false;
  // Whether the mailbox closed with nothing waiting: else it is closed as the workflow ends.
  let closed = false;
  // When the wait under way ends, on the recorded clock (the same on replay): from the end of the
  // run that waits, whatever comes meanwhile (an answer that leaves calls waiting, or that no call
  // waits for) does not begin it again. DBOS records each receive's own deadline.
  let waitEnds: number | undefined;
  for (;;) {
    if (result.stopReason === "awaiting_approval" || result.stopReason === "awaiting_client_tool") {
      await host.store.flush(runIds);
      waitEnds ??= clock.now() + host.answerTimeoutMs;
      let answer = await DBOS.recv<DurableAnswer>(ANSWERS, Math.max(0, waitEnds - Date.now()) / 1000);
      if (answer === null) {
        // No answer in time. The mailbox closes unless something waits in it: an answer sent as
        // the wait timed out (answers go under the mailbox's lock: one sent after the close is
        // refused) is taken as any answer; steering and follow-ups sent while the run waited (a
        // `steer()` that resolved), or taken by the waiting run and not used, are not left unread
        // either. They go on below as late ones do: a run of their own, whose prompt settles the
        // calls that waited as any new prompt does (and answers to them are refused from then on).
        closed = await endingWait(host.pool, run.runId, agent);
        if (closed) break;
        answer = await DBOS.recv<DurableAnswer>(ANSWERS, 0);
      }
      if (answer !== null) {
        if (answer.kind === "cancel") {
          // Cancelled while it waits: it ends there, as aborted.
          cancelled = true;
          break;
        }
        if (answer.sentAt !== undefined) clock.passed(answer.sentAt);
        const resumed = deliver(agent, answer);
        if (resumed !== undefined) {
          waitEnds = undefined;
          result = await ended(resumed);
        }
        continue;
      }
      // The waiting run took messages and did not use them, or they wait in the mailbox: below.
    }
    // A cancel ends the workflow, with whatever was sent to it.
    if (result.stopReason === "aborted") break;
    // Received and not used (an orchestrator that did not ask for them, a run that failed or ran
    // out of time first), or sent after the last model call: they continue the conversation in a
    // run of their own, whatever the run before ended with. They were taken: they are read.
    const late = await receiveMessages(clock);
    if (late.some((received) => received.queue === "cancel")) break;
    const left = agent.takeQueued();
    const input = [...left.steering, ...left.followUps];
    for (const received of late) if (received.queue !== "cancel") input.push(received.message);
    if (input.length > 0) {
      waitEnds = undefined;
      result = await ended(agent.prompt(input, options));
      continue;
    }
    // A message sent since the receive keeps the mailbox open: the next receive takes it.
    closed = await closingMailbox(host.pool, run.runId, [MESSAGES]);
    if (closed) break;
  }
  if (!closed) await closingMailbox(host.pool, run.runId, []);
  await host.store.flush(runIds);
  return {
    runId: result.runId,
    runIds,
    stopReason: cancelled ? "aborted" : result.stopReason,
    text: result.text,
    messages: result.messages,
  };
}

/**
 * Closes the workflow's mailbox (see `closeMailbox`), recorded: a replay ends, or goes on
 * receiving, as the first execution did.
 */
function closingMailbox(pool: Pool, workflowId: string, keptOpenBy: readonly string[]): Promise<boolean> {
  return DBOS.runStep(() => whileUnreachable(() => closeMailbox(pool, workflowId, keptOpenBy)), {
    name: "agent-core.close",
  });
}

/**
 * Ends a wait that timed out (see `endWait`), recorded: a replay ends, or goes on, as the first
 * execution did.
 */
function endingWait(pool: Pool, workflowId: string, agent: Agent): Promise<boolean> {
  const waiting = { pendingApprovals: agent.pendingApprovals, pendingClientTools: agent.pendingClientTools };
  return DBOS.runStep(
    () => whileUnreachable(() => endWait(pool, workflowId, waiting, !nothingQueued(agent))),
    {
      name: "agent-core.close",
    },
  );
}

/**
 * The calls whose `tool_result` the run's stored log has, in seq order.
 */
async function loggedResults(store: Pick<EventStore, "read">, runId: string): Promise<string[]> {
  const events = await whileUnreachable(() => store.read(runId));
  return events.flatMap((event) => (event.type === "tool_result" ? [event.toolCallId] : []));
}

/** `work`, tried again while the database is out of reach (the run waits for it anyway). */
async function whileUnreachable<T>(work: () => Promise<T>): Promise<T> {
  for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 2000)) {
    try {
      return await work();
    } catch (error) {
      if (!isConnectionError(error)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

/** Whether the agent holds no steering message or follow-up (one its last run took and did not use). */
function nothingQueued(agent: Agent): boolean {
  const { steering, followUps } = agent.queued;
  return steering.length === 0 && followUps.length === 0;
}

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
