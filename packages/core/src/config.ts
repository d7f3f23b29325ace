import { type core, z } from "zod";
import { AgentConfigError, expecting, show, validate } from "./config-issues.js";
import { LONGEST_TIMER_MS } from "./longest-timer.js";
import {
  type AssistantMessage,
  agentMessageSchema,
  type MessageInput,
  type ToolResultMessage,
  toolCallsOf,
} from "./messages.js";
import { isLogger } from "./observe/logger.js";
import { refusedPromise } from "./run/checked-messages.js";
import { validateTranscript } from "./run/transcript.js";
import { ToolRegistry } from "./tools/registry.js";

function numberAbove(minimum: number, domain: string) {
  return z.number(expecting(domain)).gt(minimum, expecting(domain));
}

function numberAtLeast(minimum: number, domain: string) {
  return z.number(expecting(domain)).gte(minimum, expecting(domain));
}

function wholeAtLeast(minimum: number) {
  const domain = `a whole number >= ${minimum}`;
  return z.int(expecting(domain)).gte(minimum, expecting(domain));
}

function object<Shape extends core.$ZodLooseShape>(shape: Shape, domain = "an object") {
  return z.object(shape, expecting(domain)).optional();
}

const isFunction = (value: unknown) => typeof value === "function";
const isProvider = (value: unknown) => hasMethod(value, "doStream");
const isTools = (value: unknown) =>
  Array.isArray(value) || value instanceof ToolRegistry || isToolSetShaped(value);
/** A plain object of objects: an AI SDK ToolSet, whose tools the registry checks one by one. */
const isToolSetShaped = (value: unknown) =>
  typeof value === "object" &&
  value !== null &&
  [Object.prototype, null].includes(Object.getPrototypeOf(value)) &&
  Object.values(value).every((tool) => typeof tool === "object" && tool !== null);
const isOrchestrator = (value: unknown) =>
  (typeof value === "string" && value.trim() !== "") ||
  (hasMethod(value, "run") && typeof (value as { name?: unknown }).name === "string");
const isContainer = (value: unknown) => hasMethod(value, "createChildContainer");
const isHistory = (value: unknown) =>
  Array.isArray(value) &&
  value.every((message) => agentMessageSchema.safeParse(message).success) &&
  validateTranscript(value).length === 0;

const fn = z.custom(isFunction, expecting("a function")).optional();
const string = z.string(expecting("a string")).optional();
const TIMER_DOMAIN = `<= ${LONGEST_TIMER_MS} (milliseconds)`;

function delayAbove(minimum: number) {
  const domain = `a number > ${minimum} and ${TIMER_DOMAIN}`;
  return numberAbove(minimum, domain).lte(LONGEST_TIMER_MS, expecting(domain));
}

function delayAtLeast(minimum: number) {
  const domain = `a number >= ${minimum} and ${TIMER_DOMAIN}`;
  return numberAtLeast(minimum, domain).lte(LONGEST_TIMER_MS, expecting(domain));
}

const ms = delayAbove(0).optional();

function hasMethod(value: unknown, method: string): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Record<string, unknown>)[method] === "function"
  );
}

const timeouts = object({
  totalMs: ms,
  stepMs: ms,
  firstChunkMs: ms,
  chunkMs: ms,
  toolMs: ms,
  clientToolMs: ms,
  tools: z.record(z.string(), delayAbove(0), expecting("an object of tool name → milliseconds")).optional(),
});

const clientTools = z.enum(["wait", "suspend"], expecting('"wait" or "suspend"')).optional();

