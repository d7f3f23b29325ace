import {
  AgentError,
  abortError,
  type Clock,
  type ModelStep,
  type ModelStepResult,
  type StopReason,
  TimeoutError,
  type ToolCall,
  type ToolResultMessage,
  type ToolRunner,
} from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { ReplayOrder } from "./replay-order.js";

/** A model call as the workflow records it: its chunks (to tell them again on replay) and its end. */
interface RecordedModelCall {
  chunks: ["text" | "reasoning", string][];
  result?: ModelStepResult;
  error?: { code: string; message: string; stopReason: StopReason };
  /** When it ended: the run's clock reads this from then on, live and on replay alike. */
  at: number;
  /** Whether messages for the run were waiting when it ended (recorded: a replay receives alike). */
  messagesWaiting?: boolean;
  /** Not made: messages waited before it (see `StepInbox.firstLive`); they come first. */
  deferred?: true;
  /** The run was aborted live by the time it ended: a replay aborts it at the same point. */
  aborted?: RecordedAbort;
}

/**
 * An abort of a durable run, as a step records it: a cancel (`runtime.cancel()`), or the run's
 * `timeouts.totalMs` running out (`timeout`: its ms). A replay takes it again right after the step
 * that recorded it, so the recovered run ends where the first execution did, with the same events.
 */
export type RecordedAbort = "cancel" | { timeout: number };

/** The run's messages as the model step sees them: checked in the step, received after it. */
export interface StepInbox {
  /** Inside the step: whether any message waits (a cheap read). */
  waiting(): Promise<boolean>;
  /**
   * Inside a step: true for the first step this execution of the workflow runs live (of a run
   * recovered or taken from the queue, or just started), false for every later one. That step
   * reads the messages sent while no worker ran the run (a cancel, above all) before it calls
   * anything.
   */
  firstLive?(): boolean;
  /** Inside the step: whether a cancel waits (a cheap read). */
  cancelWaiting?(): Promise<boolean>;
  /**
   * Inside the first live step: the run's `timeouts.totalMs` when it ran out while no worker ran
   * the run (it counts from the run's recorded start), else undefined.
   */
  expired?(): number | undefined;
  /**
   * Inside a step, at its end: the abort this execution of the run took live so far (a cancel's
   * `NOTIFY`), recorded with the step.
   */
  taken?(): RecordedAbort | undefined;
  /**
   * In the workflow: aborts the run as `abort` does live, after a step that found a cancel
   * waiting, or after a replayed step that recorded an abort.
   */
  abort?(abort: RecordedAbort): void;
  /** In the workflow, after a step that found messages waiting: receives them (recorded). */
  receive(): Promise<void>;
}

/**
 * The run's clock, recorded: it reads the time of the latest recorded point of the run (its
 * start, each model call's and tool call's end, each message it received), never the live time.
 * A replay passes the same points in the same order, so every timestamp and event `ts` it makes
 * is the one the first execution made. It stands still between points; it never goes back.
 */
export class RecordedClock implements Clock {
  #now: number;

  constructor(startedAt: number) {
    this.#now = startedAt;
  }

  now(): number {
    return this.#now;
  }

  /** Durations in metrics only, which a replay does not compare. */
  monotonic(): number {
    return performance.now();
  }

