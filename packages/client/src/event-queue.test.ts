import { describe, expect, it } from "vitest";
import { EventQueue } from "./event-queue.js";

const DONE = { value: undefined, done: true };

/** The reader, which the queue hands out while nobody else reads. */
function reader<T>(queue: EventQueue<T>): AsyncIterator<T> {
  const taken = queue.reader();
  if (taken === undefined) throw new Error("another reader reads");
  return taken;
}

/** Whether `promise` has settled once the microtasks queued so far have run. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setTimeout(resolve, 0));
  return settled;
}

/** Every value `iterator` yields until it is done. */
async function drain<T>(iterator: AsyncIterator<T>): Promise<T[]> {
  const values: T[] = [];
  for (let step = await iterator.next(); step.done !== true; step = await iterator.next())
    values.push(step.value);
  return values;
}

describe("EventQueue", () => {
  it("yields the events in the order they were pushed, across reads and pushes interleaved", async () => {
    const queue = new EventQueue<number>(32);
    const events = reader(queue);
    queue.push(1);
    queue.push(2);
    expect(await events.next()).toEqual({ value: 1, done: false });
    queue.push(3);
    expect(await events.next()).toEqual({ value: 2, done: false });
    expect(await events.next()).toEqual({ value: 3, done: false });
  });

  it("keeps the order while it cuts the spent front of a long buffer", async () => {
    const queue = new EventQueue<number>(32);
    const events = reader(queue);
    for (let i = 0; i < 3000; i++) queue.push(i);
    const taken: number[] = [];
    for (let i = 0; i < 1500; i++) taken.push((await events.next()).value);
    for (let i = 3000; i < 3010; i++) queue.push(i);
    queue.close();
    taken.push(...(await drain(events)));
    expect(taken).toEqual(Array.from({ length: 3010 }, (_, i) => i));
  });

  it("wakes a reader that waits before an event comes", async () => {
    const queue = new EventQueue<string>(32);
    const next = reader(queue).next();
    expect(await isSettled(next)).toBe(false);
    queue.push("a");
    expect(await next).toEqual({ value: "a", done: false });
  });

  it("gives the buffered events before it says done", async () => {
    const queue = new EventQueue<string>(32);
    queue.push("a");
    queue.push("b");
    queue.close();
    const events = reader(queue);
    expect(await drain(events)).toEqual(["a", "b"]);
    expect(await events.next()).toEqual(DONE);
  });

  it("close() ends the iteration, the read waiting included", async () => {
    const queue = new EventQueue<string>(32);
    const next = reader(queue).next();
    expect(await isSettled(next)).toBe(false);
    queue.close();
    expect(await next).toEqual(DONE);
  });

  it("fail() rejects the read waiting, after the buffered events, and each later reader's", async () => {
    const queue = new EventQueue<string>(32);
    const error = new Error("lost");
    const events = reader(queue);
    queue.push("a");
    expect(await events.next()).toEqual({ value: "a", done: false });
    const next = events.next();
    expect(await isSettled(next)).toBe(false);
    queue.fail(error);
    await expect(next).rejects.toBe(error);
    // That reader has ended, as an iterator that threw does; a reader after it is told too.
    expect(await events.next()).toEqual(DONE);
    await expect(reader(queue).next()).rejects.toBe(error);
  });

  it("gives the buffered events before it throws the failure", async () => {
    const queue = new EventQueue<string>(32);
    const error = new Error("lost");
    queue.push("a");
    queue.fail(error);
    const events = reader(queue);
    expect(await events.next()).toEqual({ value: "a", done: false });
    await expect(events.next()).rejects.toBe(error);
  });

  it("delivers nothing to a reader once it was told done or returned", async () => {
    const queue = new EventQueue<string>(32);
    const ended = reader(queue);
    queue.close();
    expect(await ended.next()).toEqual(DONE);
    queue.push("late");
    expect(await ended.next()).toEqual(DONE);

    const other = new EventQueue<string>(32);
    const returned = reader(other);
    const waiting = returned.next();
    expect(await returned.return?.()).toEqual(DONE);
    expect(await waiting).toEqual(DONE);
    other.push("a");
    expect(await returned.next()).toEqual(DONE);
  });

  it("still buffers an event pushed after the end, for a reader that has not reached the end", async () => {
    const queue = new EventQueue<string>(32);
    queue.push("a");
    queue.close();
    queue.push("late");
    expect(await drain(reader(queue))).toEqual(["a", "late"]);
  });

  it("has one reader at a time; the next one goes on from the first event not taken", async () => {
    const queue = new EventQueue<number>(32);
    queue.push(1);
    queue.push(2);
    const first = reader(queue);
    expect(queue.reader()).toBeUndefined();
    expect(await first.next()).toEqual({ value: 1, done: false });
    await first.return?.();
    queue.close();
    expect(await drain(reader(queue))).toEqual([2]);
  });

  it("keeps the next reader the only one when a finished reader is returned again", async () => {
    const queue = new EventQueue<number>(32);
    const first = reader(queue);
    await first.return?.();
    const second = reader(queue);
    // A loop that breaks after its iterator ended calls return() once more: that must not free the
    // queue for a third reader while the second reads.
    await first.return?.();
    expect(queue.reader()).toBeUndefined();
    queue.push(1);
    expect(await second.next()).toEqual({ value: 1, done: false });
  });

  describe("demand()", () => {
    it("does not hold the writer back while nobody reads", async () => {
      const queue = new EventQueue<number>(2);
      for (let i = 0; i < 5; i++) queue.push(i);
      expect(await isSettled(queue.demand())).toBe(true);
    });

    it("holds the writer back while the reader has highWaterMark events waiting, until it takes one", async () => {
      const queue = new EventQueue<number>(2);
      const events = reader(queue);
      queue.push(1);
      expect(await isSettled(queue.demand())).toBe(true);
      queue.push(2);
      const demand = queue.demand();
      expect(await isSettled(demand)).toBe(false);
      await events.next();
      expect(await isSettled(demand)).toBe(true);
    });

    it("lets the writer go on when the reader returns", async () => {
      const queue = new EventQueue<number>(1);
      const events = reader(queue);
      queue.push(1);
      const demand = queue.demand();
      expect(await isSettled(demand)).toBe(false);
      await events.return?.();
      expect(await isSettled(demand)).toBe(true);
    });

    it("lets the writer go on once the queue ends", async () => {
      for (const end of [
        (q: EventQueue<number>) => q.close(),
        (q: EventQueue<number>) => q.fail(new Error("x")),
      ]) {
        const queue = new EventQueue<number>(1);
        reader(queue);
        queue.push(1);
        const demand = queue.demand();
        expect(await isSettled(demand)).toBe(false);
        end(queue);
        expect(await isSettled(demand)).toBe(true);
      }
    });
  });
});
