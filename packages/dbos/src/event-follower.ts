import type { AgentEvent } from "@agent-core/core";
import type pg from "pg";
import { isConnectionError, ownConnection } from "./database.js";
import { EVENTS_CHANNEL, type EventStore } from "./event-store.js";

/**
 * Follows runs' events in the durable log from any process: one `LISTEN` connection tells which
 * runs have new events (the store's writes `NOTIFY`), and each follower reads what came after its
 * last seq. A poll every `pollMs` covers notifications lost while the connection was down, or
 * while it could not be made (it is given `CONNECT_TIMEOUT_MS`, then made again at the next poll).
 */
export class EventFollower {
  readonly #store: EventStore;
  readonly #databaseUrl: string;
  readonly #pollMs: number;
  readonly #waiting = new Map<string, Set<() => void>>();
  #listener: Promise<pg.Client> | undefined;
  #closed = false;

  constructor(store: EventStore, databaseUrl: string, options: { pollMs?: number } = {}) {
    this.#store = store;
    this.#databaseUrl = databaseUrl;
    this.#pollMs = options.pollMs ?? 1000;
  }

  /**
   * Calls `onEvent` with the run's events after seq `after`, in order, until `agent_end` or
   * `stop()`. `caughtUp` resolves once the events stored when it began were passed on; it rejects
   * when the first read found the database out of reach, and the follower goes on: every read that
   * did is made again at the next poll, so the run is followed once the database is back.
   */
  follow(
    runId: string,
    after: number,
    onEvent: (event: AgentEvent) => void,
  ): { stop(): void; caughtUp: Promise<void> } {
    let stopped = false;
    let last = after;
    let wake: (() => void) | undefined;
    const waiters = this.#waiting.get(runId) ?? new Set();
    this.#waiting.set(runId, waiters);
    const notified = () => wake?.();
    waiters.add(notified);
    const stop = () => {
      stopped = true;
      waiters.delete(notified);
      if (waiters.size === 0) this.#waiting.delete(runId);
      wake?.();
    };
    const readMore = async (): Promise<boolean> => {
      for (const event of await this.#store.read(runId, last)) {
        if (stopped) return false;
        last = event.seq;
        onEvent(event);
        if (event.type === "agent_end") return false;
      }
      return !stopped;
    };
    // A read that found the database out of reach is made again at the next poll: the run goes on
    // once it is back, and so does its follower.
    const again = (error: unknown) => {
      if (isConnectionError(error)) return !stopped;
      throw error;
    };
    // LISTEN first, so that what is stored after the first read wakes the follower; a LISTEN
    // that could not be made is made again at the next poll.
    const caughtUp = this.#listen()
      .catch(() => {})
      .then(readMore);
    void caughtUp
      .catch(again)
      .then(async (more) => {
        while (more) {
          // A LISTEN connection the database dropped (a restart) is made again; polls meanwhile.
          if (!this.#closed) this.#listen().catch(() => {});
          await new Promise<void>((resolve) => {
            const poll = setTimeout(woken, this.#pollMs);
            function woken() {
              clearTimeout(poll);
              resolve();
            }
            wake = woken;
          });
          more = await readMore().catch(again);
        }
      })
      .catch(() => {})
      .finally(stop);
    const caughtUpNow = caughtUp.then(() => {});
    // Its failure is for a caller that awaits it; one that does not has the follower go on anyway.
    caughtUpNow.catch(() => {});
    return { stop, caughtUp: caughtUpNow };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const waiters of this.#waiting.values()) for (const wake of waiters) wake();
    const listener = await this.#listener?.catch(() => undefined);
    await listener?.end();
  }

  /** The one LISTEN connection, made when first needed. */
  #listen(): Promise<pg.Client> {
    if (this.#listener !== undefined) return this.#listener;
    const listener = (async () => {
      const client = ownConnection(this.#databaseUrl);
      // A dropped connection is made again by the next follower; the polls carry on meanwhile.
      client.on("error", () => {
        if (this.#listener === listener && !this.#closed) this.#listener = undefined;
      });
      try {
        await client.connect();
        client.on("notification", (message) => {
          for (const wake of this.#waiting.get(message.payload ?? "") ?? []) wake();
        });
        await client.query(`LISTEN ${EVENTS_CHANNEL}`);
      } catch (error) {
        await client.end().catch(() => {});
        throw error;
      }
      return client;
    })();
    // One that could not be made is tried again by the next follower, not failed for every one.
    listener.catch(() => {
      if (this.#listener === listener) this.#listener = undefined;
    });
    this.#listener = listener;
    return listener;
  }
}
