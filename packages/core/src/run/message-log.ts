import type { AgentMessage } from "../messages.js";
import type { MessageLog } from "../orchestrator/contract.js";

/**
 * `ctx.messages`. On Node 20 (V8 11.3) an object literal with getters, or a closure with a rest
 * parameter, held by the run keeps the whole run (history, events) alive through every young
 * generation GC until the next full one: all of it gets copied and promoted. Hence a class with
 * prototype getters, and `append` a bound function (an own property, so destructuring it works).
 */
export class RunMessageLog implements MessageLog {
  readonly #history: AgentMessage[];
  readonly append: (...messages: AgentMessage[]) => void;

  constructor(history: AgentMessage[], assertOpen: () => void) {
    this.#history = history;
    this.append = appendMessages.bind(undefined, history, assertOpen);
  }

  get all(): readonly AgentMessage[] {
    return this.#history;
  }

  get length(): number {
    return this.#history.length;
  }
}

function appendMessages(history: AgentMessage[], assertOpen: () => void, ...messages: AgentMessage[]): void {
  assertOpen();
  history.push(...messages);
}
