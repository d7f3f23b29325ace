import type { UiChunk } from "./ui-chunks.js";

/** How a tool call ended, as the page was told (or would have been, had it stayed). */
export type CallOutcome =
  | { state: "output-available"; output: unknown }
  | { state: "output-error"; errorText: string }
  | { state: "output-denied" };

/** A tool call of an assistant message, as the server announced it. */
export interface CallRecord {
  toolName: string;
  input: unknown;
  /** The id of its approval request, when it asked for one. */
  approvalId?: string;
  /** The page's answer to that request, once the server applied it. */
  decision?: { approved: boolean; reason?: string };
  outcome?: CallOutcome;
}

export interface UserTurn {
  role: "user";
  id: string;
  text: string;
}

/**
 * An assistant message as the server streamed it: built from the very chunks sent, also those a
 * page that went away never read, so the page's copy can only ever know less.
 */
export class AssistantTurn {
  readonly role = "assistant";
  readonly id: string;
  text = "";
  readonly calls = new Map<string, CallRecord>();

  constructor(id: string) {
    this.id = id;
  }

  apply(chunk: UiChunk): void {
    switch (chunk.type) {
      case "text-delta":
        this.text += chunk.delta;
        return;
      case "tool-input-available":
        // A call announced again (a client call that waits once approved) keeps what it had.
        if (!this.calls.has(chunk.toolCallId))
          this.calls.set(chunk.toolCallId, { toolName: chunk.toolName, input: chunk.input });
        return;
      case "tool-approval-request":
        this.#call(chunk.toolCallId).approvalId = chunk.approvalId;
        return;
      case "tool-output-available":
        this.#call(chunk.toolCallId).outcome = { state: "output-available", output: chunk.output };
        return;
      case "tool-output-error":
        this.#call(chunk.toolCallId).outcome = { state: "output-error", errorText: chunk.errorText };
        return;
      case "tool-output-denied":
        this.#call(chunk.toolCallId).outcome = { state: "output-denied" };
        return;
    }
  }

  #call(toolCallId: string): CallRecord {
    const call = this.calls.get(toolCallId);
    if (call === undefined) throw new Error(`agent-core http: no tool call "${toolCallId}" was announced.`);
    return call;
  }
}

export type Turn = UserTurn | AssistantTurn;

/**
 * A chat as the server knows it, one turn per UI message: the user's messages it accepted and the
 * assistant messages it streamed. What a page posts is checked against it; the model reads the
 * agent's own history, never the page's.
 */
export class ChatTranscript {
  readonly turns: Turn[] = [];

  /** The user's new messages (one, or those of refused posts before it), and the answer to them. */
  addExchange(users: readonly UserTurn[], assistantId: string): AssistantTurn {
    const answer = new AssistantTurn(assistantId);
    this.turns.push(...users, answer);
    return answer;
  }

  /** Lets the last assistant message go: the page has no copy of it, and never will. */
  dropLastAnswer(): void {
    if (this.turns.at(-1) instanceof AssistantTurn) this.turns.pop();
  }

  /** The assistant message that announced a tool call, if any did. */
  answerWithCall(toolCallId: string): AssistantTurn | undefined {
    for (let index = this.turns.length - 1; index >= 0; index--) {
      const turn = this.turns[index];
      if (turn instanceof AssistantTurn && turn.calls.has(toolCallId)) return turn;
    }
    return undefined;
  }

  /** The assistant message a suspended run's calls are in: the last one. */
  get lastAnswer(): AssistantTurn | undefined {
    const last = this.turns.at(-1);
    return last instanceof AssistantTurn ? last : undefined;
  }
}
