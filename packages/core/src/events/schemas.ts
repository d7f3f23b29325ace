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

const planStepSchema = z.object({
  id: z.string().optional(),
  tool: z.string(),
  args: z.unknown(),
  dependsOn: z.array(z.string()).optional(),
});

function eventSchema<T extends string, Shape extends z.ZodRawShape>(type: T, shape: Shape) {
  return envelopeSchema.extend({ type: z.literal(type), ...shape });
}

const turn = z.number().int().positive();
const index = z.number().int().nonnegative();
const stepCount = z.number().int().nonnegative();

/** One schema per event type, envelope included: `eventSchemas.tool_call.parse(json)`. */
export const eventSchemas = {
  agent_start: eventSchema("agent_start", {}),
  turn_start: eventSchema("turn_start", { turn }),
  steering_mode: eventSchema("steering_mode", {
    mode: z.enum(["respond", "steer"]),
    queueSize: z.number().int().nonnegative(),
  }),
  thinking: eventSchema("thinking", { text: z.string() }),
  tool_call: eventSchema("tool_call", {
    toolCallId: z.string(),
    toolName: z.string(),
    args: z.unknown(),
    /** The id the model gave, when it repeated an id already in use (`toolCallId` is then a fresh one). */
    originalToolCallId: z.string().optional(),
  }),
  tool_result: eventSchema("tool_result", {
    toolCallId: z.string(),
    toolName: z.string(),
    status: toolResultStatusSchema,
    result: z.unknown().optional(),
    error: z.string().optional(),
  }),
  text_delta: eventSchema("text_delta", { text: z.string(), index }),
  turn_end: eventSchema("turn_end", {
    message: assistantMessageSchema,
    durationMs: z.number().nonnegative(),
    metrics: runMetricsSchema.optional(),
  }),
  plan_created: eventSchema("plan_created", { steps: z.array(planStepSchema) }),
  plan_step_start: eventSchema("plan_step_start", { index, stepCount, tool: z.string(), args: z.unknown() }),
  plan_step_end: eventSchema("plan_step_end", {
    index,
    stepCount,
    tool: z.string(),
    args: z.unknown(),
    result: z.unknown().optional(),
    error: z.string().optional(),
  }),
  steering_applied: eventSchema("steering_applied", {
    messages: z.array(z.looseObject({ role: z.string() })),
  }),
  context_truncated: eventSchema("context_truncated", {
    droppedMessages: z.number().int().nonnegative(),
    estimatedTokens: z.number().nonnegative(),
  }),
  /** A plug-in's own event: `name` says what it is (e.g. "reflect.critique"), `data` carries it. */
  custom: eventSchema("custom", { name: z.string().min(1), data: z.unknown().optional() }),
  error: eventSchema("error", { code: z.string(), message: z.string() }),
  agent_end: eventSchema("agent_end", {
    stopReason: stopReasonSchema,
    usage: usageSchema,
    durationMs: z.number().nonnegative(),
    metrics: runMetricsSchema.optional(),
  }),
};

export type AgentEventType = keyof typeof eventSchemas;

/** Any event of the protocol. */
export const agentEventSchema = z.discriminatedUnion(
  "type",
  Object.values(eventSchemas) as [
    (typeof eventSchemas)[AgentEventType],
    ...(typeof eventSchemas)[AgentEventType][],
  ],
);

export type AgentEventOf<T extends AgentEventType> = z.infer<(typeof eventSchemas)[T]>;
export type AgentEvent = { [T in AgentEventType]: AgentEventOf<T> }[AgentEventType];
export type Envelope = z.infer<typeof envelopeSchema>;

/** What an orchestrator passes to `ctx.emit`: type and payload; the framework adds runId, seq and ts. */
export type EventPayload<T extends AgentEventType> = Omit<AgentEventOf<T>, keyof Envelope>;
export type OrchestratorEvent = { [T in AgentEventType]: EventPayload<T> }[AgentEventType];
