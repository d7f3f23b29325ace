import { z } from "zod";
import { assistantMessageSchema, toolResultStatusSchema, usageSchema } from "../messages.js";

/** The closed set of ways a run can end. */
export const stopReasonSchema = z.enum([
  "completed",
  "aborted",
  "max_cycles",
  "timeout",
  "stalled",
  "awaiting_client_tool",
  "awaiting_approval",
  "error",
]);
export type StopReason = z.infer<typeof stopReasonSchema>;

/** What the framework adds to every event an orchestrator emits. */
export const envelopeSchema = z.object({
  runId: z.string(),
  /** 0 for `agent_start`, then +1 per event without gaps. */
  seq: z.number().int().nonnegative(),
  /** Unix time in ms. */
  ts: z.number(),
});

/** What a turn or a run spent: model calls, tool calls by status, and where the time went. */
export const runMetricsSchema = z.object({
  cycles: z.number().int().nonnegative(),
  toolCalls: z.partialRecord(toolResultStatusSchema, z.number().int().positive()),
  modelMs: z.number().nonnegative(),
  toolMs: z.number().nonnegative(),
  /** Wall time not spent waiting for the model or the tools. */
  frameworkMs: z.number().nonnegative(),
  usage: usageSchema,
});
export type RunMetrics = z.infer<typeof runMetricsSchema>;

/**
 * An event type's schema: the envelope, the `type` literal and the payload's fields. Core's own
 * events are built with it, and so are a plug-in's, before it registers them (`registerEventSchema`).
 */
export function defineEventSchema<T extends string, Shape extends z.ZodRawShape>(type: T, shape: Shape) {
  return envelopeSchema.extend({ type: z.literal(type), ...shape });
}

const turn = z.number().int().positive();
const index = z.number().int().nonnegative();

/**
 * One schema per core event type, envelope included: `eventSchemas.tool_call.parse(json)`. Plug-ins
 * register theirs with `registerEventSchema`; `parseAgentEvent` knows both.
 */
export const eventSchemas = {
  agent_start: defineEventSchema("agent_start", {}),
  turn_start: defineEventSchema("turn_start", { turn }),
  steering_mode: defineEventSchema("steering_mode", {
    mode: z.enum(["respond", "steer"]),
    queueSize: z.number().int().nonnegative(),
  }),
  thinking: defineEventSchema("thinking", { text: z.string() }),
  tool_call: defineEventSchema("tool_call", {
    toolCallId: z.string(),
    toolName: z.string(),
    args: z.unknown(),
    /** The id the model gave, when it repeated an id already in use (`toolCallId` is then a fresh one). */
    originalToolCallId: z.string().optional(),
    /** `"client"`: a client tool; the run waits for `agent.submitToolResult()` (over HTTP: a hook token). */
    execution: z.literal("client").optional(),
    /** Over HTTP, for a client tool: the single-use token its result is posted with. */
    hookToken: z.string().optional(),
  }),
  tool_result: defineEventSchema("tool_result", {
    toolCallId: z.string(),
    toolName: z.string(),
    status: toolResultStatusSchema,
    result: z.unknown().optional(),
    error: z.string().optional(),
  }),
  text_delta: defineEventSchema("text_delta", { text: z.string(), index }),
  turn_end: defineEventSchema("turn_end", {
    message: assistantMessageSchema,
    durationMs: z.number().nonnegative(),
    metrics: runMetricsSchema.optional(),
  }),
  steering_applied: defineEventSchema("steering_applied", {
    messages: z.array(z.looseObject({ role: z.string() })),
  }),
  context_truncated: defineEventSchema("context_truncated", {
    droppedMessages: z.number().int().nonnegative(),
    estimatedTokens: z.number().nonnegative(),
  }),
  /** A plug-in's own event: `name` says what it is (e.g. "reflect.critique"), `data` carries it. */
  custom: defineEventSchema("custom", { name: z.string().min(1), data: z.unknown().optional() }),
  /**
   * Without `toolCallId`: why the run failed, right before its `agent_end`. With one: a problem of
   * that call only (`tool-timeout`: a client tool never answered), and the run goes on.
   */
  error: defineEventSchema("error", {
    code: z.string(),
    message: z.string(),
    toolCallId: z.string().optional(),
  }),
  agent_end: defineEventSchema("agent_end", {
    stopReason: stopReasonSchema,
    usage: usageSchema,
    durationMs: z.number().nonnegative(),
    metrics: runMetricsSchema.optional(),
    /** `awaiting_approval`: the calls to `approve()` or `deny()`. */
    pendingApprovals: z
      .array(
        z.object({
          toolCallId: z.string(),
          toolName: z.string(),
          args: z.unknown(),
          reason: z.string().optional(),
        }),
      )
      .optional(),
    /** `awaiting_client_tool`: the calls to answer (over HTTP each has its `hookToken`). */
    pendingClientTools: z
      .array(
        z.object({
          toolCallId: z.string(),
          toolName: z.string(),
          args: z.unknown(),
          hookToken: z.string().optional(),
        }),
      )
      .optional(),
  }),
};

type CoreEvents = { [T in keyof typeof eventSchemas]: z.infer<(typeof eventSchemas)[T]> };

/**
 * The events plug-ins add, by type, envelope included. A plug-in fills it in by declaration merging,
 * next to the schemas it registers, so that its events are part of `AgentEvent` wherever it is imported:
 * `declare module "@agent-core/core" { interface PluginEvents { plan_created: PlanCreatedEvent } }`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: plug-ins fill it in by declaration merging.
export interface PluginEvents {}

type Events = CoreEvents & PluginEvents;

export type AgentEventType = keyof Events;
export type AgentEventOf<T extends AgentEventType> = Events[T];
/** Any event of the protocol: core's, and those of the plug-ins this program imports. */
export type AgentEvent = { [T in AgentEventType]: AgentEventOf<T> }[AgentEventType];
export type Envelope = z.infer<typeof envelopeSchema>;

/** What an orchestrator passes to `ctx.emit`: type and payload; the framework adds runId, seq and ts. */
export type EventPayload<T extends AgentEventType> = Omit<AgentEventOf<T>, keyof Envelope>;
export type OrchestratorEvent = { [T in AgentEventType]: EventPayload<T> }[AgentEventType];
