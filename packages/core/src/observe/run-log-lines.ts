import { errorMessage } from "../errors.js";
import type { AgentEvent } from "../events/schemas.js";
import type { ToolCall } from "../messages.js";
import type { ModelStep, ToolRunner } from "../run/services.js";
import { type Logger, rejectionsCaught } from "./logger.js";
import type { RunObserver } from "./run-observer.js";

/**
 * A run's log lines, written from its events: the run's start and end at `info`, its failure at
 * `error` (`warn` for an abort, a stop asked for, or a problem of one tool call), what the loop
 * does (turns, model decisions, tool calls and results, steering, truncation, nudges) at `debug`
 * or `info`. Streamed text and reasoning are not logged. Every line has `runId`.
 */
export class RunLogLines implements RunObserver {
  readonly #logger: Logger;
  readonly #runId: string;

  constructor(logger: Logger, runId: string) {
    this.#logger = rejectionsCaught(logger);
    this.#runId = runId;
  }

  publish(event: AgentEvent): void {
    const runId = this.#runId;
    const log = this.#logger;
    switch (event.type) {
      case "text_delta":
      case "thinking":
        break;
      case "agent_start":
        log.info({ runId }, "run started");
        break;
      case "agent_end": {
        const { stopReason, durationMs, usage, metrics } = event;
        log.info({ runId, stopReason, durationMs, usage, cycles: metrics?.cycles }, "run ended");
        break;
      }
      case "error": {
        const { code, message, toolCallId } = event;
        if (toolCallId !== undefined) log.warn({ runId, code, message, toolCallId }, "tool call failed");
        else if (code === "aborted") log.warn({ runId, code, message }, "run aborted");
        else log.error({ runId, code, message }, "run failed");
        break;
      }
      case "turn_start":
        log.debug({ runId, turn: event.turn }, "turn started");
        break;
      case "turn_end":
        log.debug({ runId, durationMs: event.durationMs }, "turn ended");
        break;
      case "steering_mode":
        log.debug({ runId, mode: event.mode, queueSize: event.queueSize }, "model decided");
        break;
      case "tool_call":
        log.debug({ runId, toolCallId: event.toolCallId, toolName: event.toolName }, "tool call");
        break;
      case "tool_result": {
        const { toolCallId, toolName, status, error } = event;
        if (error === undefined) log.debug({ runId, toolCallId, toolName, status }, "tool result");
        else log.debug({ runId, toolCallId, toolName, status, error }, "tool result");
        break;
      }
      case "steering_applied":
        log.info({ runId, messages: event.messages.length }, "steering applied");
        break;
      case "context_truncated": {
        const { droppedMessages, estimatedTokens } = event;
        log.info({ runId, droppedMessages, estimatedTokens }, "context truncated");
        break;
      }
      default:
        log.debug({ runId, type: event.type }, "event");
    }
  }

  nudged(call: ToolCall, message: string): void {
    this.#logger.warn(
      { runId: this.#runId, toolCallId: call.id, toolName: call.name, message },
      "the model was nudged (repeated tool call)",
    );
  }

  modelStep(inner: ModelStep): ModelStep {
    const runId = this.#runId;
    const log = this.#logger;
    // Retries happen inside the call, and no event reports them: a line for each.
    return {
      run: (request) =>
        inner.run({
          ...request,
          onRetry: (failure, retry, delayMs) => {
            try {
              log.warn({ runId, retry, delayMs, error: errorMessage(failure) }, "model call retried");
            } finally {
              request.onRetry?.(failure, retry, delayMs);
            }
          },
        }),
    };
  }

  toolRunner(inner: ToolRunner): ToolRunner {
    return inner;
  }
}
