import { type StopReason, stopReasonSchema } from "./events/schemas.js";

/** Every failure the framework reports is an `AgentError`: a stable `code` and the run's stop reason. */
export class AgentError extends Error {
  readonly code: string;
  readonly stopReason: StopReason;

  constructor(code: string, message: string, options?: { cause?: unknown; stopReason?: StopReason }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.stopReason = options?.stopReason ?? "error";
  }
}

export class AbortedError extends AgentError {
  constructor(reason?: unknown) {
    super("aborted", abortMessage(reason), { stopReason: "aborted", cause: reason });
  }
}

export class MaxCyclesExceededError extends AgentError {
  readonly maxCycles: number;
  constructor(maxCycles: number) {
    super(
      "max_cycles",
      `The run reached its limit of ${maxCycles} model ${maxCycles === 1 ? "call" : "calls"} (limits.maxCycles).`,
      {
        stopReason: "max_cycles",
      },
    );
    this.maxCycles = maxCycles;
  }
}

export type TimeoutKind = "total" | "step" | "firstChunk" | "chunk" | "tool";

/**
 * A time limit of `timeouts` ran out. A model or total timeout ends the run as `timeout`. `setting`
 * is the option the user set, for a limit a server sets on its agents' runs (`runTimeoutMs`).
 */
export class TimeoutError extends AgentError {
  readonly kind: TimeoutKind;
  readonly ms: number;
  constructor(kind: TimeoutKind, ms: number, what = TIMEOUT_WHAT[kind], setting = `timeouts.${kind}Ms`) {
    super("timeout", `${what} took longer than ${ms} ms (${setting}).`, { stopReason: "timeout" });
    this.kind = kind;
    this.ms = ms;
  }
}

const TIMEOUT_WHAT: Record<TimeoutKind, string> = {
  total: "The run",
  step: "A model call",
  firstChunk: "The model's first chunk",
  chunk: "The gap between two chunks of the model",
  tool: "A tool",
};

/** The run went in circles: the same call or the same result again after a warning. */
export class StallError extends AgentError {
  constructor(detail: string) {
    super("stalled", `The run stalled: ${detail}`, { stopReason: "stalled" });
  }
}

/** The model's reply had no text, no reasoning and no tool call. */
export class EmptyResponseError extends AgentError {
  constructor(finishReason: string) {
    super("empty_response", `The model returned nothing (finish reason: ${finishReason}).`);
  }
}

/** A tool call needs the app's approval: the run ends until `agent.approve()` or `deny()`. */
export class AwaitingApprovalError extends AgentError {
  readonly calls: readonly { id: string; name: string; args: unknown; reason?: string }[];
  constructor(calls: readonly { id: string; name: string; args: unknown; reason?: string }[]) {
    super(
      "awaiting_approval",
      `Waiting for approval of ${calls.map((c) => `"${c.name}" (${c.id})`).join(", ")}.`,
      {
        stopReason: "awaiting_approval",
      },
    );
    this.calls = calls;
  }
}

/**
 * Client tool calls wait for their results outside the run (`clientTools: "suspend"`): the run
 * ends until `agent.submitToolResult()` has one for each.
 */
export class AwaitingClientToolError extends AgentError {
  readonly calls: readonly { id: string; name: string; args: unknown }[];
  constructor(calls: readonly { id: string; name: string; args: unknown }[]) {
    super(
      "awaiting_client_tool",
      `Waiting for the results of client tool calls ${calls.map((c) => `"${c.name}" (${c.id})`).join(", ")}.`,
      { stopReason: "awaiting_client_tool" },
    );
    this.calls = calls;
  }
}

/** `shouldStop` asked to end the run; it ends as completed. */
export class StopRequestedError extends AgentError {
  constructor() {
    super("stop_requested", "shouldStop ended the run.", { stopReason: "completed" });
  }
}

/** A write that would break the history's rules (a duplicate tool-call id, a result that answers nothing). */
export class InvalidHistoryError extends AgentError {
  constructor(detail: string) {
    super("invalid_history", `Invalid history: ${detail}`);
  }
}

/** Throw it from a tool to stop the batch: running siblings are aborted, queued ones skipped. */
export class FatalToolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FatalToolError";
  }
}

/** The model provider failed (HTTP error, stream error part, malformed stream) after any retries. */
export class ProviderError extends AgentError {
  readonly retryable: boolean;
  constructor(message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super("provider_error", message, { cause: options.cause });
    this.retryable = options.retryable ?? false;
  }
}

export class NoProviderError extends AgentError {
  constructor() {
    super(
      "no_provider",
      "This agent has no provider: pass `provider` (an AI SDK LanguageModel) to new Agent().",
    );
  }
}

export class UnknownOrchestratorError extends AgentError {
  readonly orchestrator: string;
  constructor(name: string, registered: readonly string[]) {
    const known = registered.length > 0 ? registered.map((n) => `"${n}"`).join(", ") : "none";
    const trimmed = name.trim();
    // " agentic " for "agentic": the name is registered, and no package import would help.
    const message =
      trimmed !== name && registered.includes(trimmed)
        ? `Unknown orchestrator "${name}": names are matched exactly, and "${trimmed}" (without the whitespace) is registered. Registered orchestrators: ${known}.`
        : `Unknown orchestrator "${name}". Registered orchestrators: ${known}. Did you import its package (for example \`import "@agent-core/${trimmed}"\`)?`;
    super("unknown_orchestrator", message);
    this.orchestrator = name;
  }
}

export class NoOrchestratorError extends AgentError {
  constructor() {
    super(
      "no_orchestrator",
      'No orchestrator given and no default registered: import `Agent` from "agent-core" (it registers the default), add `import "@agent-core/agentic"`, or pass `orchestrator`.',
    );
  }
}

