import type { JSONSchema7 } from "@ai-sdk/provider";
import { zodSchema } from "@ai-sdk/provider-utils";
import type { z } from "zod";
import {
  type AgentError,
  EmptyResponseError,
  MaxCyclesExceededError,
  type StallError,
  StopRequestedError,
  StructuredOutputError,
} from "../errors.js";
import {
  type AgentMessage,
  type AssistantMessage,
  type AssistantStopReason,
  type LlmMessage,
  type ToolCall,
  textOf,
} from "../messages.js";
import type { ModelStepResult } from "../model/stream-step.js";
import { parseStructured } from "../model/structured-output.js";
import type {
  DecideOptions,
  Decision,
  GeneratedObject,
  GenerateObjectOptions,
} from "../orchestrator/contract.js";
import type { Activity } from "./activity.js";
import type { EventPublisher } from "./event-publisher.js";
import { askedToStop } from "./hooks.js";
import type { MetricsRecorder } from "./metrics.js";
import { ModelCall, type ModelCallSetup } from "./model-call.js";
import { checkedStep, decideOptionsProblem, generateObjectOptionsProblem } from "./model-call-checks.js";
import { type ModelCallSpec, type ModelRequest, ModelRequestBuilder } from "./model-request.js";
import type { RunLog } from "./run-log.js";
import type { RunSetup } from "./run-setup.js";

/**
 * The run's model calls: `ctx.decide()` and `ctx.generateObject()`. Each checks abort,
 * `maxCycles`, `shouldStop` and steering first, builds the request, reads the model through the
 * model-step service, and records what came back: the reply in the history and a `steering_mode`
 * event for every decision.
 */
export class ModelDecisions {
  readonly #setup: RunSetup;
  readonly #log: RunLog;
  readonly #events: EventPublisher;
  readonly #metrics: MetricsRecorder;
  readonly #requests: ModelRequestBuilder;
  readonly #call: ModelCallSetup;
  /** Calls of a model reply cut off by the length limit: their arguments may be incomplete. */
  readonly cutOffCalls = new Set<string>();
  /** The assistant message of the last reply `decide` recorded. */
  lastReply: AssistantMessage | undefined;
  /** What refused a model call because the run must end (see `#stop`). */
  #stopped: AgentError | undefined;

