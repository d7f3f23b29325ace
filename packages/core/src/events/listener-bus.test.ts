import { describe, expect, it, vi } from "vitest";
import { ListenerBus } from "./listener-bus.js";
import type { AgentEvent } from "./schemas.js";

const envelope = { runId: "r", ts: 0 };
const start: AgentEvent = { type: "agent_start", seq: 0, ...envelope };
const turn: AgentEvent = { type: "turn_start", turn: 1, seq: 1, ...envelope };
const thinking: AgentEvent = { type: "thinking", text: "hm", seq: 2, ...envelope };

function bus() {
  const onError = vi.fn();
  return { bus: new ListenerBus(onError), onError };
}

describe("ListenerBus", () => {
  it("gives typed listeners their type and '*' listeners every event, in publish order", () => {
    const { bus: listeners } = bus();
    const seen: string[] = [];
    listeners.on("turn_start", (event: AgentEvent) => seen.push(`typed ${event.type} ${event.seq}`));
    listeners.on("*", (event: AgentEvent) => seen.push(`all ${event.type} ${event.seq}`));
    for (const event of [start, turn, thinking]) listeners.publish(event);
    expect(seen).toEqual(["all agent_start 0", "typed turn_start 1", "all turn_start 1", "all thinking 2"]);
  });

  it("hands a throwing listener's error and event to onError, and still calls the others", () => {
    const { bus: listeners, onError } = bus();
    const failure = new Error("listener bug");
    const after = vi.fn();
    const all = vi.fn();
    listeners.on("turn_start", () => {
      throw failure;
    });
    listeners.on("turn_start", after);
    listeners.on("*", () => {
      throw failure;
    });
    listeners.on("*", all);
    listeners.publish(turn);
    expect(after).toHaveBeenCalledWith(turn);
    expect(all).toHaveBeenCalledWith(turn);
    expect(onError.mock.calls).toEqual([
      [failure, turn],
      [failure, turn],
    ]);
  });

  it("keeps calling the other listeners when onError throws too", () => {
    const listeners = new ListenerBus(() => {
      throw new Error("the error handler fails as well");
    });
    const after = vi.fn();
    listeners.on("turn_start", () => {
      throw new Error("listener bug");
    });
    listeners.on("*", after);
    expect(() => listeners.publish(turn)).not.toThrow();
    expect(after).toHaveBeenCalledWith(turn);
  });

  it("hands an async listener's rejection to onError", async () => {
    const { bus: listeners, onError } = bus();
    const failure = new Error("async listener bug");
    listeners.on("turn_start", async () => {
      throw failure;
    });
    listeners.publish(turn);
    await vi.waitFor(() => expect(onError).toHaveBeenCalledWith(failure, turn));
  });

  it("stops delivering after off() or the function on() returned", () => {
    const { bus: listeners } = bus();
    const typed = vi.fn();
    const all = vi.fn();
    listeners.on("agent_start", typed);
    const unsubscribe = listeners.on("*", all);
    listeners.publish(start);
    listeners.off("agent_start", typed);
    unsubscribe();
    listeners.publish(start);
    expect(typed).toHaveBeenCalledTimes(1);
    expect(all).toHaveBeenCalledTimes(1);
    // Unsubscribing again, or a listener that never subscribed, is harmless.
    unsubscribe();
    listeners.off("turn_start", vi.fn());
  });

  it("keeps a listener subscribed to two types apart: unsubscribing one type leaves the other", () => {
    const { bus: listeners } = bus();
    const listener = vi.fn();
    const offStart = listeners.on("agent_start", listener);
    listeners.on("turn_start", listener);
    offStart();
    listeners.publish(start);
    listeners.publish(turn);
    expect(listener.mock.calls).toEqual([[turn]]);
  });

  it("delivers once to a listener subscribed twice to the same type, and one off() removes it", () => {
    const { bus: listeners } = bus();
    const typed = vi.fn();
    const all = vi.fn();
    listeners.on("turn_start", typed);
    listeners.on("turn_start", typed);
    listeners.on("*", all);
    listeners.on("*", all);
    listeners.publish(turn);
    expect(typed).toHaveBeenCalledTimes(1);
    expect(all).toHaveBeenCalledTimes(1);
    listeners.off("turn_start", typed);
    listeners.off("*", all);
    listeners.publish(turn);
    expect(typed).toHaveBeenCalledTimes(1);
    expect(all).toHaveBeenCalledTimes(1);
  });
});
