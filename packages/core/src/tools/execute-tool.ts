import type { z } from "zod";
import { errorMessage, FatalToolError, TimeoutError } from "../errors.js";
import type { ToolCall, ToolResultMessage, ToolResultStatus } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { RunnableTool } from "./define-tool.js";
import { ownArgs } from "./own-args.js";
import { describeIssues, type ParsedArgs, parseArgs } from "./parse-args.js";
import type { ToolRegistry } from "./registry.js";
import { jsonAsWritten } from "./result-json.js";

export const SKIPPED_BY_STEERING = "skipped (steering interrupt)";
export const NOT_RUN_ABORTED = "not run: the run was aborted";

/**
 * The `aborted` result of a call the run's abort kept from running. A run ended by its own time
 * limit (`timeouts.totalMs`) says so, as the calls it stopped mid-run do: a model reading this
 * history later must not think someone aborted the run.
 */
export function notRunResult(call: ToolCall, scope: AbortScope): ToolResultMessage {
  const reason: unknown = scope.signal.reason;
  return toolResult(
    call,
    "aborted",
    reason instanceof TimeoutError ? `not run: ${reason.message}` : NOT_RUN_ABORTED,
  );
}

/** Told when a tool throws a `FatalToolError`, so its batch can stop. */
export interface FatalToolSink {
  toolFailedFatally(call: ToolCall): void;
}

/**
 * Runs one tool call and always returns its result message: an unknown tool (`tool` undefined;
 * `tools` names the known ones), arguments that fail the schema, and a tool that throws all become
 * `status: "error"` results the model sees. When the run aborts, the tool gets `graceMs` to stop;
 * past that it is abandoned with `status: "aborted"`.
 */
export function executeToolCall(
  tool: RunnableTool | undefined,
  tools: ToolRegistry,
  call: ToolCall,
  scope: AbortScope,
  graceMs: number,
  timeoutMs?: number,
  fatal?: FatalToolSink,
  runId?: string,
): ToolResultMessage | Promise<ToolResultMessage> {
  if (tool === undefined) {
    const available =
      tools.size > 0 ? ` Available tools: ${tools.names().join(", ")}.` : " No tools are registered.";
    return toolResult(call, "error", `Unknown tool "${call.name}".${available}`);
  }
  // The schema checks a copy: whatever it passes through to the tool (all of it, a z.any() field, a
  // loose object's extra keys) is then the tool's own, never the history's call.
  const parsed = parseArgs(tool.inputSchema, ownArgs(call.args));
  // With a time limit the call gets its own signal, aborted by the run or by its deadline.
  const deadline = timeoutMs === undefined ? undefined : new ToolDeadline(scope, timeoutMs);
  if (!(parsed instanceof Promise))
    return parsed.success
      ? runTool(tool, parsed.data, call, scope, graceMs, deadline, fatal, runId)
      : invalidArguments(call, parsed.error, deadline);
  // An async schema's check is part of the call: it counts toward the call's time limit, and an
  // abort abandons it at once (it has no signal to stop on).
  return settleOrAbandon(parsed, parsed.then, scope, 0, deadline).then((outcome) => {
    if (outcome.kind === "abandoned") {
      deadline?.dispose();
      return deadline?.expired ? timedOut(call, deadline) : notRunResult(call, scope);
    }
    // parseArgs settles without rejecting: the outcome is the check's result.
    const checked = (outcome as { value: ParsedArgs }).value;
    return checked.success
      ? runTool(tool, checked.data, call, scope, graceMs, deadline, fatal, runId)
      : invalidArguments(call, checked.error, deadline);
  });
}

function timedOut(call: ToolCall, deadline: ToolDeadline): ToolResultMessage {
  const { timeoutMs } = deadline;
  return toolResult(
    call,
    "timeout",
    `The tool "${call.name}" timed out after ${timeoutMs} ms and was stopped.`,
  );
}

function invalidArguments(
  call: ToolCall,
  error: z.ZodError,
  deadline: ToolDeadline | undefined,
): ToolResultMessage {
  deadline?.dispose();
  const sent = typeof call.args === "string" ? ` The arguments were not valid JSON: ${call.args}` : "";
  return toolResult(
    call,
    "error",
    `Invalid arguments for tool "${call.name}": ${describeIssues(error)}.${sent}`,
  );
}

/** Runs a tool whose arguments passed its schema. */
function runTool(
  tool: RunnableTool,
  args: unknown,
  call: ToolCall,
  scope: AbortScope,
  graceMs: number,
  deadline: ToolDeadline | undefined,
  fatal: FatalToolSink | undefined,
  runId: string | undefined,
): ToolResultMessage | Promise<ToolResultMessage> {
  if (scope.aborted) {
    deadline?.dispose();
    return notRunResult(call, scope);
  }

  const signal = deadline?.signal ?? scope.signal;
  let returned: unknown;
  let then: Then | undefined;
  try {
    const idempotencyKey = runId === undefined ? call.id : `${runId}:${call.id}`;
    returned = tool.execute(args, { signal, toolCallId: call.id, idempotencyKey });
    // Read once and inside the guard: a `then` getter that throws is the tool failing.
    then = thenOf(returned);
  } catch (error) {
    deadline?.dispose();
    if (isFatal(error)) fatal?.toolFailedFatally(call);
    return failure(call, "error", error);
  }
  // A synchronous tool's result is returned as it is: no promise, no microtask hop.
  if (then === undefined) {
    deadline?.dispose();
    return successResult(call, returned);
  }
  return settleOrAbandon(returned, then, scope, graceMs, deadline).then((outcome) => {
    deadline?.dispose();
    if (deadline?.expired) return timedOut(call, deadline);
    if (outcome.kind === "abandoned")
      return toolResult(call, "aborted", `aborted: the tool did not stop within ${graceMs} ms of the abort`);
    if (outcome.kind === "rejected") {
      // Stopped by the abort, often rejecting with its reason: for a fatal sibling's batch that reason
      // is a FatalToolError too, yet only the call that threw it failed (it reports before the abort).
      if (scope.aborted) return failure(call, "aborted", outcome.error);
      if (isFatal(outcome.error)) fatal?.toolFailedFatally(call);
      return failure(call, "error", outcome.error);
    }
    return successResult(call, outcome.value);
  });
}