export class DuplicateToolError extends AgentError {
  constructor(name: string) {
    super("duplicate_tool", `A tool named "${name}" is already registered; tool names must be unique.`);
  }
}

export class InvalidConfigError extends AgentError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("invalid_config", message, options);
  }
}

/** `agent.submitToolResult()` for a call that does not wait for one (unknown, answered, or ended). */
export class ClientToolError extends AgentError {
  constructor(message: string) {
    super("client_tool", message);
  }
}

export class AgentBusyError extends AgentError {
  constructor(action: string) {
    super("agent_busy", `Cannot ${action} while a run is in progress; abort it or await run.result() first.`);
  }
}

/** `ctx.generateObject` got no valid object from the model. */
export class StructuredOutputError extends AgentError {
  readonly attempts: number;
  readonly text: string;
  constructor(attempts: number, problem: string, text: string) {
    super(
      "invalid_structured_output",
      `The model did not return a valid object after ${attempts} ${attempts === 1 ? "attempt" : "attempts"}: ${problem}`,
    );
    this.attempts = attempts;
    this.text = text;
  }
}

/** An orchestrator emitted an event whose ordering the framework guarantees through a service. */
export class ReservedEventError extends AgentError {
  constructor(type: string, service: string) {
    super("reserved_event", `Orchestrators cannot emit "${type}" events: they come from ${service}.`);
  }
}

/** An orchestrator (or a callback it called) threw something that is not an `AgentError`. */
export class OrchestratorError extends AgentError {
  constructor(orchestrator: string, cause: unknown) {
    super("orchestrator_error", `Orchestrator "${orchestrator}" failed: ${errorMessage(cause)}`, { cause });
  }
}

/** The error a run ends with when its signal aborted: the reason itself when it is an AgentError (a timeout). */
export function abortError(reason: unknown): AgentError {
  return endsRunAsItSays(reason) ? reason : new AbortedError(reason);
}

/** The stop reasons an error can end a run with: a run ends awaiting only when a batch suspended. */
const FAILURE_ENDINGS: ReadonlySet<string> = new Set(
  stopReasonSchema.options.filter(
    (reason) => reason !== "awaiting_approval" && reason !== "awaiting_client_tool",
  ),
);

/**
 * An `AgentError` a run can end with as it says: a code and a message of text, and a stop reason
 * an error can end a run with. One made up otherwise (thrown by an orchestrator or a provider, or
 * given as an abort's reason) would make an `error` or `agent_end` event no consumer accepts, or
 * an `awaiting_approval` ending with nothing to approve: the run takes it as any other value thrown.
 */
export function endsRunAsItSays(value: unknown): value is AgentError {
  return runEndingOf(value) !== undefined;
}

/** How an error ends a run: the error, and its fields as they were read, once. */
export interface RunEnding {
  readonly error: AgentError;
  readonly code: string;
  readonly message: string;
  readonly stopReason: StopReason;
}

/**
 * The ending `value` gives a run when it ends the run as it says (see `endsRunAsItSays`), else
 * `undefined`. Its fields are read once: a getter that answers otherwise on a later read (or
 * throws then) cannot make the run report one ending and end with another, or fail as it ends.
 */
export function runEndingOf(value: unknown): RunEnding | undefined {
  if (!isAgentError(value)) return undefined;
  try {
    const { code, message, stopReason } = value;
    if (
      typeof code === "string" &&
      code !== "" &&
      typeof message === "string" &&
      FAILURE_ENDINGS.has(stopReason)
    )
      return { error: value, code, message, stopReason };
  } catch {
    // A getter that throws: nothing the run can report as it is.
  }
  return undefined;
}

/**
 * `value instanceof AgentError`, for anything thrown or given as a reason: `instanceof` itself
 * throws for a Proxy whose prototype trap throws (or a revoked one), and such a value is no
 * `AgentError`.
 */
export function isAgentError(value: unknown): value is AgentError {
  try {
    return value instanceof AgentError;
  } catch {
    return false;
  }
}

/** A readable, non-empty text for anything thrown ("undefined", "Symbol(x)", "TypeError"); never throws. */
export function errorMessage(error: unknown): string {
  if (typeof error === "string" && error !== "") return error;
  // Any of these may throw (a getter, `toJSON` or `toString` that throws) or give no text at all.
  const describers = [
    () => (error instanceof Error ? error.message : undefined),
    // An Error without a message still names its class; a plain subclass keeps the name "Error".
    () =>
      error instanceof Error ? (error.name !== "Error" && error.name) || error.constructor.name : undefined,
    () => JSON.stringify(error),
    () => String(error),
  ];
  for (const describe of describers) {
    try {
      const text = describe();
      if (typeof text === "string" && text !== "") return text;
    } catch {
      // Try the next way of describing it.
    }
  }
  return "a thrown value that cannot be described";
}

function abortMessage(reason: unknown): string {
  if (reason === undefined || isDefaultAbortReason(reason)) return "The run was aborted.";
  return `The run was aborted: ${errorMessage(reason)}`;
}

/**
 * The reason `AbortController.abort()` gives when none is passed (an AbortError with the
 * platform's text); never throws. An AbortError with text of its own is a reason given, and kept.
 */
function isDefaultAbortReason(reason: unknown): boolean {
  try {
    return reason instanceof Error && reason.name === "AbortError" && reason.message === defaultAbortText();
  } catch {
    return false;
  }
}

let defaultAbortTextOnce: string | undefined;

/** The text of the platform's own abort reason ("This operation was aborted" in Node), read once. */
function defaultAbortText(): string {
  if (defaultAbortTextOnce === undefined) {
    const controller = new AbortController();
    controller.abort();
    defaultAbortTextOnce = (controller.signal.reason as Error).message;
  }
  return defaultAbortTextOnce;
}
