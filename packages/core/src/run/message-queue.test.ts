import { describe, expect, it, vi } from "vitest";
import type { AgentMessage } from "../messages.js";
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

describe("MessageInbox: what a run took and did not use", () => {
  const contents = (messages: readonly unknown[]) => messages.map((m) => (m as { content: string }).content);

  function queueOf(...texts: string[]) {
    const queue = new MessageQueue();
    for (const text of texts) queue.push(text);
    return queue;
  }

  it("keeps taken messages until delivered: close() then gives back only the undelivered ones", async () => {
    const queue = queueOf("a", "b", "c");
    const inbox = new MessageInbox(queue, undefined);
    const taken = await inbox.take();
    expect(contents(taken)).toEqual(["a", "b", "c"]);
    expect(queue.size).toBe(0);
    inbox.delivered(taken[1] as AgentMessage);
    queue.push("later");
    expect(contents(inbox.close())).toEqual(["a", "c"]);
    expect(contents(queue.peek())).toEqual(["a", "c", "later"]);
  });

  it("delivers a batch of 100,000 taken messages one by one, and gives back the undelivered ones in order", async () => {
    // Each message appended to the history is looked up among those taken: one lookup must not
    // cost a pass over the whole batch, or a callback's large answer never finishes entering.
    const texts = Array.from({ length: 100_000 }, (_, index) => `m${index}`);
    const inbox = new MessageInbox(new MessageQueue(), () => texts);
    const taken = await inbox.take();
    for (const [index, message] of taken.entries()) if (index % 2 === 0) inbox.delivered(message);
    const givenBack = contents(inbox.close());
    expect(givenBack).toHaveLength(50_000);
    expect(givenBack.slice(0, 2)).toEqual(["m1", "m3"]);
    expect(givenBack.at(-1)).toBe("m99999");
  });

  it("gives nothing back once everything taken was delivered", async () => {
    const queue = queueOf("a");
    const inbox = new MessageInbox(queue, undefined);
    for (const message of await inbox.take()) inbox.delivered(message);
    expect(inbox.close()).toEqual([]);
    expect(queue.size).toBe(0);
  });

  it("restores the messages of several takes in the order they were taken", async () => {
    const queue = queueOf("a");
    const inbox = new MessageInbox(queue, () => ["from callback"]);
    await inbox.take();
    queue.push("b");
    await inbox.take();
    expect(contents(inbox.close())).toEqual(["a", "from callback", "b", "from callback"]);
    expect(contents(queue.drain())).toEqual(["a", "from callback", "b", "from callback"]);
  });

  it("takes nothing once closed, and leaves the queue for the next run", async () => {
    const queue = queueOf("a");
    const callback = vi.fn(() => ["from callback"]);
    const inbox = new MessageInbox(queue, callback);
    expect(inbox.close()).toEqual([]);
    expect(await inbox.take()).toEqual([]);
    expect(inbox.takeNow()).toEqual([]);
    expect(callback).not.toHaveBeenCalled();
    expect(contents(new MessageInbox(queue, undefined).takeNow() as AgentMessage[])).toEqual(["a"]);
  });

  it("queues what an async callback answers after the inbox closed, in the order it all arrived", async () => {
    const queue = queueOf("queued");
    let answer!: (messages: string[]) => void;
    const inbox = new MessageInbox(queue, () => new Promise<string[]>((resolve) => (answer = resolve)));
    const taking = inbox.take();
    // Not drained while the callback answers: one that never does must not take the queue with it.
    expect(queue.size).toBe(1);
    expect(inbox.close()).toEqual([]);
    queue.push("newer");
    answer(["late"]);
    expect(await taking).toEqual([]);
    expect(contents(queue.peek())).toEqual(["queued", "newer", "late"]);
  });

  it("leaves the queue as it is when the run ends while the callback never answers", () => {
    const queue = queueOf("queued");
    const inbox = new MessageInbox(queue, () => new Promise<string[]>(() => {}));
    void inbox.take();
    expect(inbox.close()).toEqual([]);
    expect(contents(queue.peek())).toEqual(["queued"]);
  });
});

describe("MessageInbox.take", () => {
  it("answers a fresh array, with a callback that has nothing too", async () => {
    const taken = await new MessageInbox(new MessageQueue(), async () => []).take();
    expect(Object.isFrozen(taken)).toBe(false);
    taken.push({ role: "user", content: "mine" });
    expect(await new MessageInbox(new MessageQueue(), async () => []).take()).toEqual([]);
  });
});

describe("MessageInbox: what take answers", () => {
  const contents = (messages: readonly unknown[]) => messages.map((m) => (m as { content: string }).content);

  it("answers a fresh array without a callback too, empty or not", async () => {
    const empty = await new MessageInbox(new MessageQueue(), undefined).take();
    expect(empty).toEqual([]);
    expect(Object.isFrozen(empty)).toBe(false);
    const noneFromCallback = await new MessageInbox(new MessageQueue(), () => []).take();
    expect(noneFromCallback).toEqual([]);
    expect(Object.isFrozen(noneFromCallback)).toBe(false);
  });

  it("takes the queue alone when the callback answers undefined", async () => {
    const queue = new MessageQueue();
    queue.push("queued");
    const inbox = new MessageInbox(queue, () => undefined);
    expect(contents(await inbox.take())).toEqual(["queued"]);
    expect(await new MessageInbox(new MessageQueue(), () => undefined).take()).toEqual([]);
  });

  it("stamps the callback's strings with the inbox's clock", async () => {
    const clock = { now: () => 4242, monotonic: () => 0 };
    const inbox = new MessageInbox(new MessageQueue(), () => ["from callback"], clock);
    expect(await inbox.take()).toEqual([{ role: "user", content: "from callback", timestamp: 4242 }]);
  });

  it("says whether it has a callback", () => {
    expect(new MessageInbox(new MessageQueue(), undefined).hasCallback).toBe(false);
    expect(new MessageInbox(new MessageQueue(), () => []).hasCallback).toBe(true);
  });

  it("keeps its own list of what was taken: the caller changing the answer does not change what close() gives back", async () => {
    const queue = new MessageQueue();
    queue.push("a");
    const inbox = new MessageInbox(queue, undefined);
    const taken = await inbox.take();
    taken.push({ role: "user", content: "added by the caller" });
    taken.shift();
    expect(contents(inbox.close())).toEqual(["a"]);
  });
});

describe("MessageQueue.peek", () => {
  it("peek answers a copy, oldest first", () => {
    const queue = new MessageQueue();
    queue.push("a", 1);
    queue.push("b", 2);
    const seen = queue.peek();
    seen.pop();
    expect(queue.peek()).toEqual([
      { role: "user", content: "a", timestamp: 1 },
      { role: "user", content: "b", timestamp: 2 },
    ]);
  });
});
