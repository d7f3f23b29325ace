import type { AgentEvent } from "@agent-core/core";
import type { AgentEndEvent } from "./client-types.js";
import { type ClientErrorEvent, describe } from "./errors.js";
import { onAbortShared } from "./shared-abort.js";
import { type Config, deadline, discard, httpError, isRunId, readText, type Transport } from "./transport.js";

/** A client tool call to run and answer: from a `tool_call` event, or listed by a suspended run's `agent_end`. */
export interface ClientCall {
  runId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  hookToken?: string | undefined;
}

/**
 * The client tools of one `Run`: runs each call's tool once per call id and posts its outcome
 * (`POST …/tool-results`). The run gives what it needs: its `signal` (aborted when it is cancelled or
 * fails: the tools, and the posts' retries) and `emit`, which delivers the `client_error` events the
 * problems become; it says when a call ended on the server (`endCall`) or the run ended (`endAll`).
 * The run's events and its settlement stay the run's.
 */
export class ClientToolRunner {
  readonly #transport: Transport;
  readonly #config: Config;
  readonly #signal: AbortSignal;
  readonly #emit: (event: ClientErrorEvent) => void;
  /** The ids of the calls whose tool ran: a call may be seen again (a replay, a suspended run's list). */
  readonly #toolCalls = new Set<string>();
  /** The result posts of a suspended run's calls under way: each resolves with the run it resumed, if any. */
  readonly #posting = new Set<Promise<string | undefined>>();
  /** Aborts those posts' requests (`#signal` only ends their retries): a while after a cancel. */
  readonly #postAbort = new AbortController();
  /** The tools running now, by call id: each one's signal, aborted when its call ends first. */
  readonly #running = new Map<string, AbortController>();

  constructor(transport: Transport, signal: AbortSignal, emit: (event: ClientErrorEvent) => void) {
    this.#transport = transport;
    this.#config = transport.config;
    this.#signal = signal;
    this.#emit = emit;
  }

  /** Runs the call a client `tool_call` event (`source`) asked for, and posts its outcome. */
  run(call: ClientCall, source: AgentEvent): void {
    void this.#runTool(call, source);
  }