  /** A recorded point passed at `at`. */
  passed(at: number): void {
    if (at > this.#now) this.#now = at;
  }
}

/** What the durable steps share with the run they belong to. */
export interface DurableStepOptions {
  /** The run's recorded clock, moved on by every step. */
  clock?: RecordedClock;
}

/**
 * The model step as a DBOS step: the first execution streams as usual and records the chunks it
 * passed on and the result (or the failure, as a value: an `AgentError`'s class does not survive
 * serialization, its code and stop reason do). A replay after a crash does not call the model:
 * it tells the recorded chunks again, so the run publishes the same events with the same seq.
 */
export function durableModelStep(
  inner: ModelStep,
  options: DurableStepOptions & { inbox?: StepInbox } = {},
): ModelStep {
  const { clock, inbox } = options;
  return {
    async run(request) {
      let executed = false;
      let recorded: RecordedModelCall;
      for (;;) {
        recorded = await DBOS.runStep(
          async (): Promise<RecordedModelCall> => {
            executed = true;
            if (inbox?.firstLive?.()) {
              const expired = inbox.expired?.();
              if (expired !== undefined)
                return { chunks: [], at: Date.now(), deferred: true, aborted: { timeout: expired } };
              if (await inbox.waiting()) return { chunks: [], at: Date.now(), deferred: true };
            }
            const chunks: RecordedModelCall["chunks"] = [];
            try {
              const { model, prompt, tools, settings, signal, abortScope, retry, timeouts } = request;
              const result = await inner.run({
                model,
                prompt,
                tools,
                settings,
                signal,
                abortScope,
                retry,
                timeouts,
                onText: (text) => {
                  chunks.push(["text", text]);
                  request.onText?.(text);
                },
                onReasoning: (text) => {
                  chunks.push(["reasoning", text]);
                  request.onReasoning?.(text);
                },
              });
              const at = Date.now();
              const messagesWaiting = await inbox?.waiting();
              return { chunks, result, at, messagesWaiting, aborted: inbox?.taken?.() };
            } catch (error) {
              const failure =
                error instanceof AgentError ? error : new AgentError("provider_error", String(error));
              const at = Date.now();
              const messagesWaiting = await inbox?.waiting();
              return {
                chunks,
                error: { code: failure.code, message: failure.message, stopReason: failure.stopReason },
                at,
                messagesWaiting,
                aborted: inbox?.taken?.(),
              };
            }
          },
          { name: "agent-core.model" },
        );
        if (!recorded.deferred) break;
        // The run's time ran out while no worker ran it: it ends before the model is called.
        if (recorded.aborted !== undefined) inbox?.abort?.(recorded.aborted);
        // Messages sent while no worker ran the run: a cancel ends it before the model is called.
        else await inbox?.receive();
        const aborted = request.abortScope?.aborted ? request.abortScope.signal : request.signal;
        if (aborted?.aborted) throw abortError(aborted.reason);
        executed = false;
      }
      // Told at the time they were first told (the clock moves on to the call's end after them).
      if (!executed)
        for (const [kind, text] of recorded.chunks)
          if (kind === "text") request.onText?.(text);
          else request.onReasoning?.(text);
      clock?.passed(recorded.at);
      // Live, the abort came while the call ran: a replay takes it here, before what came after.
      if (!executed && recorded.aborted !== undefined) inbox?.abort?.(recorded.aborted);
      if (recorded.messagesWaiting) await inbox?.receive();
      if (recorded.error !== undefined) {
        const { code, message, stopReason } = recorded.error;
        throw new AgentError(code, message, { stopReason });
      }
      const result = recorded.result as ModelStepResult;
      return (request.finish ? request.finish(result) : result) as ModelStepResult;
    },
  };
}

/**
 * A tool call as the workflow records it: its result, or its result and what a replay must do
 * again after it: tell the batch the tool failed fatally (it threw a `FatalToolError`), abort the
 * run (it was aborted live while the call ran); or (when the run had been cancelled, or its
 * `timeouts.totalMs` ran out, while no worker ran it) the result of a call not run, which aborts
 * the run.
 */
type RecordedToolCall =
  | ToolResultMessage
  | { message: ToolResultMessage; fatal?: true; aborted?: RecordedAbort }
  | { message: ToolResultMessage; cancelled: true }
  | { message: ToolResultMessage; expired: number };

/**
 * Every tool call as a DBOS step: a call whose result was recorded is never run again; a call
 * that was running when the process died runs again on resume (at least once), with the same
 * `idempotencyKey`, unless the run was cancelled meanwhile. `order` (in a recovered workflow):
 * hands the results back in the order of the log (see `ReplayOrder`).
 */
export function durableToolRunner(
  inner: ToolRunner,
  options: DurableStepOptions & { inbox?: StepInbox; order?: ReplayOrder } = {},
): ToolRunner {
  const { clock, inbox, order } = options;
  const runner: ToolRunner = {
    run: async (request) => {
      let executed = false;
      const recorded = await DBOS.runStep(
        async (): Promise<RecordedToolCall> => {
          executed = true;
          order?.settled(request.runId, request.call.id, false);
          // A cancel that no worker could take, or a time limit that ran out meanwhile: the call
          // is not run. (No message is received here: a receive beside the batch's other steps
          // could take another step's place.)
          if (inbox?.firstLive?.()) {
            const expired = inbox.expired?.();
            if (expired !== undefined)
              return {
                message: notRun(
                  request.call,
                  Date.now(),
                  `not run: ${new TimeoutError("total", expired).message}`,
                ),
                expired,
              };
            if (await inbox.cancelWaiting?.())
              return {
                message: notRun(request.call, Date.now(), "not run: the run was aborted"),
                cancelled: true,
              };
          }
          let fatal = false;
          const message = await inner.run({
            ...request,
            fatal: {
              toolFailedFatally(call) {
                fatal = true;
                request.fatal.toolFailedFatally(call);
              },
            },
          });
          const aborted = inbox?.taken?.();
          if (!fatal && aborted === undefined) return message;
          return { message, ...(fatal ? { fatal: true as const } : {}), ...(aborted ? { aborted } : {}) };
        },
        { name: `agent-core.tool.${request.call.name}` },
      );
      if (!executed) order?.settled(request.runId, request.call.id, true);
      await order?.turn(request.runId, request.call.id);
      if ("role" in recorded) {
        if (recorded.timestamp !== undefined) clock?.passed(recorded.timestamp);
        return recorded;
      }
      const { message } = recorded;
      if ("cancelled" in recorded) inbox?.abort?.("cancel");
      else if ("expired" in recorded) inbox?.abort?.({ timeout: recorded.expired });
      else if (!executed) {
        // A replayed fatal failure stops its batch as the first execution's did: the calls after
        // it are skipped, not run.
        if (recorded.fatal) request.fatal.toolFailedFatally(request.call);
        // Aborted live while the call ran: so is the replay, before the batch goes on.
        if (recorded.aborted !== undefined) inbox?.abort?.(recorded.aborted);
      }
      if (message.timestamp !== undefined) clock?.passed(message.timestamp);
      return message;
    },
  };
  if (order === undefined) return runner;
  return {
    run: (request) => {
      order.started(request.runId, request.call.id);
      return Promise.resolve(runner.run(request)).finally(() =>
        order.handedBack(request.runId, request.call.id),
      );
    },
  };
}

/**
 * The result of a call the run's abort kept from running, saying why (as the tool runner says it:
 * the run's time limit, or an abort).
 */
function notRun(call: ToolCall, timestamp: number, content: string): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content,
    isError: true,
    status: "aborted",
    timestamp,
  };
}
