import { ClientToolError } from "../errors.js";
import type { ToolCall } from "../messages.js";
import type { RunnableTool, Tool, ToolExecuteOptions } from "../tools/define-tool.js";
import { parseArgsNow } from "../tools/parse-args.js";

/** What the user's side answers for a client-executed tool call: its result, or why it failed. */
export type ClientToolOutcome = { result: unknown } | { error: string };

/**
 * Throws a `ClientToolError` unless `outcome` is `{ result }` or `{ error: string }`: checked before
 * anything is taken, so that a bad outcome leaves the call waiting for a good one.
 */
export function checkClientToolOutcome(toolCallId: string, outcome: unknown): void {
  const problem = outcomeProblem(outcome);
  if (problem !== undefined)
    throw new ClientToolError(
      `The outcome for client tool call "${toolCallId}" must be { result } or { error: string }: ${problem}.`,
    );
}

function outcomeProblem(outcome: unknown): string | undefined {
  if (typeof outcome !== "object" || outcome === null)
    return `got ${outcome === null ? "null" : typeof outcome}`;
  if ("result" in outcome === "error" in outcome) return "give either result or error";
  if ("error" in outcome && typeof outcome.error !== "string")
    return `error must be a string, got ${typeof outcome.error}`;
  return undefined;
}

/**
 * Whether the run will wait for the user's side to run this call: a client tool with arguments
 * that pass its schema. Only such a `tool_call` says `execution: "client"`, so a client never runs
 * a call that was skipped, denied or refused (it gets its `tool_result` at once). A schema that
 * validates asynchronously cannot answer now: its call is taken to wait, and the check made when
 * it runs gives invalid arguments their error result.
 */
export function waitsForClient(call: ToolCall, tool: Tool | undefined): boolean {
  return tool?.execution === "client" && (parseArgsNow(tool.inputSchema, call.args)?.success ?? true);
}

interface Waiter {
  toolName: string;
  args: unknown;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

/**
 * A client's error as the model reads it. An empty one (a page whose `errorText` is "") gets a text
 * that says so: an `Error` without a message would read as "Tool failed: Error".
 */
function clientFailure(error: string): Error {
  return new Error(error.trim() === "" ? "The client tool failed without a message." : error);
}

/**
 * The client tool calls of an agent that wait for their results, by call id. A run's batch binds a
 * client tool here (`bind`); `agent.submitToolResult()` delivers (`deliver`). The batch's own
 * machinery gives the wait its deadline (`timeouts.clientToolMs`) and its end on abort.
 */
export class ClientToolCalls {
  readonly #waiting = new Map<string, Waiter>();

  /** The calls waiting now, in the order they were reached. */
  get waiting(): { toolCallId: string; toolName: string; args: unknown }[] {
    return [...this.#waiting].map(([toolCallId, { toolName, args }]) => ({ toolCallId, toolName, args }));
  }

  /**
   * A client tool as a runnable one: running it waits for the delivered result, or answers with
   * `delivered` (a result that arrived while its batch was suspended).
   */
  bind(tool: Tool, delivered?: ClientToolOutcome): RunnableTool {
    if (delivered !== undefined)
      return {
        ...tool,
        execute: () => {
          if ("error" in delivered) throw clientFailure(delivered.error);
          return delivered.result;
        },
      };
    return {
      ...tool,
      execute: (args: unknown, options: ToolExecuteOptions) => this.#wait(tool.name, args, options),
    };
  }

  /** Delivers a call's outcome; throws `ClientToolError` when no call with that id waits. */
  deliver(toolCallId: string, outcome: ClientToolOutcome): void {
    const waiter = this.#waiting.get(toolCallId);
    if (waiter === undefined)
      throw new ClientToolError(`No client tool call "${toolCallId}" is waiting for a result.`);
    this.#waiting.delete(toolCallId);
    if ("error" in outcome) waiter.reject(clientFailure(outcome.error));
    else waiter.resolve(outcome.result);
  }

  #wait(toolName: string, args: unknown, { signal, toolCallId }: ToolExecuteOptions): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // Its deadline or the run's abort ends the wait: the call no longer takes a result.
      // (A delivered result removes this listener first, so `stop` only ever ends a waiting call.)
      const stop = () => {
        this.#waiting.delete(toolCallId);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        toolName,
        args,
        resolve: (result) => {
          signal.removeEventListener("abort", stop);
          resolve(result);
        },
        reject: (error) => {
          signal.removeEventListener("abort", stop);
          reject(error);
        },
      };
      if (signal.aborted) return reject(signal.reason);
      this.#waiting.set(toolCallId, waiter);
      signal.addEventListener("abort", stop, { once: true });
    });
  }
}