// Unknown keys are allowed: a config may come from a newer version or carry an app's own settings,
// and TypeScript already flags a misspelt key in a literal.
const agentConfigSchema = z.object(
  {
    systemPrompt: string,
    messages: z
      .custom(
        isHistory,
        expecting("an array of messages that is a valid transcript (see validateTranscript)"),
      )
      .optional(),
    provider: z
      .custom(
        isProvider,
        expecting("an AI SDK LanguageModel (an object with a doStream method, e.g. openai('gpt-4o'))"),
      )
      .optional(),
    tools: z
      .custom(
        isTools,
        expecting("an array of tools, an AI SDK ToolSet ({ name: tool({ … }) }) or a ToolRegistry"),
      )
      .optional(),
    orchestrator: z
      .custom(isOrchestrator, {
        // An async factory's result passed as it is: say so, as the registry does of a factory
        // that returns one (the agent is built synchronously, it cannot wait for it).
        error: (issue) =>
          refusedPromise(issue.input)
            ? "the orchestrator itself, not a promise of it (await it first, or do async set-up in run)"
            : "a registered orchestrator's name or an Orchestrator object, which needs a run(ctx) method and a string name",
      })
      .optional(),
    limits: object({
      maxCycles: wholeAtLeast(1).optional(),
      abortGraceMs: delayAtLeast(0).optional(),
    }),
    timeouts,
    toolExecution: z.enum(["sequential", "parallel"], expecting('"sequential" or "parallel"')).optional(),
    clientTools,
    maxConcurrency: wholeAtLeast(1).optional(),
    stall: z
      .union(
        [
          z.literal(false),
          z.object({
            repeatedCalls: wholeAtLeast(2).optional(),
            repeatedResults: wholeAtLeast(2).optional(),
          }),
        ],
        expecting("false or an object { repeatedCalls?, repeatedResults? }"),
      )
      .optional(),
    retry: object({
      maxRetries: wholeAtLeast(0).optional(),
      initialDelayMs: delayAtLeast(0).optional(),
      maxDelayMs: delayAtLeast(0).optional(),
      retryTimeouts: z.boolean(expecting("a boolean")).optional(),
    }),
    contextBudget: object({
      maxTokens: numberAbove(0, "a number > 0 (tokens)").optional(),
      contextWindow: numberAbove(0, "a number > 0 (tokens)").optional(),
      ratio: numberAbove(0, "a number > 0 and <= 1").lte(1, expecting("a number > 0 and <= 1")).optional(),
      systemTokens: numberAtLeast(0, "a number >= 0 (tokens)").optional(),
      estimate: fn,
      onTruncate: fn,
    }),
    modelSettings: object({}),
    container: z
      .custom(isContainer, expecting("a tsyringe DependencyContainer (an object with createChildContainer)"))
      .optional(),
    beforeToolCall: fn,
    afterToolCall: fn,
    prepareStep: fn,
    shouldStop: fn,
    repairToolCall: fn,
    transformContext: fn,
    convertToLlm: fn,
    getSteeringMessages: fn,
    getFollowUpMessages: fn,
    onListenerError: fn,
    logger: z.custom(isLogger, expecting("a logger (an object with error, warn, info and debug)")).optional(),
  },
  expecting("an object"),
);

const promptOptionsSchema = z.object(
  { signal: z.instanceof(AbortSignal, expecting("an AbortSignal")).optional(), timeouts, clientTools },
  expecting("an object"),
);

/** Checks every setting of an `AgentConfig`; throws an `AgentConfigError` naming each bad one. */
export function validateAgentConfig(config: unknown): void {
  if (config === undefined) return;
  // The fast path, run by every `new Agent()`: only the settings present are checked, each by its
  // own schema (the whole object's schema visits all of them); a failure reports them all.
  if (typeof config === "object" && config !== null && !Array.isArray(config)) {
    let valid = true;
    for (const key of Object.keys(config)) {
      const value = (config as Record<string, unknown>)[key];
      if (value === undefined) continue;
      // A value its predicate accepts skips zod; the schema decides the others (for most settings
      // it uses the same predicate, for `limits` it takes more shapes than the usual one).
      const ok =
        FIELD_PREDICATES[key]?.(value) === true ||
        (AGENT_CONFIG_FIELDS[key]?.safeParse(value).success ?? true);
      if (!ok) {
        valid = false;
        break;
      }
    }
    if (valid) return;
  }
  validate(agentConfigSchema, config, "agent config", "config");
}

const AGENT_CONFIG_FIELDS: Record<string, z.ZodType | undefined> = agentConfigSchema.shape;

const FIELD_PREDICATES: Record<string, ((value: unknown) => boolean) | undefined> = {
  systemPrompt: (value) => typeof value === "string",
  messages: isHistory,
  provider: isProvider,
  tools: isTools,
  orchestrator: isOrchestrator,
  container: isContainer,
  beforeToolCall: isFunction,
  afterToolCall: isFunction,
  prepareStep: isFunction,
  shouldStop: isFunction,
  repairToolCall: isFunction,
  transformContext: isFunction,
  convertToLlm: isFunction,
  getSteeringMessages: isFunction,
  getFollowUpMessages: isFunction,
  onListenerError: isFunction,
  logger: isLogger,
  limits: isUsualLimits,
};

/** `{ maxCycles }` alone, a whole number >= 1 (as `wholeAtLeast(1)` takes it): how most agents set limits. */
function isUsualLimits(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  for (const key in value) if (key !== "maxCycles") return false;
  const { maxCycles } = value as { maxCycles?: unknown };
  return Number.isSafeInteger(maxCycles) && (maxCycles as number) >= 1;
}

/**
 * Checks the options of one `prompt()`. It runs on every prompt, so the common cases (no options,
 * or only a signal) return before zod is involved.
 */
