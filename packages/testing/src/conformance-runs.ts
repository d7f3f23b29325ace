import type { Agent, AgentEvent, AgentRun, RunResult } from "@agent-core/core";
import { assertEventProtocol, assertValidTranscript, eventsOf } from "./assertions.js";

// How the conformance checks wait for their runs, each within a deadline, and read how they ended.

/** How a run ended, as its result or its events say: what a check reads of a resumed run. */
export type RunEnd = Pick<RunResult, "stopReason" | "pendingApprovals"> & {
  error?: { code: string; message: string };
};

/**
 * The events of the run of `agent` that `begin` starts, once it has ended (`agent_end`), whoever
 * starts it (`agent.approve()`, or a runtime resuming the batch its own way): the next run to
 * start. Rejects when it has not ended within `ms` after `begin` resolved.
 */
export async function runStartedBy(
  agent: Agent,
  ms: number,
  begin: () => Promise<void>,
): Promise<AgentEvent[]> {
  let stop = () => {};
  const ended = new Promise<AgentEvent[]>((resolve) => {
    const events: AgentEvent[] = [];
    stop = agent.on("*", (event) => {
      if (events.length === 0 ? event.type !== "agent_start" : event.runId !== events[0]?.runId) return;
      events.push(event);
      if (event.type === "agent_end") resolve(events);
    });
  });
  try {
    await begin();
    return await within(ended, ms);
  } finally {
    stop();
  }
}

/** How the run those events are of ended, as its `agent_end` and its run's own `error` say. */
export function endOf(events: readonly AgentEvent[]): RunEnd {
  const end = eventsOf(events, "agent_end")[0];
  const error = eventsOf(events, "error").find((e) => e.toolCallId === undefined);
  return {
    stopReason: end?.stopReason ?? "error",
    ...(end?.pendingApprovals ? { pendingApprovals: end.pendingApprovals } : {}),
    ...(error ? { error: { code: error.code, message: error.message } } : {}),
  };
}

/**
 * How the run ended, with its error: a failed check then says why the run failed (what the
 * orchestrator threw), not only that its stop reason was another one.
 */
export function ending(result: RunEnd): string {
  const error = result.error ? ` (${result.error.code}: ${result.error.message})` : "";
  return `the run ended ${result.stopReason}${error}`;
}

/** Awaits the run's result within `ms`, then checks the protocol and the transcript. */
export async function timed(run: AgentRun, ms: number): Promise<RunResult> {
  const result = await within(run.result(), ms);
  assertEventProtocol(run.events);
  assertValidTranscript(result.messages);
  return result;
}

/** What the run's end resolves with, or a rejection saying it did not end within `ms`. */
export async function within<T>(result: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the run did not end within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([result, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
