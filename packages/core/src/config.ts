import { type core, z } from "zod";
import {
  AgentConfigError,
  expecting,
  settingsError,
  show,
  unreadableError,
  validate,
} from "./config-issues.js";
import { LONGEST_TIMER_MS } from "./longest-timer.js";
import { agentMessageSchema } from "./messages.js";
import { isLogger } from "./observe/logger.js";
import { hasThenMethod, refusedPromise } from "./run/checked-messages.js";
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

/**
 * A group of settings (`limits`, `timeouts`, …). A key it does not know is refused: it can only be
 * a misspelt setting (`maxCycle`), which would otherwise silently not apply.
 */
function object<Shape extends core.$ZodLooseShape>(shape: Shape, domain = "an object") {
  return settings(closedObject(shape, domain), domain).optional();
}

function closedObject<Shape extends core.$ZodLooseShape>(shape: Shape, domain: string) {
  return z.strictObject(shape, settingsError(domain));
}

/**
 * zod takes a promise for an object whose fields are all optional: settings an async function
 * built, passed without `await`, would silently be none at all. Checked before the object's
 * schema, whose refinements only see the copy it made.
 */
function settings<Schema extends z.ZodType>(schema: Schema, domain: string) {
  return z.custom((value) => !refusedPromise(value), expecting(domain)).pipe(schema);
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

// A key it does not know is refused, as in each group of settings: TypeScript flags a misspelt key
// only in an object literal, and a setting misspelt elsewhere (`sytemPrompt`, `maxCycles` outside
// `limits`) would silently not apply.
const agentConfigSchema = closedObject(
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
          settings(
            closedObject(
              {
                repeatedCalls: wholeAtLeast(2).optional(),
                repeatedResults: wholeAtLeast(2).optional(),
              },
              "false or an object { repeatedCalls?, repeatedResults? }",
            ),
            "false or an object { repeatedCalls?, repeatedResults? }",
          ),
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
    // Passed on to the model call as they are: the provider's settings are open-ended.
    modelSettings: settings(z.object({}, expecting("an object")), "an object").optional(),
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
  "an object",
);

const promptOptionsSchema = closedObject(
  { signal: z.instanceof(AbortSignal, expecting("an AbortSignal")).optional(), timeouts, clientTools },
  "an object",
);

/**
 * Checks every setting of an `AgentConfig` read once already (the agent's own copy, `ownConfig`);
 * throws an `AgentConfigError` naming each bad one.
 */
export function checkOwnAgentConfig(config: unknown): void {
  if (config === undefined) return;
  // The fast path, run by every `new Agent()`: only the settings present are checked, each by its
  // own schema (the whole object's schema visits all of them); a failure reports them all.
  if (typeof config === "object" && config !== null && !Array.isArray(config) && !hasThenMethod(config)) {
    let valid = true;
    for (const key of Object.keys(config)) {
      // A key it does not know (`toString` included: the tables have no prototype) goes to the
      // schema, which names it.
      const schema = AGENT_CONFIG_FIELDS[key];
      if (schema === undefined) {
        valid = false;
        break;
      }
      const value = (config as Record<string, unknown>)[key];
      if (value === undefined) continue;
      // A value its predicate accepts skips zod; the schema decides the others (for most settings
      // it uses the same predicate, for `limits` it takes more shapes than the usual one). Either
      // may read what throws (a provider's or a message's getter): that setting is refused.
      let ok: boolean;
      try {
        ok = FIELD_PREDICATES[key]?.(value) === true || schema.safeParse(value).success;
      } catch (cause) {
        throw unreadableError("agent config", key, cause);
      }
      if (!ok) {
        valid = false;
        break;
      }
    }
    if (valid) return;
  }
  validate(agentConfigSchema, config, "agent config", "config");
}

const AGENT_CONFIG_FIELDS: Record<string, z.ZodType | undefined> = Object.assign(
  Object.create(null),
  agentConfigSchema.shape,
);

const FIELD_PREDICATES: Record<string, ((value: unknown) => boolean) | undefined> = Object.assign(
  Object.create(null),
  {
    systemPrompt: (value: unknown) => typeof value === "string",
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
  },
);

/** `{ maxCycles }` alone, a whole number >= 1 (as `wholeAtLeast(1)` takes it): how most agents set limits. */
function isUsualLimits(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  for (const key in value) if (key !== "maxCycles") return false;
  const { maxCycles } = value as { maxCycles?: unknown };
  return Number.isSafeInteger(maxCycles) && (maxCycles as number) >= 1;
}

/**
 * The provider's fields a run reads besides `doStream` (its events, metrics and traces name the
 * model). Read once here, as the check reads `doStream`: a getter or a proxy that throws on one is
 * refused now, named, rather than failing every run as the orchestrator's error.
 */
const PROVIDER_FIELDS = ["specificationVersion", "provider", "modelId"] as const;

export function checkProviderFields(provider: object): void {
  for (const field of PROVIDER_FIELDS) {
    let value: unknown;
    try {
      value = (provider as Record<string, unknown>)[field];
    } catch (cause) {
      throw unreadableError("agent config", `provider.${field}`, cause);
    }
    // The id goes into every reply of the history (`model`), which must stay a valid transcript.
    if (field === "modelId" && value !== undefined && typeof value !== "string")
      throw new AgentConfigError("agent config", [
        { path: "provider.modelId", message: `must be a string, got ${show(value)}` },
      ]);
  }
}

/**
 * Checks the options of one `prompt()`, read once already (`ownPromptOptions`). It runs on every
 * prompt, so the common cases (no options, or only a signal) return before zod is involved.
 */
export function checkOwnPromptOptions(options: unknown): void {
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
      (signal === undefined || signal instanceof AbortSignal) &&
      !hasThenMethod(options) &&
      hasOnlyPromptOptionKeys(options)
    )
      return;
  }
  validate(promptOptionsSchema, options, "prompt options", "options");
}

/** No key but the options' own (any other goes to the schema, which names it). */
function hasOnlyPromptOptionKeys(options: object): boolean {
  for (const key of Object.keys(options))
    if (key !== "signal" && key !== "timeouts" && key !== "clientTools") return false;
  return true;
}