  constructor(
    setup: RunSetup,
    log: RunLog,
    events: EventPublisher,
    metrics: MetricsRecorder,
    activity: Pick<Activity, "inFlight" | "settled">,
  ) {
    this.#setup = setup;
    this.#log = log;
    this.#events = events;
    this.#metrics = metrics;
    this.#requests = new ModelRequestBuilder(setup, setup.abortScope.signal, events);
    this.#call = {
      abortScope: setup.abortScope,
      retry: setup.retry,
      timeouts: setup.stepTimeouts,
      events,
      metrics,
      clock: setup.clock,
      activity,
    };
  }

  decide(options: DecideOptions): Promise<Decision> {
    const problem = decideOptionsProblem(options, this.#setup.tools);
    if (problem !== undefined)
      return this.#refused(new TypeError(`ctx.decide() got invalid options: ${problem}.`));
    const spec: ModelCallSpec = {
      system: options.system,
      tools: options.tools,
      settings: options.settings,
      extraMessages: options.messages,
    };
    return this.#callModel(spec, true, this.#decision);
  }

  /** Records the model's reply and says what it decided; runs as the stream ends. */
  readonly #decision = (step: ModelStepResult): Decision => {
    this.#metrics.addUsage(step.usage);
    this.#log.assertOpen();
    if (step.content.length === 0) throw new EmptyResponseError(step.finishReason);
    const calls = this.#uniqueCalls(step);
    // A reply cut off by the length limit may carry truncated arguments: its calls are not run.
    if (step.finishReason === "length") for (const call of calls) this.cutOffCalls.add(call.id);
    const steer = calls.length > 0;
    const now = this.#setup.clock.now();
    const message: AssistantMessage = {
      role: "assistant",
      content: step.content,
      model: step.modelId,
      stopReason: steer ? "toolUse" : assistantStopReason(step.finishReason),
      usage: step.usage,
      timestamp: now,
    };
    this.#log.append(message);
    this.lastReply = message;
    this.#events.publish(
      { type: "steering_mode", mode: steer ? "steer" : "respond", queueSize: calls.length },
      now,
    );
    return steer
      ? { mode: "steer", message, toolCalls: calls }
      : { mode: "respond", message, text: textOf(message) };
  };

  /**
   * Tool-call ids are unique in the history: a provider that repeats one (within a reply, or
   * from an earlier reply) gets a fresh id for the repeat, in the message and in its events.
   */
  #uniqueCalls(step: ModelStepResult): ToolCall[] {
    const calls = this.#log.uniqueIds(step.toolCalls);
    if (calls === step.toolCalls) return calls;
    // The reply's tool-call blocks are its calls, in the same order.
    let next = 0;
    step.content = step.content.map((block) => {
      if (block.type !== "toolCall") return block;
      const call = calls[next++] as ToolCall;
      return { type: "toolCall", id: call.id, name: call.name, args: call.args };
    });
    step.toolCalls = calls;
    return calls;
  }

  readonly #accounted = (step: ModelStepResult): ModelStepResult => {
    this.#metrics.addUsage(step.usage);
    return step;
  };

  generateObject<T>(schema: z.ZodType<T>, options: GenerateObjectOptions<T>): Promise<GeneratedObject<T>> {
    // A JSON Schema or a plain object would fail deep inside the schema's conversion.
    if (!isZodSchema(schema))
      return this.#refused(
        new TypeError(
          `ctx.generateObject() takes a zod schema as its first argument (z.object({ … })), got ${describe(schema)}.`,
        ),
      );
    const problem = generateObjectOptionsProblem(options);
    if (problem !== undefined)
      return this.#refused(new TypeError(`ctx.generateObject() got invalid options: ${problem}.`));
    return this.#quietlyIfEnded(this.#generateObject(schema, options));
  }

  async #generateObject<T>(
    schema: z.ZodType<T>,
    options: GenerateObjectOptions<T>,
  ): Promise<GeneratedObject<T>> {
    // NaN would make no attempt at all: it counts as not given.
    const wanted = options.maxAttempts ?? 2;
    const attempts = Number.isNaN(wanted) ? 2 : Math.max(1, wanted);
    const responseFormat = {
      type: "json" as const,
      schema: zodSchema(schema).jsonSchema as JSONSchema7,
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(options.description === undefined ? {} : { description: options.description }),
    };
    const extra: LlmMessage[] = [...(options.messages ?? [])];
    let problem = "";
    let text = "";
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const settings = { ...options.settings, responseFormat };
      const spec = { system: options.system, tools: false as const, settings, extraMessages: extra };
      const step = await this.#callModel(spec, false, this.#accounted);
      text = textOf({ role: "assistant", content: step.content });
      const parsed = await parseStructured(schema, text);
      this.#log.assertOpen();
      // A structured reply is a model decision too: a plan decides on calls, a verdict responds, and
      // an invalid reply is a response (sent back), so that every model call has its `steering_mode`.
      let counted: { size: number } | { error: unknown } = { size: 0 };
      if (parsed.success && options.toolCallsOf !== undefined)
        try {
          counted = { size: callCount(options.toolCallsOf(parsed.value)) };
        } catch (error) {
          // The model call was made: it still gets its `steering_mode` before the error unwinds.
          counted = { error };
        }
      const queueSize = "size" in counted ? counted.size : 0;
      this.#events.publish({ type: "steering_mode", mode: queueSize > 0 ? "steer" : "respond", queueSize });
      if ("error" in counted) throw counted.error;
      if (parsed.success) return { object: parsed.value, text };
      problem = parsed.error;
      extra.push(
        { role: "assistant", content: [{ type: "text", text }] },
        { role: "user", content: `${problem} Reply with only the corrected JSON.` },
      );
    }
    throw new StructuredOutputError(attempts, problem, text);
  }

  /**
   * One model call: checks first, then hands the step's result to `finish` as the stream ends.
   * Without hooks, a steering callback or a pipeline step, everything before the call is
   * synchronous (no async frame of its own).
   */
  #callModel<T>(spec: ModelCallSpec, streamsText: boolean, finish: (step: ModelStepResult) => T): Promise<T> {
    try {
      this.#log.assertOpen();
      this.#log.moveOn();
      const { hooks, steering } = this.#setup;
      if (
        (this.#metrics.cycles > 0 && hooks.shouldStop) ||
        steering.hasCallback ||
        this.#requests.needsPipeline
      )
        return this.#quietlyIfEnded(this.#callModelSlowly(spec, streamsText, finish));
      this.#countCycle();
      const taken = steering.takeNow() as AgentMessage[];
      if (taken.length > 0) this.#log.applySteering(taken);
      return this.#stream(this.#requests.fromHistory(spec, this.#log.history), streamsText, finish);
    } catch (error) {
      return this.#refused(error);
    }
  }

  /** A call refused before it started (see `RunLog.refuse`). */
  #refused(error: unknown): Promise<never> {
    return this.#log.refuse(error);
  }

  async #callModelSlowly<T>(
    spec: ModelCallSpec,
    streamsText: boolean,
    finish: (step: ModelStepResult) => T,
  ): Promise<T> {
    const stop =
      this.#metrics.cycles > 0 && askedToStop(this.#setup, this.#metrics.cycles, this.#log.history);
    if (stop !== false && (await stop)) return this.#refused(this.#stop(new StopRequestedError()));
    try {
      this.#countCycle();
    } catch (error) {
      return this.#refused(error);
    }
    const taken = this.#setup.steering.takeNow();
    const steering = Array.isArray(taken) ? taken : await taken;
    if (steering.length > 0) this.#log.applySteering(steering);
    // Again after the waits: the orchestrator may have appended calls, or started a batch, meanwhile.
    this.#log.moveOn();
    const request = this.#requests.needsPipeline
      ? await this.#requests.throughPipeline(spec, this.#log.history, this.#metrics.cycles)
      : this.#requests.fromHistory(spec, this.#log.history);
    this.#log.assertOpen();
    return this.#stream(request, streamsText, finish);
  }

  #stream<T>(request: ModelRequest, streamsText: boolean, finish: (step: ModelStepResult) => T): Promise<T> {
    const { model, prompt, tools, settings } = request;
    const call = new ModelCall(this.#call, model, prompt, tools, settings, streamsText);
    // Timed here, not by the model step: a runtime's own step (a replay) is accounted the same.
    // Marked in its own handlers (see `RunLog.settleQuietlyIfEnded`): no wrapper, no extra hop.
    const returned: Promise<T> = this.#setup.modelStep.run(call).then(
      (step) => {
        call.settled();
        try {
          return finish(checkedStep(step));
        } catch (error) {
          this.#log.settleQuietlyIfEnded(returned);
          throw error;
        }
      },
      (error: unknown) => {
        call.settled();
        this.#log.settleQuietlyIfEnded(returned);
        throw error;
      },
    );
    return returned;
  }

  /** A promise of the slow paths, marked like `#stream`'s when it fails because the run ended. */
  #quietlyIfEnded<T>(promise: Promise<T>): Promise<T> {
    const returned: Promise<T> = promise.then(undefined, (error: unknown) => {
      this.#log.settleQuietlyIfEnded(returned);
      throw error;
    });
    return returned;
  }

  /** A batch found the run stalled: a model call after it ends the run so (see `#stop`). */
  stalled(error: StallError): void {
    this.#stopped ??= error;
  }

  /**
   * A model call the run must not make (`maxCycles` reached, `shouldStop` said stop, a batch found
   * the run stalled): the first is refused with `error`; an orchestrator that asks again instead of
   * ending (it swallowed the error) is looping past the limit, and the run ends with the first
   * error, as an abort would (within the grace period, whether or not the orchestrator stops).
   */
  #stop(error: AgentError): AgentError {
    if (this.#stopped === undefined) this.#stopped = error;
    else this.#setup.abortScope.abort(this.#stopped);
    return error;
  }

  #countCycle(): void {
    this.#log.assertOpen();
    if (this.#stopped !== undefined) throw this.#stop(this.#stopped);
    const { maxCycles } = this.#setup.limits;
    if (this.#metrics.cycles >= maxCycles) throw this.#stop(new MaxCyclesExceededError(maxCycles));
    this.#metrics.cycles++;
    // A new reply: calls made from here on are not held against each other's reply.
    this.#log.stall?.beginReply();
  }
}

/** What `toolCallsOf` returned, as a `queueSize`: a whole number >= 0 (NaN or infinite: 0). */
function callCount(count: unknown): number {
  const whole = Math.floor(Number(count));
  return Number.isFinite(whole) && whole > 0 ? whole : 0;
}

/** A provider's finish reason as the assistant message's stop reason: those they share kept, any other `other`. */
function assistantStopReason(finishReason: string): AssistantStopReason {
  return finishReason === "stop" || finishReason === "length" || finishReason === "error"
    ? finishReason
    : "other";
}

function isZodSchema(schema: unknown): boolean {
  return (
    typeof schema === "object" &&
    schema !== null &&
    typeof (schema as { _zod?: unknown })._zod === "object" &&
    typeof (schema as { safeParse?: unknown }).safeParse === "function"
  );
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object that is not one" : `${typeof value} ${String(value)}`;
}