  /**
   * Answers the client calls a suspended run lists, each at once. Resolves with the id of the run
   * that resumed it (the first post answered 202 `{ runId }`), or undefined once every post ended
   * without one.
   */
  answer(end: AgentEndEvent): Promise<string | undefined> {
    // A call listed without its token has its result already (or was given up): the server replays
    // it so, and a page reloaded between two results runs only the calls still waiting.
    const calls = (end.pendingClientTools ?? []).filter((call) => call.hookToken !== undefined);
    return new Promise((resolve) => {
      let left = calls.length;
      if (left === 0) resolve(undefined);
      for (const call of calls)
        void this.#runTool({ ...call, runId: end.runId }, end, true).then((resumed) => {
          if (resumed !== undefined) resolve(resumed);
          if (--left === 0) resolve(undefined);
        });
    });
  }

  /**
   * The server ended the call without the client's result (its `tool_result` came: the server's
   * `clientToolTimeoutMs` passed, say): its tool, if it still runs, is told to stop, and what it
   * returns is not posted (the server would refuse it: the call no longer waits).
   */
  endCall(toolCallId: unknown, status: unknown): void {
    if (typeof toolCallId !== "string") return;
    this.#running
      .get(toolCallId)
      ?.abort(
        new Error(`the call ended on the server before its result was posted (status "${String(status)}")`),
      );
  }

  /** The run ended: every tool still running is told to stop, as its call ended with the run. */
  endAll(reason: Error): void {
    for (const running of this.#running.values()) running.abort(reason);
  }

  /**
   * A cancel while a suspended run's calls were answered: waits for the result posts under way (at
   * most `idleTimeoutMs`), and cancels (with `cancel`) the run one of them resumed.
   */
  async cancelResumed(cancel: (runId: string) => Promise<void>): Promise<void> {
    // The run's signal has aborted: no post starts any more, so these are all there will be.
    const posting = [...this.#posting];
    const timer = setTimeout(
      () => this.#postAbort.abort(new Error("the run was cancelled")),
      this.#config.idleTimeoutMs,
    );
    try {
      const resumed = new Set((await Promise.all(posting)).filter((id) => id !== undefined));
      await Promise.all([...resumed].map((runId) => cancel(runId)));
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Runs a client tool once per call id and posts its outcome; problems become `client_error`
   * events. Resolves (never rejects) with the run that the post resumed, when it answered 202
   * `{ runId }`. `suspended`: a call of a suspended run, whose post outlives a cancel.
   */
  async #runTool(call: ClientCall, source: AgentEvent, suspended = false): Promise<string | undefined> {
    const { toolCallId, toolName, hookToken } = call;
    // A tool_call event comes as the server sent it: `["t"]` would find the tool `t` (a key is
    // made a string), and an object id would never be the same id twice.
    if (typeof toolCallId !== "string" || typeof toolName !== "string") {
      this.#emit({
        type: "client_error",
        code: "malformed-event",
        message: 'A client tool call with no string "toolCallId" and "toolName": no tool was run for it.',
        line: JSON.stringify(source),
      });
      return undefined;
    }
    if (this.#toolCalls.has(toolCallId)) return undefined;
    this.#toolCalls.add(toolCallId);
    if (typeof hookToken !== "string") {
      this.#emit({
        type: "client_error",
        code: "malformed-event",
        message: `The client tool call "${toolCallId}" (${toolName}) came without a hookToken: its result cannot be posted.`,
        line: JSON.stringify(source),
        toolCallId,
      });
      return undefined;
    }
    // Cancelled, or failed, before the tool started (by a listener of this very tool_call, say):
    // it is not started at all.
    if (this.#signal.aborted) return undefined;
    const { tools } = this.#config;
    const tool = Object.hasOwn(tools, toolName) ? tools[toolName] : undefined;
    // The tool's own signal: the run's, and the end of its call (see `endCall`).
    const toolAbort = new AbortController();
    // Shared: a batch of many calls at once would otherwise add a listener each to the run's signal.
    const stopFollowingRun = onAbortShared(this.#signal, () => toolAbort.abort(this.#signal.reason));
    this.#running.set(toolCallId, toolAbort);
    let outcome: { result: unknown } | { error: string };
    if (tool === undefined) outcome = { error: `no handler for client tool ${toolName}` };
    else {
      try {
        const result = await tool(call.args, { signal: toolAbort.signal, toolCallId });
        outcome = { result: result === undefined ? null : result };
      } catch (error) {
        outcome = { error: describe(error) };
      }
      // Found out here, not by the post: a result that cannot be sent would be retried for nothing.
      if ("result" in outcome) {
        const why = notJson(outcome.result);
        if (why !== undefined) outcome = { error: `the result is not JSON: ${why}` };
      }
    }
    this.#running.delete(toolCallId);
    stopFollowingRun();
    // Cancelled, failed, ended, or the call ended on the server: nobody waits for the outcome.
    if (toolAbort.signal.aborted) return undefined;
    const posted = this.#postResult(call, { toolCallId, token: hookToken, ...outcome }, suspended);
    if (!suspended) return posted;
    this.#posting.add(posted);
    try {
      return await posted;
    } finally {
      this.#posting.delete(posted);
    }
  }

  async #postResult(
    call: ClientCall,
    body: Record<string, unknown>,
    suspended: boolean,
  ): Promise<string | undefined> {
    const { toolCallId, toolName } = call;
    const signal = this.#signal;
    // A server that never answers, or never ends its answer, must not hold the post (and a
    // suspended run) for ever: idleTimeoutMs for the whole of it, retries and answer included.
    // A suspended run's post is not cut short by a cancel: if it resumes the run, that run is cancelled.
    const timeout = deadline(this.#config.idleTimeoutMs, suspended ? this.#postAbort.signal : signal);
    try {
      let response: Response;
      try {
        response = await this.#transport.post(`/runs/${encodeURIComponent(call.runId)}/tool-results`, body, {
          signal: timeout.signal,
          stop: signal,
          retryNetwork: true,
          retryStatus: (status) => status >= 500 || status === 429,
        });
      } catch (error) {
        if (signal.aborted) return undefined;
        this.#emit({
          type: "client_error",
          code: "tool-result-failed",
          message: `The result of the client tool call "${toolCallId}" (${toolName}) could not be posted: ${describe(error)}`,
          toolCallId,
        });
        return undefined;
      }
      if (response.status === 202) {
        const resumed = await resumedRunId(response);
        if (typeof resumed === "string") return resumed;
        if (signal.aborted) return undefined;
        // Taken, but the client cannot follow the run it resumed: said, as a post that failed is.
        this.#emit({
          type: "client_error",
          code: "tool-result-failed",
          message: `The server took the result of the client tool call "${toolCallId}" (${toolName}) (202), but its answer named no run to follow: ${resumed.why}`,
          status: 202,
          toolCallId,
        });
        return undefined;
      }
      if (response.ok) return discard(response);
      const error = await httpError(response);
      if (signal.aborted) return undefined;
      const transient = response.status >= 500 || response.status === 429;
      this.#emit({
        type: "client_error",
        code: transient ? "tool-result-failed" : "tool-result-rejected",
        message: `The server ${transient ? "could not take" : "rejected"} the result of the client tool call "${toolCallId}" (${toolName}): ${error.message}`,
        status: response.status,
        ...(error.serverCode === undefined ? {} : { serverCode: error.serverCode }),
        toolCallId,
      });
      // A result too large for the server (its maxBodyBytes): the call would wait for one until the
      // server gives it up (or a suspended run would never resume); the model is told why instead.
      if (response.status === 413 && "result" in body)
        return await this.#postResult(
          call,
          {
            toolCallId,
            token: body.token,
            error: `the result is larger than the server takes: ${error.message}`,
          },
          suspended,
        );
      return undefined;
    } finally {
      timeout.clear();
    }
  }
}

/** Why `value` cannot be sent as JSON, or undefined when it can. */
function notJson(value: unknown): string | undefined {
  try {
    // A function or a symbol has no JSON at all: posted so, the body would have no `result` key.
    if (JSON.stringify(value) === undefined) return `JSON has no value for a ${typeof value}`;
    return undefined;
  } catch (error) {
    return describe(error);
  }
}

/**
 * The run a 202 answer to a tool-result post names (`{ runId }`): the run that resumed a suspended
 * one; else why none could be read from it.
 */
async function resumedRunId(response: Response): Promise<string | { why: string }> {
  let text: string;
  try {
    text = await readText(response);
  } catch (error) {
    return { why: describe(error) };
  }
  try {
    const { runId } = JSON.parse(text) as { runId?: unknown };
    if (isRunId(runId)) return runId;
  } catch {
    // Told below, as an answer with no run id.
  }
  return { why: `the answer is not { "runId": "…" }: ${text.slice(0, 200)}` };
}

/** Absent, or a list of calls (each an object naming its call and tool): what a suspended run lists. */
export function isCallList(pending: unknown): boolean {
  return (
    pending === undefined ||
    (Array.isArray(pending) &&
      pending.every(
        (call) =>
          typeof call === "object" &&
          call !== null &&
          typeof call.toolCallId === "string" &&
          typeof call.toolName === "string",
      ))
  );
}
