// Between `RunServices` and a `ToolBatch`: what every batch of a run works with, and what a batch
// gives back.

import type { StallError } from "../errors.js";
import type { AgentMessage, ToolCall, ToolResultMessage } from "../messages.js";
import type { AbortScope } from "../model/abortable.js";
import type { ToolCallContext } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { StallDetector } from "../tools/stall-detector.js";
import { hasThenMethod } from "./checked-messages.js";
import type { ClientToolCalls } from "./client-tools.js";
import type { EventPublisher } from "./event-publisher.js";
import type { AgentHooks } from "./hooks.js";
import type { MessageInbox } from "./message-queue.js";
import type { ToolRunner } from "./services.js";
import type { Suspension } from "./suspension.js";
import type { TranscriptWriter } from "./transcript-keeper.js";

export interface ToolTimeouts {
  toolMs?: number;
  /** Per tool name; wins over `toolMs` and `clientToolMs`. */
  tools?: Record<string, number>;
  /** How long a client tool call waits for its result (default 60 s); then it ends as `timeout`. */
  clientToolMs?: number;
}

/** `clientToolMs` when it is not set. */
const CLIENT_TOOL_MS = 60_000;

/**
 * The time limit of one call of the tool `name`. `tools` is read by its own keys only: a tool named
 * like an Object method ("constructor", "toString") must not get the inherited function as its limit.
 */
export function toolTimeoutMs(timeouts: ToolTimeouts, name: string, client: boolean): number | undefined {
  const { tools } = timeouts;
  if (tools !== undefined && Object.hasOwn(tools, name)) return tools[name];
  return client ? (timeouts.clientToolMs ?? CLIENT_TOOL_MS) : timeouts.toolMs;
}

/** What every batch of a run works with; built once per run. */
export interface BatchSetup {
  readonly runId: string;
  readonly tools: ToolRegistry;
  readonly runner: ToolRunner;
  /** Where client tool calls wait for their results. */
  readonly clientTools: ClientToolCalls;
  /** `clientTools: "suspend"`: a batch with client calls suspends instead of waiting in the run. */
  readonly suspendForClientTools: boolean;
  readonly scope: AbortScope;
  readonly graceMs: number;
  readonly timeouts: ToolTimeouts;
  readonly hooks: AgentHooks;
  readonly steering: MessageInbox;
  readonly stall: StallDetector | undefined;
  /** Calls of a model reply that was cut off: their arguments may be incomplete. */
  readonly cutOffCalls: ReadonlySet<string>;
  readonly events: EventPublisher;
  readonly transcript: TranscriptWriter;
}

/** What a batch returns: its results, or the calls it waits on. */
export type BatchOutcome =
  | {
      kind: "done";
      /** One result per call, in call order. */
      results: ToolResultMessage[];
      /** Steering messages taken during the batch (not yet in the history). */
      steering: AgentMessage[];
      /** Set when the batch noticed the run going in circles. */
      stall: StallError | undefined;
    }
  | { kind: "suspended"; suspension: Suspension };

/** The error a call of `cutOffCalls` gets as its result instead of running. */
export const CUT_OFF =
  "not run: the model's reply was cut off (finish reason: length), so these arguments may be incomplete. Make a shorter call, or raise maxOutputTokens.";

/** What the hooks are told about a call of the batch (`beforeToolCall`, `afterToolCall`). */
export function callContext(setup: BatchSetup, call: ToolCall): ToolCallContext {
  return {
    runId: setup.runId,
    call,
    tool: setup.tools.get(call.name),
    messages: setup.transcript.keeper.messages,
  };
}

/** Why a batch stops early: a stall, or a fatal tool error. */
export type BatchStop = { reason: "stall"; error: StallError } | { reason: "fatal"; message: string };

/**
 * What the tool runner (`TOOL_RUNNER`, a runtime's replay or recording) gave for `call`: anything
 * but this call's tool result fails the batch, as a runner that throws does, rather than leave the
 * call to be closed as "not completed" at the run's end.
 */
export function checkedResult(call: ToolCall, result: ToolResultMessage): ToolResultMessage {
  const value = result as Partial<ToolResultMessage> | null;
  if (
    typeof value === "object" &&
    value !== null &&
    value.role === "toolResult" &&
    value.toolCallId === call.id
  )
    return result;
  const got =
    typeof value !== "object" || value === null
      ? String(value)
      : value.role !== "toolResult"
        ? "an object that is no tool result message"
        : `the result of call "${String(value.toolCallId)}"`;
  throw new TypeError(`The tool runner (the TOOL_RUNNER service) gave ${got} for call "${call.id}".`);
}

/**
 * What an orchestrator's `beforeEach` or `afterEach` returned, which the contract has synchronous:
 * one that returns a promise (an async function) would have the batch go on without waiting for
 * it, and its rejection would be unhandled (a process that has Node's default ends). Refused as a
 * hook that throws is, its rejection handled: the refusal already says what went wrong.
 */
export function checkHookReturn(hook: "beforeEach" | "afterEach", returned: unknown): void {
  if (returned === undefined || !hasThenMethod(returned)) return;
  try {
    returned.then(undefined, () => {});
  } catch {
    // A `then` that throws: there is no rejection to handle.
  }
  throw new TypeError(
    `ctx.executeTools()'s ${hook} returned a promise: the batch's hooks run synchronously (do async work before or after the batch).`,
  );
}