/** A tool's own deadline: aborts its signal when the time is up, or when the run aborts. */
class ToolDeadline {
  readonly timeoutMs: number;
  readonly #controller = new AbortController();
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #unlink: () => void;
  readonly #onExpire = new Set<() => void>();
  expired = false;

  constructor(scope: AbortScope, timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.#unlink = scope.onAbort(() => this.#controller.abort(scope.signal.reason));
    this.#timer = setTimeout(() => {
      this.expired = true;
      this.#controller.abort(new TimeoutError("tool", timeoutMs));
      for (const hook of this.#onExpire) hook();
    }, timeoutMs);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  onExpire(hook: () => void): () => void {
    this.#onExpire.add(hook);
    return () => this.#onExpire.delete(hook);
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#unlink();
  }
}

export function toolResult(
  call: ToolCall,
  status: ToolResultStatus,
  content: string,
  details?: unknown,
): ToolResultMessage {
  const isError = status !== "ok";
  const timestamp = Date.now();
  // Built whole: adding `details` afterwards would give the message a second backing store.
  return details === undefined
    ? { role: "toolResult", toolCallId: call.id, toolName: call.name, content, isError, status, timestamp }
    : {
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content,
        details,
        isError,
        status,
        timestamp,
      };
}

/** A thrown value as the model reads it: its message, or "Tool failed: …" when it has none of its own. */
function failure(call: ToolCall, status: ToolResultStatus, error: unknown): ToolResultMessage {
  const text = errorMessage(error);
  return toolResult(call, status, text === ownMessage(error) ? text : `Tool failed: ${text}`);
}

function ownMessage(error: unknown): unknown {
  if (typeof error === "string") return error;
  try {
    return error instanceof Error ? error.message : undefined;
  } catch {
    // A `message` getter that throws (or a Proxy whose prototype trap does): no message of its own.
    return undefined;
  }
}

function isFatal(error: unknown): boolean {
  try {
    return error instanceof FatalToolError;
  } catch {
    // `instanceof` throws for a Proxy whose prototype trap throws; such a value is no FatalToolError.
    return false;
  }
}

function successResult(call: ToolCall, value: unknown): ToolResultMessage {
  if (typeof value === "string") return toolResult(call, "ok", value, value);
  // Same text as JSON.stringify for a finite number, without its generic path.
  if (typeof value === "number" && Number.isFinite(value))
    return toolResult(call, "ok", String(value), value);
  // JSON writes nothing for these, and the model would get an empty result as if it had worked.
  if (typeof value === "function" || typeof value === "symbol")
    return toolResult(call, "error", `The tool returned a value that is not JSON: a ${typeof value}.`);
  let content: string | undefined;
  try {
    content = jsonAsWritten(value);
  } catch (error) {
    return toolResult(call, "error", `The tool returned a value that is not JSON: ${errorMessage(error)}`);
  }
  // `undefined`: a tool that returns nothing.
  return toolResult(call, "ok", content ?? "", value);
}

type Outcome =
  | { kind: "resolved"; value: unknown }
  | { kind: "rejected"; error: unknown }
  | { kind: "abandoned" };

/** Waits for the tool; once the run aborts (or its deadline passes) it has `graceMs` to stop. */
function settleOrAbandon(
  execution: unknown,
  then: Then,
  scope: AbortScope,
  graceMs: number,
  deadline: ToolDeadline | undefined,
): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const abandonLater = () => {
      timer ??= setTimeout(() => resolve({ kind: "abandoned" }), graceMs);
    };
    const remove = scope.onAbort(abandonLater);
    const removeExpire = deadline?.onExpire(abandonLater);
    const settle = (outcome: Outcome) => {
      remove();
      removeExpire?.();
      if (timer !== undefined) clearTimeout(timer);
      resolve(outcome);
    };
    try {
      then.call(
        execution,
        (value) => settle({ kind: "resolved", value }),
        (error: unknown) => settle({ kind: "rejected", error }),
      );
    } catch (error) {
      // As with `await`: a `then` that throws rejects, unless it already settled.
      settle({ kind: "rejected", error });
    }
  });
}

type Then = PromiseLike<unknown>["then"];

function thenOf(value: unknown): Then | undefined {
  const then = (value as PromiseLike<unknown> | null | undefined)?.then;
  return typeof then === "function" ? then : undefined;
}
