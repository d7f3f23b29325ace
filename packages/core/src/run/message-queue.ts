import { validateCallbackMessages } from "../message-input-checks.js";
import { type AgentMessage, type MessageInput, toMessageAt } from "../messages.js";
import type { MessageSource } from "../orchestrator/contract.js";
import { systemClock } from "./default-services.js";
import type { Clock } from "./services.js";

/** A FIFO of messages waiting for a run boundary (steering or follow-up). */
export class MessageQueue {
  #items: AgentMessage[] = [];

  /** Queues a message (a string becomes a user message with `timestamp`, default now). */
  push(input: MessageInput, timestamp = Date.now()): void {
    this.#items.push(toMessageAt(input, timestamp));
  }

  /** Puts messages back at the front, in their order (taken by a run that ended before using them). */
  restore(messages: readonly AgentMessage[]): void {
    if (messages.length > 0) this.#items = [...messages, ...this.#items];
  }

  get size(): number {
    return this.#items.length;
  }

  /** The queued messages, oldest first (a copy). */
  peek(): AgentMessage[] {
    return [...this.#items];
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
 *
 * Messages taken stay the inbox's until they enter the history (`delivered`): when the run ends
 * first, `close` puts them back at the front of the queue for the next run. A closed inbox gives
 * nothing, so an abandoned orchestrator cannot take what the next run should get.
 */
export class MessageInbox implements MessageSource {
  readonly #queue: MessageQueue;
  readonly #callback: InboxCallback | undefined;
  readonly #clock: Clock;
  /** The callback's name, for the error that refuses what it returned. */
  readonly #what: string;
  /**
   * Taken, not yet in the history: a set, since every message appended to the history is looked up
   * in it; made when a message is first taken (most runs take none).
   */
  #taken: Set<AgentMessage> | undefined;
  #closed = false;

  constructor(
    queue: MessageQueue,
    callback: InboxCallback | undefined,
    clock: Clock = systemClock,
    what = "the message callback",
  ) {
    this.#queue = queue;
    this.#callback = callback;
    this.#clock = clock;
    this.#what = what;
  }

  /** With a callback, taking may be asynchronous. */
  get hasCallback(): boolean {
    return this.#callback !== undefined;
  }

  /** Always a fresh array the caller may change (never the shared empty one). */
  take(): Promise<AgentMessage[]> {
    const taken = this.takeNow();
    if (Array.isArray(taken)) return Promise.resolve(taken === NOTHING ? [] : taken);
    return taken.then((messages) => (messages === NOTHING ? [] : messages));
  }

  takeNow(): AgentMessage[] | Promise<AgentMessage[]> {
    // The common case, checked after every tool and before every model call: nothing, no allocation.
    if (this.#closed || (this.#callback === undefined && this.#queue.size === 0)) return NOTHING;
    if (this.#callback === undefined) return this.#hold(this.#queue.drain());
    // The queue is drained once the callback has answered: until then (and for good, when it
    // hangs and the run is aborted, or when it fails) what `steer()` and `followUp()` queued stays
    // queued, owed to this run or the next.
    const extra = this.#callback();
    // Promise.resolve adopts any thenable, not only a native promise: a hand-written `then` may
    // return nothing, which chained on directly would leave the run a TypeError instead of the
    // callback's answer (or its rejection, or its wait).
    return isPromise(extra)
      ? Promise.resolve(extra).then((more) => this.#takeWith(more))
      : this.#takeWith(extra);
  }

  /** What the queue holds, then what the callback answered, checked before either is taken. */
  #takeWith(extra: readonly MessageInput[] | undefined): AgentMessage[] {
    validateCallbackMessages(extra, this.#what);
    const queued = this.#queue.drain();
    if (!extra || extra.length === 0) return this.#hold(queued);
    const now = this.#clock.now();
    return this.#hold([...queued, ...extra.map((input) => toMessageAt(input, now))]);
  }

  /** This message entered the history (if it was taken from here, it is no longer owed back). */
  delivered(message: AgentMessage): void {
    this.#taken?.delete(message);
  }

  /** Taken messages that cannot enter the history yet: queued again, first, for the next taker. */
  putBack(messages: readonly AgentMessage[]): void {
    if (this.#taken) for (const message of messages) this.#taken.delete(message);
    this.#queue.restore(messages);
  }

  /** The run has ended: what it took and did not use goes back to the queue (and is returned). */
  close(): AgentMessage[] {
    this.#closed = true;
    const unused = this.#taken ? [...this.#taken] : NOTHING;
    this.#taken = undefined;
    this.#queue.restore(unused);
    return unused;
  }

  #hold(messages: AgentMessage[]): AgentMessage[] {
    if (messages.length === 0) return NOTHING;
    // An inbox closed while the callback answered: the messages go back to the queue at once.
    if (this.#closed) {
      this.#queue.restore(messages);
      return NOTHING;
    }
    this.#taken ??= new Set();
    for (const message of messages) this.#taken.add(message);
    return messages;
  }
}

/** The shared empty answer of `takeNow`: callers only read it. */
const NOTHING: AgentMessage[] = Object.freeze([]) as unknown as AgentMessage[];

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === "function";
}
