import { type AgentMessage, type MessageInput, toMessage } from "../messages.js";

/** A FIFO of messages waiting for a run boundary (steering or follow-up). */
export class MessageQueue {
  #items: AgentMessage[] = [];

  push(input: MessageInput): void {
    this.#items.push(toMessage(input));
  }

  get size(): number {
    return this.#items.length;
  }

  drain(): AgentMessage[] {
    if (this.#items.length === 0) return [];
    const items = this.#items;
    this.#items = [];
    return items;
  }

  clear(): void {
    this.#items = [];
  }
}
