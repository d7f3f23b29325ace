import type { AgentEvent, OrchestratorEvent } from "../events/schemas.js";
import type { ToolCall } from "../messages.js";
import type { RunObserver } from "../observe/run-observer.js";
import type { Clock, EventSink } from "./services.js";

/** Where a run's events go first: its own stream (`AgentRun`), which also counts what was dropped. */
export interface RunEventStream {
  push(event: AgentEvent): void;
  dropped(event: OrchestratorEvent): void;
}

/**
 * The one place where a run's events get their envelope: `runId`, `seq` (0, 1, 2, … without gaps)
 * and `ts` (the emit time, never decreasing). `agent_end` seals it: whatever a late writer
 * publishes afterwards is dropped and counted, never delivered (and so is anything but `agent_end`
 * after the run's own `error`). It also keeps the tool-call protocol: a `tool_result` only for an
 * announced call, once. Each event goes to the run's own
 * stream, then to the agent's listeners, then to the event sink a runtime registered (if any),
 * then to the run's observer (its traces and log lines), if anything observes the run.
 */
export class EventPublisher {
  readonly runId: string;
  readonly #clock: Clock;
  readonly #stream: RunEventStream;
  readonly #listeners: EventSink;
  readonly #sink: EventSink | undefined;
  readonly #observer: RunObserver | undefined;
  #seq = 0;
  #lastTs = 0;
  #sealed = false;
  /** The run's own `error` went out (not a call's, which has a `toolCallId`): `agent_end` is next. */
  #closing = false;
  /** Ids of calls announced by `tool_call` and not yet answered: a short list, the calls running now. */
  readonly #announced: string[] = [];
  /** Whether an event is being handed to the consumers (a listener of it may publish another). */
  #delivering = false;
  /** Events published while another was being delivered, in `seq` order: they wait their turn. */
  readonly #waiting: AgentEvent[] = [];

  constructor(
    runId: string,
    clock: Clock,
    stream: RunEventStream,
    listeners: EventSink,
    sink: EventSink | undefined,
    observer?: RunObserver,
  ) {
    this.runId = runId;
    this.#clock = clock;
    this.#stream = stream;
    this.#listeners = listeners;
    this.#sink = sink;
    this.#observer = observer;
  }

  get sealed(): boolean {
    return this.#sealed;
  }

  /** Whether a `tool_call` for this id went out and its `tool_result` has not. */
  announced(toolCallId: string): boolean {
    return this.#announced.includes(toolCallId);
  }

  /**
   * Envelopes the event (every caller passes a fresh object) and delivers it. `now`: the clock's
   * time, when the caller has just read it for the state the event reports (a turn's start).
   */
  publish(event: OrchestratorEvent, now = this.#clock.now()): void {
    // After the run's `error`, only `agent_end`: a listener of that `error` that publishes (a
    // plug-in's `ctx.emit`) would otherwise come between the two.
    if (this.#sealed || (this.#closing && event.type !== "agent_end") || !this.#keepsToolProtocol(event)) {
      this.#stream.dropped(event);
      return;
    }
    const ts = Math.max(now, this.#lastTs);
    this.#lastTs = ts;
    const enveloped = envelope(event, this.runId, this.#seq++, ts);
    if (enveloped.type === "agent_end") this.#sealed = true;
    else if (enveloped.type === "error" && enveloped.toolCallId === undefined) this.#closing = true;
    this.#stream.push(enveloped);
    // A listener that publishes (an orchestrator's `ctx.emit` in its own `agent.on` handler) would
    // otherwise hand its event to the consumers after it before the one they are still due.
    if (this.#delivering) {
      this.#waiting.push(enveloped);
      return;
    }
    this.#delivering = true;
    try {
      this.#deliver(enveloped);
      for (let next = this.#waiting.shift(); next !== undefined; next = this.#waiting.shift())
        this.#deliver(next);
    } finally {
      this.#delivering = false;
    }
  }

  /**
   * To the consumers after the run's stream. Each is guarded where it is made (a listener or sink
   * that throws is reported, not rethrown), so a delivery ends; `publish` reopens it regardless.
   */
  #deliver(event: AgentEvent): void {
    this.#listeners.publish(event);
    this.#sink?.publish(event);
    if (this.#observer !== undefined) this.#observe(this.#observer, event);
  }

  #observe(observer: RunObserver, event: AgentEvent): void {
    try {
      observer.publish(event);
    } catch {
      // A logger or tracer that throws: the run goes on unobserved rather than failing for it, and
      // there is nowhere left to report it.
    }
  }

  /**
   * Tells the run's observer of a nudge: not an event of the protocol (the model reads it in the
   * tool result), but what a trace or a log wants to show.
   */
  nudged(call: ToolCall, message: string): void {
    if (this.#sealed || this.#observer === undefined) return;
    try {
      this.#observer.nudged(call, message);
    } catch {
      // As in `#observe`: the run goes on, the observer misses the nudge.
    }
  }

  #keepsToolProtocol(event: OrchestratorEvent): boolean {
    // Call ids are unique in a run (the transcript keeper sees to it), so an id that is no longer
    // announced has had its result.
    if (event.type === "tool_call") {
      if (this.#announced.includes(event.toolCallId)) return false;
      this.#announced.push(event.toolCallId);
      return true;
    }
    if (event.type !== "tool_result") return true;
    const open = this.#announced.lastIndexOf(event.toolCallId);
    if (open < 0) return false;
    // Order does not matter: the last id takes the place of the one that is done.
    this.#announced[open] = this.#announced[this.#announced.length - 1] as string;
    this.#announced.pop();
    return true;
  }
}

/**
 * The one function that sets envelope fields. The events of every tool cycle are built whole, in
 * one literal each: adding three fields to an event of each type made the stores megamorphic and
 * gave every event a second backing store (see docs/benchmarks.md). The rest are enveloped in place.
 */
function envelope(event: OrchestratorEvent, runId: string, seq: number, ts: number): AgentEvent {
  switch (event.type) {
    case "text_delta":
      return { type: "text_delta", runId, seq, ts, text: event.text, index: event.index };
    case "tool_call": {
      const { toolCallId, toolName, args, originalToolCallId, execution } = event;
      if (originalToolCallId === undefined && execution === undefined)
        return { type: "tool_call", runId, seq, ts, toolCallId, toolName, args };
      const rare: AgentEvent = { type: "tool_call", runId, seq, ts, toolCallId, toolName, args };
      if (originalToolCallId !== undefined) rare.originalToolCallId = originalToolCallId;
      if (execution !== undefined) rare.execution = execution;
      return rare;
    }
    case "tool_result": {
      const { toolCallId, toolName, status } = event;
      return "error" in event
        ? { type: "tool_result", runId, seq, ts, toolCallId, toolName, status, error: event.error }
        : { type: "tool_result", runId, seq, ts, toolCallId, toolName, status, result: event.result };
    }
    case "steering_mode":
      return { type: "steering_mode", runId, seq, ts, mode: event.mode, queueSize: event.queueSize };
    default: {
      const enveloped = event as AgentEvent;
      enveloped.runId = runId;
      enveloped.seq = seq;
      enveloped.ts = ts;
      return enveloped;
    }
  }
}
