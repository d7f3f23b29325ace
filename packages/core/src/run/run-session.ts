import { AbortedError, type AgentError, OrchestratorError, type RunEnding, runEndingOf } from "../errors.js";
import type { RunMetrics, StopReason } from "../events/schemas.js";
import { type AgentMessage, type AssistantStopReason, textOf, type Usage } from "../messages.js";
import type { Orchestrator } from "../orchestrator/contract.js";
import { ownArgs } from "../tools/own-args.js";
import { BodyWait } from "./body-wait.js";
import type { EventPublisher } from "./event-publisher.js";
import { MetricsRecorder } from "./metrics.js";
import { RunServices } from "./run-services.js";
import type { RunSetup } from "./run-setup.js";
import { awaitingOf, type PendingDecisions, resumeWith, type Suspension } from "./suspension.js";
import type { TranscriptWriter } from "./transcript-keeper.js";
import { lastAssistantFrom } from "./turn-tracker.js";

export interface RunResult {
  runId: string;
  /** The whole history of the agent after this run. */
  messages: AgentMessage[];
  /** The messages this run added (its prompt included). */
  newMessages: AgentMessage[];
  stopReason: StopReason;
  usage: Usage;
  durationMs: number;
  /** The text of the last assistant message of this run ("" when none). */
  text: string;
  /** Set when the run failed: the same error the `error` event reported. */
  error?: AgentError;
  /** When `stopReason` is `awaiting_approval`: the calls to `approve()` or `deny()`. */
  pendingApprovals?: { toolCallId: string; toolName: string; args: unknown; reason?: string }[];
  /** When `stopReason` is `awaiting_client_tool`: the calls to answer with `agent.submitToolResult()`. */
  pendingClientTools?: { toolCallId: string; toolName: string; args: unknown }[];
  /**
   * Steering and follow-up messages this run took from the queues but did not put into the
   * history (it ended first): they are queued again for the next run, in their order.
   */
  requeued?: AgentMessage[];
  metrics: RunMetrics;
}

/** A run's inputs beyond its services: what it starts from. */
export interface RunStart {
  orchestrator: Orchestrator;
  input: AgentMessage[];
  /** A batch a previous run left waiting, with the decisions made since. */
  resume: PendingDecisions | undefined;
  /** Nothing to do (a run started only to resume a batch that another run resumed first). */
  idle?: boolean;
}

/**
 * One run of an orchestrator, from `agent_start` to `agent_end`: it runs the orchestrator through
 * the run's services, ends it (completed, failed, aborted after the grace period, or suspended),
 * cancels whatever is still in flight, makes the history whole and reports the result.
 */
export class RunSession {
  readonly #setup: RunSetup;
  readonly #start: RunStart;
  readonly #events: EventPublisher;
  readonly #transcript: TranscriptWriter;
  readonly #metrics = new MetricsRecorder();
  readonly #services: RunServices;
  readonly #startedAt: number;
  readonly #firstMessage: number;
  #suspension: Suspension | undefined;
  /** The wait for the run's body: a suspension ends it early. */
  #wait: BodyWait<RunResult> | undefined;
  /** Whether the prompt entered the history (a run that resumes a batch first appends it after). */
  #inputAppended = false;
  /** The body ended with work under way, which the run then cancelled: an abort of its own, no failure. */
  #cancelledLeftovers = false;

  constructor(setup: RunSetup, start: RunStart, events: EventPublisher, transcript: TranscriptWriter) {
    this.#setup = setup;
    this.#start = start;
    this.#events = events;
    this.#transcript = transcript;
    this.#startedAt = setup.clock.now();
    this.#firstMessage = transcript.keeper.messages.length;
    this.#services = new RunServices(setup, events, transcript, this.#metrics, this);
  }

  /** After the run: the batch it waits on, when it ended as `awaiting_approval`. */
  get suspension(): Suspension | undefined {
    return this.#suspension;
  }

