import type { LanguageModelV4, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { z } from "zod";
import type { AgentEvent, AgentEventOf, AgentEventType, OrchestratorEvent } from "../events/schemas.js";
import type { AssistantMessage, ToolCall, Usage } from "../messages.js";
import { AbortScope } from "../model/abortable.js";
import type { ModelStepRequest, ModelStepResult } from "../model/stream-step.js";
import { rootContainer } from "../orchestrator/registry.js";
import { defineTool, type Tool } from "../tools/define-tool.js";
import { ToolRegistry } from "../tools/registry.js";
import { ClientToolCalls } from "./client-tools.js";
import { defaultToolRunner } from "./default-services.js";
import { EventPublisher } from "./event-publisher.js";
import { MessageInbox, MessageQueue } from "./message-queue.js";
import { MetricsRecorder } from "./metrics.js";
import { RunLog } from "./run-log.js";
import type { RunSetup } from "./run-setup.js";
import type { Clock, ModelStep } from "./services.js";
import { TranscriptKeeper } from "./transcript-keeper.js";

/**
 * Shared builders for the unit tests of the rooms of a run (not a test file: vitest collects only
 * `*.test.ts`). Everything is in memory and deterministic: a hand-moved clock, a scripted model
 * step, tools the test releases by hand.
 */

/** A clock that moves only when the test says so; `now` and `monotonic` move together. */
export class FakeClock implements Clock {
  #now: number;
  #monotonic = 0;

  constructor(start = 1_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  monotonic(): number {
    return this.#monotonic;
  }

  advance(ms: number): void {
    this.#now += ms;
    this.#monotonic += ms;
  }
}

export const usage = (inputTokens: number, outputTokens: number): Usage => ({
  inputTokens,
  outputTokens,
  totalTokens: inputTokens + outputTokens,
});

/** A model reply that answers with text. */
export function textReply(
  text: string,
  options: { finishReason?: string; usage?: Usage } = {},
): ModelStepResult {
  return {
    content: text === "" ? [] : [{ type: "text", text }],
    toolCalls: [],
    finishReason: options.finishReason ?? "stop",
    usage: options.usage ?? usage(10, 5),
    modelId: "stub-model",
  };
}

/** A model reply that calls tools (after an optional text). */
export function callsReply(
  calls: readonly ToolCall[],
  options: { text?: string; finishReason?: string; usage?: Usage } = {},
): ModelStepResult {
  const blocks = calls.map((call) => ({
    type: "toolCall" as const,
    id: call.id,
    name: call.name,
    args: call.args,
  }));
  return {
    content: options.text ? [{ type: "text", text: options.text }, ...blocks] : blocks,
    toolCalls: calls.map((call) => ({ ...call })),
    finishReason: options.finishReason ?? "tool-calls",
    usage: options.usage ?? usage(10, 5),
    modelId: "stub-model",
  };
}

export const call = (id: string, name = "echo", args: unknown = { text: id }): ToolCall => ({
  id,
  name,
  args,
});

/** The assistant message that made `calls`: appended first, so the calls are open in the history. */
export const assistantCalling = (calls: readonly ToolCall[]): AssistantMessage => ({
  role: "assistant",
  content: calls.map((c) => ({ type: "toolCall" as const, id: c.id, name: c.name, args: c.args })),
  stopReason: "toolUse",
});

export const answer = (text: string): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text }],
  stopReason: "stop",
});

export type ScriptedReply =
  | ModelStepResult
  | Error
  | ((request: ModelStepRequest) => ModelStepResult | Promise<ModelStepResult>);

/**
 * A model step that answers with the given replies in turn, passing their text and reasoning to
 * the request as the real step would; it keeps every request it got.
 */
export function scriptedStep(...replies: ScriptedReply[]): ModelStep & { requests: ModelStepRequest[] } {
  const requests: ModelStepRequest[] = [];
  return {
    requests,
    async run(request) {
      requests.push(request);
      const next = replies.shift();
      if (next === undefined) throw new Error(`no scripted reply left for model call ${requests.length}`);
      if (next instanceof Error) throw next;
      const result = typeof next === "function" ? await next(request) : next;
      for (const block of result.content)
        if (block.type === "text") request.onText?.(block.text);
        else if (block.type === "thinking") request.onReasoning?.(block.text);
      return result;
    },
  };
}

/** A v4 model that streams `text` for every call and counts its calls. */
export function streamingModel(text: string): LanguageModelV4 & { calls: number } {
  const model = {
    specificationVersion: "v4" as const,
    provider: "stub",
    modelId: "stub-model",
    supportedUrls: {},
    calls: 0,
    doGenerate: () => Promise.reject(new Error("doGenerate is not used")),
    doStream: () => {
      model.calls++;
      const parts: LanguageModelV4StreamPart[] = [
        { type: "text-delta", id: "t", delta: text },
        {
          type: "finish",
          finishReason: { unified: "stop", raw: "stop" },
          usage: {
            inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: 2, text: 2, reasoning: undefined },
          },
        },
      ];
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      });
      return Promise.resolve({ stream });
    },
  };
  return model as LanguageModelV4 & { calls: number };
}

