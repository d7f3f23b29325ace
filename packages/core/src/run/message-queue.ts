import { type AgentMessage, type MessageInput, toMessage } from "../messages.js";
import type { MessageSource } from "../orchestrator/contract.js";

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

export type InboxCallback = () =>
  | readonly MessageInput[]
  | undefined
  | Promise<readonly MessageInput[] | undefined>;

/**
 * A run's view of one queue plus the app's optional callback. `takeNow` answers synchronously when
 * there is no callback, which keeps the check after every tool and before every model call cheap.
 */
export class MessageInbox implements MessageSource {
  constructor(
    private readonly queue: MessageQueue,
    private readonly callback: InboxCallback | undefined,
  ) {}

  /** With a callback, taking may be asynchronous. */
  get hasCallback(): boolean {
    return this.callback !== undefined;
  }

  take(): Promise<AgentMessage[]> {
    const taken = this.takeNow();
    return Promise.resolve(taken === NOTHING ? [] : taken);
  }

  takeNow(): AgentMessage[] | Promise<AgentMessage[]> {
    // The common case, checked after every tool and before every model call: nothing, no allocation.
    if (this.callback === undefined && this.queue.size === 0) return NOTHING;
    const queued = this.queue.drain();
    if (this.callback === undefined) return queued;
    const extra = this.callback();
    return isPromise(extra) ? extra.then((more) => merge(queued, more)) : merge(queued, extra);
  }
}

/** The shared empty answer of `takeNow`: callers only read it. */
const NOTHING: AgentMessage[] = Object.freeze([]) as unknown as AgentMessage[];

function merge(queued: AgentMessage[], extra: readonly MessageInput[] | undefined): AgentMessage[] {
  return extra && extra.length > 0 ? [...queued, ...extra.map(toMessage)] : queued;
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === "function";
}