export function validatePromptOptions(options: unknown): void {
  if (options === undefined) return;
  if (typeof options === "object" && options !== null) {
    const { signal, timeouts, clientTools } = options as {
      signal?: unknown;
      timeouts?: unknown;
      clientTools?: unknown;
    };
    if (
      timeouts === undefined &&
      clientTools === undefined &&
      (signal === undefined || signal instanceof AbortSignal)
    )
      return;
  }
  validate(promptOptionsSchema, options, "prompt options", "options");
}

const messageInputSchema = z.custom(
  (value) => typeof value === "string" || agentMessageSchema.safeParse(value).success,
  expecting('a string or an AgentMessage (e.g. { role: "user", content: "…" })'),
);

/**
 * Checks one message given to `prompt()`, `steer()` or `followUp()` (`what` names it in the error),
 * as `new Agent()` checks `config.messages`: a bad one must not enter the history or the queues.
 */
export function validateMessageInput(input: unknown, what: string): void {
  if (typeof input === "string") return;
  validate(messageInputSchema, input, what, "message");
}

/**
 * Checks a message for the steering or follow-up queue: as `validateMessageInput`, and neither a
 * tool result, which only a run may add (every call is answered by then, so it would answer none),
 * nor an assistant message with a tool call, which only the model makes (a queued one would reach
 * the history with no result, and one whose id the history uses would be refused): queued, it
 * would fail the run that applies it and, put back, every run after that one.
 */
export function validateQueuedMessage(input: unknown, what: string): void {
  validateMessageInput(input, what);
  if (typeof input !== "object") return;
  const message = input as { role?: unknown; toolCallId?: unknown };
  if (message.role === "toolResult")
    throw new AgentConfigError(what, [
      {
        path: "message",
        message: `must not be a tool result: only a run answers the model's tool calls, got the result of ${show(message.toolCallId)}`,
      },
    ]);
  const call = message.role === "assistant" ? toolCallsOf(input as AssistantMessage)[0] : undefined;
  if (call !== undefined)
    throw new AgentConfigError(what, [
      {
        path: "message",
        message: `must not hold a tool call: only the model's replies make tool calls, got the call ${show(call.id)}`,
      },
    ]);
}

/**
 * Checks the tool calls and results among a prompt's messages (each one already checked by
 * `validateMessageInput`): each call has an id of its own in the prompt (whether the history uses
 * it is asked when the run starts: the history can change while the prompt waits its turn). The
 * prompt enters the history once every call in it is answered (a new prompt denies or fails what
 * a suspended batch still waits for), so a result can only answer a call of an assistant message
 * before it in the prompt, still open: the history would refuse any other midway through the
 * prompt, and the run end with `invalid_history`.
 */
export function validatePromptToolResults(inputs: readonly MessageInput[]): void {
  // Mirrors the history's own rule: a user or assistant message closes the calls still open.
  let open: Set<string> | undefined;
  // Every call id of the prompt: the history refuses a second call of one id.
  let ids: Set<string> | undefined;
  for (const input of inputs) {
    if (typeof input === "string" || input.role === "user") open = undefined;
    else if (input.role === "assistant") {
      open = new Set();
      for (const { id } of toolCallsOf(input as AssistantMessage)) {
        ids ??= new Set();
        if (ids.has(id))
          throw new AgentConfigError("prompt", [
            {
              path: "message",
              message: `must give each tool call its own id, got a second call of id ${show(id)}`,
            },
          ]);
        ids.add(id);
        open.add(id);
      }
    } else if (input.role === "toolResult") {
      const { toolCallId } = input as ToolResultMessage;
      if (open?.delete(toolCallId) !== true)
        throw new AgentConfigError("prompt", [
          {
            path: "message",
            message: `must answer a tool call of an assistant message before it in the prompt (only a run answers the calls of the history), got the result of ${show(toolCallId)}`,
          },
        ]);
    }
  }
}

const callbackResultSchema = z.array(z.unknown(), expecting("an array of messages or undefined"));

/**
 * Checks what a `getSteeringMessages` or `getFollowUpMessages` callback returned (`what` names it),
 * as `steer()` and `followUp()` check their message: a bad one must not enter the history or the
 * queues, where it would fail every later run. `undefined` (and `null`) is nothing to add.
 */
export function validateCallbackMessages(result: unknown, what: string): void {
  if (result === undefined || result === null) return;
  if (!Array.isArray(result)) validate(callbackResultSchema, result, `${what} result`, "result");
  for (const input of result as unknown[]) validateQueuedMessage(input, `message from ${what}`);
}