/** `echo`: synchronous, returns its text. */
export const echoTool = defineTool({
  name: "echo",
  description: "Returns its text.",
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

/**
 * An asynchronous tool the test finishes by hand: `release(id)` resolves call `id` with
 * `done <id>`, `fail(id, error)` rejects it. A call rejects with the abort reason when its signal
 * aborts. `started` lists the calls that began, in order; `aborted` those whose signal aborted.
 */
export function manualTool(name: string, options: { sequential?: boolean } = {}) {
  const pending = new Map<string, { resolve: (value: string) => void; reject: (error: unknown) => void }>();
  const started: string[] = [];
  const aborted: string[] = [];
  const tool: Tool = defineTool({
    name,
    description: `${name}, finished by the test.`,
    inputSchema: z.object({ text: z.string() }),
    sequential: options.sequential,
    execute: (_args, { signal, toolCallId }) =>
      new Promise<string>((resolve, reject) => {
        started.push(toolCallId);
        pending.set(toolCallId, { resolve, reject });
        signal.addEventListener("abort", () => {
          aborted.push(toolCallId);
          reject(signal.reason);
        });
      }),
  });
  const settler = (id: string) => {
    const entry = pending.get(id);
    if (entry === undefined) throw new Error(`${name} call "${id}" has not started`);
    return entry;
  };
  return {
    tool,
    started,
    aborted,
    release: (id: string) => settler(id).resolve(`done ${id}`),
    fail: (id: string, error: unknown) => settler(id).reject(error),
  };
}

/** A model that is never called: the scripted model step answers instead. */
export const stubModel: LanguageModelV4 = {
  specificationVersion: "v4",
  provider: "stub",
  modelId: "stub-model",
  supportedUrls: {},
  doGenerate: () => Promise.reject(new Error("doGenerate is not used")),
  doStream: () => Promise.reject(new Error("the scripted model step answers instead")),
};

/** A run's setup with test defaults: fake clock, stall detection off, `echo` only, no replies scripted. */
export function runSetup(overrides: Partial<RunSetup> = {}): RunSetup {
  const clock = overrides.clock ?? new FakeClock();
  return {
    runId: "run-1",
    limits: { maxCycles: 10, abortGraceMs: 100 },
    systemPrompt: "Be brief.",
    provider: stubModel,
    tools: new ToolRegistry([echoTool]),
    hooks: {},
    transformContext: undefined,
    convertToLlm: undefined,
    contextBudget: undefined,
    modelSettings: undefined,
    retry: { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0 },
    stepTimeouts: undefined,
    toolTimeouts: {},
    concurrency: 1,
    stall: false,
    steering: new MessageInbox(new MessageQueue(), undefined, clock),
    followUps: new MessageInbox(new MessageQueue(), undefined, clock),
    owner: { container: rootContainer.createChildContainer() },
    abortScope: new AbortScope(),
    clock,
    modelStep: scriptedStep(),
    toolRunner: defaultToolRunner,
    clientTools: new ClientToolCalls(),
    clientToolMode: "wait",
    ...overrides,
  };
}

/** What a test may set of a harness's setup; its clock is always a fake one. */
export type HarnessOverrides = Partial<Omit<RunSetup, "clock">> & { clock?: FakeClock };

/**
 * A run's setup with the shared state around it: the publisher (its events collected in
 * `events`, the dropped ones in `dropped`), the history (`keeper`, written through `transcript`),
 * the metrics, the run's log, and the queues behind its steering and follow-up inboxes.
 */
export function runHarness(overrides: HarnessOverrides = {}) {
  const clock = overrides.clock ?? new FakeClock();
  const steeringQueue = new MessageQueue();
  const followUpQueue = new MessageQueue();
  const setup = runSetup({
    clock,
    steering: new MessageInbox(steeringQueue, undefined, clock),
    followUps: new MessageInbox(followUpQueue, undefined, clock),
    ...overrides,
  });
  const events: AgentEvent[] = [];
  const dropped: OrchestratorEvent[] = [];
  const publisher = new EventPublisher(
    setup.runId,
    setup.clock,
    { push: (event) => events.push(event), dropped: (event) => dropped.push(event) },
    { publish() {} },
    undefined,
  );
  const keeper = new TranscriptKeeper();
  const transcript = keeper.writer();
  const metrics = new MetricsRecorder();
  const log = new RunLog(
    publisher,
    transcript,
    metrics,
    setup.abortScope,
    [setup.steering, setup.followUps],
    clock,
  );
  return {
    setup,
    clock,
    events,
    dropped,
    publisher,
    keeper,
    transcript,
    metrics,
    log,
    steeringQueue,
    followUpQueue,
  };
}

export type RunHarness = ReturnType<typeof runHarness>;

/** The events of one type, typed. */
export function eventsOf<T extends AgentEventType>(
  events: readonly AgentEvent[],
  type: T,
): AgentEventOf<T>[] {
  return events.filter((event) => event.type === type) as AgentEventOf<T>[];
}

/** Each event as its type, or `type:toolCallId` for the tool-call protocol, for order assertions. */
export function trace(events: readonly AgentEvent[]): string[] {
  return events.map((event) =>
    event.type === "tool_call" || event.type === "tool_result"
      ? `${event.type}:${event.toolCallId}`
      : event.type,
  );
}
