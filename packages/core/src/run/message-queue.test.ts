import { describe, expect, it } from "vitest";
import { MessageInbox, MessageQueue } from "./message-queue.js";

describe("MessageQueue (Go FollowUpQueue tests)", () => {
  it("starts empty (TestNewFollowUpQueue)", () => {
    const queue = new MessageQueue();
    expect(queue.size).toBe(0);
    expect(queue.drain()).toEqual([]);
  });

  it("keeps FIFO order, turns strings into user messages, keeps messages as they are (TestQueueEnqueueDequeue)", () => {
    const queue = new MessageQueue();
    queue.push("first");
    queue.push({ role: "note", text: "second" });
    expect(queue.size).toBe(2);
    expect(queue.drain()).toEqual([
      expect.objectContaining({ role: "user", content: "first" }),
      { role: "note", text: "second" },
    ]);
  });

  it("drains everything and is empty afterwards (TestQueueDrain, TestQueueDequeueEmpty)", () => {
    const queue = new MessageQueue();
    for (const text of ["a", "b", "c"]) queue.push(text);
    expect(queue.drain()).toHaveLength(3);
    expect(queue.size).toBe(0);
    expect(queue.drain()).toEqual([]);
  });

  it("clears (TestQueueClear)", () => {
    const queue = new MessageQueue();
    queue.push("a");
    queue.push("b");
    queue.clear();
    expect(queue.size).toBe(0);
  });
});

describe("MessageInbox", () => {
  it("answers synchronously without a callback, and merges queue then callback with one", async () => {
    const queue = new MessageQueue();
    queue.push("queued");
    expect(Array.isArray(new MessageInbox(queue, undefined).takeNow())).toBe(true);
    queue.push("queued");
    const pending = ["from callback"];
    const inbox = new MessageInbox(queue, async () => pending.splice(0));
    expect((await inbox.take()).map((m) => (m as { content: string }).content)).toEqual([
      "queued",
      "from callback",
    ]);
    expect(await inbox.take()).toEqual([]);
  });
});
