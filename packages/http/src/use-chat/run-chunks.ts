import type { AgentEvent, StopReason } from "@agent-core/core";
import type { UiChunk } from "./ui-chunks.js";

/** A call a suspended run waits on: a client tool's, or one that needs a person's approval. */
export interface PendingCall {
  toolCallId: string;
  toolName: string;
  args: unknown;
  reason?: string;
}

/**
 * Turns one run's events into UI message chunks. A model call is a step (`start-step` …
 * `finish-step`): its reasoning and text stream as parts, then the tool calls it made. A call the
 * page already has (the batch a resumed run runs) is not announced again: only its output is sent,
 * so the page's `onToolCall` never runs a call twice.
 */
export class RunChunks {
  readonly #announced: (toolCallId: string) => boolean;
  #parts = 0;
  #text: string | undefined;
  #reasoning: string | undefined;
  #stepOpen = false;
  /** The step's model call ended (`steering_mode`): the next model output starts a new step. */
  #modelCallEnded = false;

  constructor(announced: (toolCallId: string) => boolean) {
    this.#announced = announced;
  }

  map(event: AgentEvent): UiChunk[] {
    switch (event.type) {
      case "thinking":
        return [...this.#modelOutput(), ...this.#closeText(), ...this.#reasoningDelta(event.text)];
      case "text_delta":
        return [...this.#modelOutput(), ...this.#closeReasoning(), ...this.#textDelta(event.text)];
      case "steering_mode": {
        const chunks = [...this.#modelOutput(), ...this.#closeParts()];
        this.#modelCallEnded = true;
        return chunks;
      }
      case "tool_call":
        return [
          ...this.#closeParts(),
          ...(this.#announced(event.toolCallId)
            ? []
            : [
                {
                  type: "tool-input-available" as const,
                  toolCallId: event.toolCallId,
                  toolName: event.toolName,
                  input: event.args,
                },
              ]),
        ];
      case "tool_result": {
        const { toolCallId } = event;
        if (event.status === "ok")
          return [
            ...this.#closeParts(),
            { type: "tool-output-available", toolCallId, output: asPageReadsIt(event.result) },
          ];
        if (event.status === "denied")
          return [...this.#closeParts(), { type: "tool-output-denied", toolCallId }];
        return [
          ...this.#closeParts(),
          { type: "tool-output-error", toolCallId, errorText: event.error ?? event.status },
        ];
      }
      case "error":
        // An error about one call (a client tool's timeout) follows that call's result: the run goes on.
        if (event.toolCallId !== undefined) return [];
        return [...this.#closeParts(), { type: "error", errorText: event.message }];
      default:
        return [];
    }
  }

  /**
   * The end of the run: the calls it suspended on (each client call announced, so the page runs it;
   * each approval asked for, with `approvalId`), then `finish`.
   */
  end(
    stopReason: StopReason,
    pending: {
      clientCalls: readonly PendingCall[];
      approvals: readonly (PendingCall & { approvalId: string })[];
    },
  ): UiChunk[] {
    const chunks = this.#closeParts();
    const input = (call: PendingCall): UiChunk => ({
      type: "tool-input-available",
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.args,
    });
    for (const call of pending.approvals) {
      if (!this.#announced(call.toolCallId)) chunks.push(input(call));
      chunks.push({
        type: "tool-approval-request",
        approvalId: call.approvalId,
        toolCallId: call.toolCallId,
        ...(call.reason === undefined ? {} : { reason: call.reason }),
      });
    }
    // Announced again even when the page has the call (one it approved before): its input is what
    // makes the page's onToolCall run it.
    for (const call of pending.clientCalls) chunks.push(input(call));
    if (this.#stepOpen) chunks.push({ type: "finish-step" });
    this.#stepOpen = false;
    chunks.push({ type: "finish", finishReason: finishReasonOf(stopReason) });
    return chunks;
  }

  /** A model call streams: the step it belongs to starts (ending the one before). */
  #modelOutput(): UiChunk[] {
    if (this.#stepOpen && !this.#modelCallEnded) return [];
    const chunks: UiChunk[] = this.#stepOpen ? [...this.#closeParts(), { type: "finish-step" }] : [];
    this.#stepOpen = true;
    this.#modelCallEnded = false;
    chunks.push({ type: "start-step" });
    return chunks;
  }

  #textDelta(delta: string): UiChunk[] {
    if (this.#text !== undefined) return [{ type: "text-delta", id: this.#text, delta }];
    const id = this.#nextId("text");
    this.#text = id;
    return [
      { type: "text-start", id },
      { type: "text-delta", id, delta },
    ];
  }

  #reasoningDelta(delta: string): UiChunk[] {
    if (this.#reasoning !== undefined) return [{ type: "reasoning-delta", id: this.#reasoning, delta }];
    const id = this.#nextId("reasoning");
    this.#reasoning = id;
    return [
      { type: "reasoning-start", id },
      { type: "reasoning-delta", id, delta },
    ];
  }

  #closeText(): UiChunk[] {
    const id = this.#text;
    this.#text = undefined;
    return id === undefined ? [] : [{ type: "text-end", id }];
  }

  #closeReasoning(): UiChunk[] {
    const id = this.#reasoning;
    this.#reasoning = undefined;
    return id === undefined ? [] : [{ type: "reasoning-end", id }];
  }

  #closeParts(): UiChunk[] {
    return [...this.#closeReasoning(), ...this.#closeText()];
  }

  #nextId(kind: string): string {
    return `${kind}-${this.#parts++}`;
  }
}

/**
 * A tool's result as the page reads it once it went through JSON (a `Date` is its ISO string, a
 * `toJSON` its value): the transcript records the chunk, and a resent output is compared with it.
 * A result JSON has no text for (`undefined`, a tool that returns nothing) is `null`: a chunk
 * without `output` breaks the AI SDK's chunk schema, and useChat would drop the whole answer.
 */
function asPageReadsIt(result: unknown): unknown {
  const json = JSON.stringify(result);
  return json === undefined ? null : JSON.parse(json);
}

function finishReasonOf(stopReason: StopReason): "stop" | "tool-calls" | "error" {
  if (stopReason === "completed") return "stop";
  if (stopReason === "awaiting_approval" || stopReason === "awaiting_client_tool") return "tool-calls";
  return "error";
}
