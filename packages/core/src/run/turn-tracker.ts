import type { AssistantMessage, AssistantStopReason } from "../messages.js";
import type { EventPublisher } from "./event-publisher.js";
import type { MetricsRecorder, MetricsSnapshot } from "./metrics.js";
import type { RunLog } from "./run-log.js";
import type { Clock } from "./services.js";

/** A run's turns: `turn_start`, `turn_end` with the turn's own duration and metrics. */
export class TurnTracker {
  readonly #events: EventPublisher;
  readonly #metrics: MetricsRecorder;
  readonly #clock: Clock;
  readonly #log: RunLog;
  #turn = 0;
  #startedAt: number | undefined;
  #firstMessage = 0;
  #metricsAtStart: MetricsSnapshot | undefined;

  constructor(events: EventPublisher, metrics: MetricsRecorder, clock: Clock, log: RunLog) {
    this.#events = events;
    this.#metrics = metrics;
    this.#clock = clock;
    this.#log = log;
  }

  /** Opens a turn (closing one still open with its last answer) and returns its number, from 1. */
  start(): number {
    this.#log.assertOpen();
    this.endOpen("stop");
    this.#turn++;
    const now = this.#clock.now();
    this.#startedAt = now;
    this.#firstMessage = this.#log.history.length;
    this.#metricsAtStart = this.#metrics.snapshot();
    this.#events.publish({ type: "turn_start", turn: this.#turn }, now);
    return this.#turn;
  }

  end(message: AssistantMessage): void {
    if (this.#startedAt === undefined || this.#events.sealed) return;
    const now = this.#clock.now();
    const durationMs = now - this.#startedAt;
    this.#startedAt = undefined;
    const metrics = this.#metrics.since(this.#metricsAtStart as MetricsSnapshot, durationMs);
    this.#events.publish({ type: "turn_end", message, durationMs, metrics }, now);
  }

  /** Closes a turn still open, with its last answer (or an empty one that says why it stopped). */
  endOpen(stopReason: AssistantStopReason): void {
    if (this.#startedAt === undefined) return;
    this.end(
      lastAssistantFrom(this.#log, this.#firstMessage) ?? {
        role: "assistant",
        content: [],
        stopReason,
        timestamp: this.#clock.now(),
      },
    );
  }
}

/** The last assistant message of the history from position `start` on. */
export function lastAssistantFrom(log: RunLog, start: number): AssistantMessage | undefined {
  const history = log.history;
  for (let i = history.length - 1; i >= start; i--) {
    const message = history[i];
    if (message?.role === "assistant") return message as AssistantMessage;
  }
  return undefined;
}