  /**
   * @internal The run's services report that it waits for decisions. An abort (or a timeout) that
   * came while the batch was still asking wins: the run ends as aborted and its calls get results,
   * rather than leaving the user approvals for calls they tried to stop (returns false).
   */
  suspended(suspension: Suspension): boolean {
    if (this.#suspension !== undefined) return true;
    if (this.#setup.abortScope.aborted) return false;
    this.#suspension = suspension;
    // Ending from here on: the calls the batch waits on stay open for the next run, and an
    // orchestrator that goes on (it swallowed the error) can no longer answer them by moving on.
    this.#services.log.markEnding();
    // The batch that reports it is still on the stack: the run ends once it has returned.
    if (this.#wait !== undefined) queueMicrotask(this.#wait.endNow);
    return true;
  }

  /**
   * Runs the orchestrator to its end, then hands the result to `ended` (once; nothing is thrown).
   * A callback rather than a promise: the run's end then needs no async frame of its own, here or
   * in the caller (each frame a run keeps suspended costs about half a kilobyte of its heap).
   */
  execute(ended: (result: RunResult) => void): void {
    this.#events.publish({ type: "agent_start" }, this.#startedAt);
    const wait = new BodyWait(this, ended, this.#setup.abortScope, this.#setup.limits.abortGraceMs);
    this.#wait = wait;
    this.#body().then(
      () => wait.bodyReturned(false, undefined),
      (error: unknown) => wait.bodyReturned(true, error),
    );
  }

  /**
   * @internal The run is ending (its body returned, or it suspended) while a model call or tool
   * batch is still under way: that work is cancelled now, and `onSettled` is called once it has
   * settled (the caller bounds the wait by the grace period). False, and nothing done, when nothing
   * is under way or the run was aborted already.
   */
  cancelLeftovers(onSettled: () => void): boolean {
    const scope = this.#setup.abortScope;
    const { activity } = this.#services;
    if (activity.inFlight === 0 || scope.aborted) return false;
    this.#cancelledLeftovers = true;
    scope.abort(new AbortedError("the run has ended"));
    activity.whenIdle(onSettled);
    return true;
  }

  /** @internal The body ended (`failed`: with `error`), the run suspended, or the grace period ran out. */
  bodyEnded(failed: boolean, error: unknown): RunResult {
    let failure: RunEnding | undefined;
    if (this.#suspension === undefined)
      if (failed) failure = this.#endingOf(error);
      else if (this.#abortedFromOutside()) failure = this.#abortEnding();
    return this.#finish(failure);
  }

  #abortedFromOutside(): boolean {
    return this.#setup.abortScope.aborted && !this.#cancelledLeftovers;
  }

  /** The resumed batch first (the history is whole again before the model is called), then the orchestrator. */
  #body(): Promise<void> {
    const { resume, idle } = this.#start;
    if (idle) return Promise.resolve();
    return resume ? this.#resumeThenRun(resume) : this.#runOrchestrator();
  }

  async #resumeThenRun(resume: PendingDecisions): Promise<void> {
    const { calls } = resume.suspension;
    // A prompt's run (not one that only resumes) takes the conversation on past the batch.
    const goesOn = this.#start.input.length > 0;
    const { orchestrator } = this.#start;
    // An orchestrator that resumes its own batch runs it (with the decisions) and goes on itself.
    if (!goesOn && typeof orchestrator.resume === "function") {
      this.#inputAppended = true;
      this.#services.resumeNextBatch(resumeWith(resume, false));
      return orchestrator.resume(this.#services, calls);
    }
    const outcome = await this.#services.runBatch(calls, {}, resumeWith(resume, goesOn));
    // A suspended outcome was reported as the batch settled (see `RunServices.runBatch`).
    if (outcome.kind !== "suspended") await this.#runOrchestrator();
  }

  #runOrchestrator(): Promise<void> {
    try {
      this.#inputAppended = true;
      for (const message of this.#start.input) this.#services.log.append(message);
      return Promise.resolve(this.#start.orchestrator.run(this.#services));
    } catch (error) {
      // An orchestrator whose run() throws synchronously (or a bad input) fails the run alike.
      return Promise.reject(error);
    }
  }

  /**
   * Calls whose tool started (their `tool_call` went out) and was still running when the
   * orchestrator returned: the run cancelled them and waited no longer than the grace period, as
   * for a tool that ignores an abort. The others never ran, and are answered as such.
   */
  #closeAbandonedCalls(): void {
    const open = this.#transcript.keeper.openCalls;
    if (open.length === 0) return;
    const notStarted = open.filter((call) => !this.#events.announced(call.id));
    if (notStarted.length === open.length) return;
    const graceMs = this.#setup.limits.abortGraceMs;
    this.#services.log.publishClosed(
      this.#transcript.closeCallsBut(
        notStarted,
        "aborted",
        `aborted: the tool did not stop within ${graceMs} ms of the abort`,
      ),
    );
  }

  #finish(failure: RunEnding | undefined): RunResult {
    const services = this.#services;
    const suspension = this.#suspension;
    const stopReason: StopReason = suspension ? awaitingOf(suspension) : (failure?.stopReason ?? "completed");
    // A requested stop (`shouldStop`'s, or any error that ends the run as `completed`) is an
    // ending, not a failure: no `error` event.
    const reported = stopReason === "completed" ? undefined : failure;
    // From here on the run takes nothing more: what it took and did not use is queued again.
    const steering = this.#setup.steering.close();
    const followUps = this.#setup.followUps.close();
    const requeued =
      followUps.length === 0 ? steering : steering.length === 0 ? followUps : [...steering, ...followUps];
    // Nothing a late writer does reaches the history from now on.
    this.#transcript.close();
    // Whatever is still in flight (an abandoned tool, a model call not awaited) is cancelled.
    const scope = this.#setup.abortScope;
    if (services.activity.inFlight > 0 && !scope.aborted) scope.abort(new AbortedError("the run has ended"));
    // Calls a suspended run waits on stay open; every other call gets its result now: `aborted`
    // when the run was stopped (by `abort()` or its time limit, or a suspension cancelled its
    // batch), as a call it stopped while running.
    if (suspension !== undefined)
      services.log.publishClosed(
        this.#transcript.closeCallsBut(suspension.calls, "aborted", "not completed: the run suspended first"),
      );
    else {
      // The orchestrator returned with a call still running: the run cancelled it (see below).
      if (reported === undefined) this.#closeAbandonedCalls();
      services.log.publishClosed(
        this.#transcript.closeCalls(
          stopReason === "aborted" || stopReason === "timeout" ? "aborted" : "error",
          `not completed: ${reported ? reported.message : "the orchestrator ended without running this call"}`,
        ),
      );
    }
    // A run that ended while it resumed a batch: its prompt still enters the history, after the
    // batch's results, rather than being lost.
    if (suspension === undefined && this.#start.resume !== undefined && !this.#inputAppended)
      for (const message of this.#start.input) this.#transcript.keeper.append(message);
    services.turns.endOpen(assistantStop(stopReason));
    if (reported) this.#events.publish({ type: "error", code: reported.code, message: reported.message });
    const now = this.#setup.clock.now();
    const durationMs = now - this.#startedAt;
    const metrics = this.#metrics.since(MetricsRecorder.zero(), durationMs);
    const usage = this.#metrics.usage;
    const pending = suspension && pendingCalls(suspension);
    this.#events.publish(
      pending === undefined
        ? { type: "agent_end", stopReason, usage, durationMs, metrics }
        : { type: "agent_end", stopReason, usage, durationMs, metrics, ...pending },
      now,
    );
    const history = this.#transcript.keeper.messages;
    const last = lastAssistantFrom(services.log, this.#firstMessage);
    const result: RunResult = {
      runId: this.#setup.runId,
      messages: history.slice(),
      newMessages: history.slice(this.#firstMessage),
      stopReason,
      usage,
      durationMs,
      text: last ? textOf(last) : "",
      metrics,
    };
    if (reported) result.error = reported.error;
    if (requeued.length > 0) result.requeued = requeued;
    if (pending) Object.assign(result, pending);
    return result;
  }

  #endingOf(error: unknown): RunEnding {
    const ending = runEndingOf(error);
    if (ending) return ending;
    if (this.#abortedFromOutside()) return this.#abortEnding();
    return endingOfOwn(new OrchestratorError(this.#start.orchestrator.name, error));
  }

  /** The abort's reason when it ends a run as it says (a timeout), else an `AbortedError`. */
  #abortEnding(): RunEnding {
    const { reason } = this.#setup.abortScope.signal;
    return runEndingOf(reason) ?? endingOfOwn(new AbortedError(reason));
  }
}

/** The ending of an error the framework made: its fields are plain text it set itself. */
function endingOfOwn(error: AgentError): RunEnding {
  return { error, code: error.code, message: error.message, stopReason: error.stopReason };
}

function assistantStop(stopReason: StopReason): AssistantStopReason {
  return stopReason === "aborted" ? "aborted" : stopReason === "completed" ? "stop" : "error";
}

/** The calls a suspended run waits on, as `agent_end` and the result list them. */
function pendingCalls(suspension: Suspension): Pick<RunResult, "pendingApprovals" | "pendingClientTools"> {
  const waiting = suspension.calls.filter((call) => suspension.waits.has(call.id));
  if (awaitingOf(suspension) === "awaiting_client_tool")
    return {
      pendingClientTools: waiting.map((call) => ({
        toolCallId: call.id,
        toolName: call.name,
        args: ownArgs(call.args),
      })),
    };
  return {
    pendingApprovals: waiting.map((call) => {
      const wait = suspension.waits.get(call.id);
      const reason = wait?.kind === "approval" ? wait.reason : undefined;
      return {
        toolCallId: call.id,
        toolName: call.name,
        args: ownArgs(call.args),
        ...(reason ? { reason } : {}),
      };
    }),
  };
}
