import mittModule, { type Emitter, type EventType, type Handler, type WildcardHandler } from "mitt";
import type { AgentEvent, AgentEventOf, AgentEventType } from "./schemas.js";

// mitt's types resolve as CommonJS under NodeNext; its ESM default export is the factory.
const mitt = mittModule as unknown as <E extends Record<EventType, unknown>>() => Emitter<E>;

type Events = { [T in AgentEventType]: AgentEventOf<T> };
type Listener = (event: never) => void;

/**
 * The agent's listeners (`agent.on`), dispatched by mitt. Each listener is wrapped once, when it
 * subscribes, so that one that throws neither breaks the run nor starves the others.
 */
export class ListenerBus {
  /** Made with the first listener: most agents never get one. */
  #emitter: Emitter<Events> | undefined;
  /** Listener → its wrapper, per type ("*" included), so `off` finds what `on` registered. */
  #wrapped: Map<string, Map<Listener, Handler<never> | WildcardHandler<Events>>> | undefined;
  readonly #onError: (error: unknown, event: AgentEvent) => void;

  constructor(onError: (error: unknown, event: AgentEvent) => void) {
    this.#onError = onError;
  }

  publish(event: AgentEvent): void {
    if (this.#emitter !== undefined && this.#emitter.all.size > 0)
      this.#emitter.emit(event.type, event as never);
  }

  on(type: AgentEventType | "*", listener: Listener): () => void {
    this.#emitter ??= mitt<Events>();
    this.#wrapped ??= new Map();
    const emitter = this.#emitter;
    let byListener = this.#wrapped.get(type);
    if (byListener === undefined) {
      byListener = new Map();
      this.#wrapped.set(type, byListener);
    }
    if (!byListener.has(listener)) {
      if (type === "*") {
        const wrapper: WildcardHandler<Events> = (_type, event) => this.#call(listener, event as AgentEvent);
        byListener.set(listener, wrapper);
        emitter.on("*", wrapper);
      } else {
        const wrapper = (event: AgentEvent) => this.#call(listener, event);
        byListener.set(listener, wrapper as Handler<never>);
        emitter.on(type as never, wrapper as never);
      }
    }
    return () => this.off(type, listener);
  }

  off(type: AgentEventType | "*", listener: Listener): void {
    const byListener = this.#wrapped?.get(type);
    const wrapper = byListener?.get(listener);
    if (wrapper === undefined) return;
    byListener?.delete(listener);
    if (type === "*") this.#emitter?.off("*", wrapper as WildcardHandler<Events>);
    else this.#emitter?.off(type as never, wrapper as never);
  }

  #call(listener: Listener, event: AgentEvent): void {
    deliver(listener as (event: AgentEvent) => unknown, event, this.#onError);
  }
}

/**
 * Hands `event` to `receive`; what it throws, or the rejection of the promise it returns, goes to
 * `onError` instead of the run that published the event. For the listeners and the event sink.
 */
export function deliver(
  receive: (event: AgentEvent) => unknown,
  event: AgentEvent,
  onError: (error: unknown, event: AgentEvent) => void,
): void {
  try {
    const returned = receive(event);
    // An async receiver's rejection would otherwise go unhandled (and end a default Node process).
    if (isThenable(returned)) returned.then(undefined, (error: unknown) => report(onError, error, event));
  } catch (error) {
    report(onError, error, event);
  }
}

function report(
  onError: (error: unknown, event: AgentEvent) => void,
  error: unknown,
  event: AgentEvent,
): void {
  try {
    // Typed to return nothing, yet an async handler's promise, rejected and unhandled, would end
    // a default Node process.
    const handled: unknown = onError(error, event);
    if (isThenable(handled)) handled.then(undefined, () => {});
  } catch {
    // The error handler (or the logger it writes to) threw too: there is nowhere left to report
    // it, and a listener's or sink's failure must not end the run.
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function"
  );
}
