import { describe, expect, it } from "vitest";
import { EventStream } from "./event-stream.js";

async function readAll<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

describe("EventStream", () => {
  it("never blocks the producer: 10,000 unread events, then result() resolves", async () => {
    const stream = new EventStream<number, string>();
    for (let i = 0; i < 10_000; i++) stream.push(i);
    stream.end("done");
    await expect(stream.result()).resolves.toBe("done");
    expect(stream.events).toHaveLength(10_000);
  });

  it("gives every consumer every event, even one that starts late", async () => {
    const stream = new EventStream<number, void>();
    const early = readAll(stream);
    stream.push(1);
    stream.push(2);
    const late = readAll(stream);
    stream.push(3);
    stream.end();
    expect(await early).toEqual([1, 2, 3]);
    expect(await late).toEqual([1, 2, 3]);
    expect(await readAll(stream)).toEqual([1, 2, 3]);
  });

  it("delivers events pushed while a consumer waits", async () => {
    const stream = new EventStream<string, void>();
    const consumed = readAll(stream);
    await new Promise((resolve) => setTimeout(resolve, 5));
    stream.push("a");
    await Promise.resolve();
    stream.push("b");
    stream.end();
    expect(await consumed).toEqual(["a", "b"]);
  });

  it("wakes every waiting consumer on each event, again and again, and ends one that returns while waiting", async () => {
    const stream = new EventStream<number, void>();
    const first = readAll(stream);
    const second = readAll(stream);
    const leaving = stream[Symbol.asyncIterator]();
    const left = leaving.next();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await leaving.return?.()).toEqual({ value: undefined, done: true });
    expect(await left).toEqual({ value: undefined, done: true });
    for (let i = 0; i < 3; i++) {
      stream.push(i);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    stream.end();
    expect(await first).toEqual([0, 1, 2]);
    expect(await second).toEqual([0, 1, 2]);
    expect(await leaving.next()).toEqual({ value: undefined, done: true });
  });

  it("ignores push after end and a second end", async () => {
    const stream = new EventStream<number, string>();
    stream.push(1);
    stream.end("first");
    stream.push(2);
    stream.end("second");
    expect(await stream.result()).toBe("first");
    expect(await readAll(stream)).toEqual([1]);
    expect(stream.ended).toBe(true);
  });

  it("stops an iterator that returns early, without affecting the others", async () => {
    const stream = new EventStream<number, void>();
    const other = readAll(stream);
    const firstTwo: number[] = [];
    const breaker = (async () => {
      for await (const n of stream) {
        firstTwo.push(n);
        if (firstTwo.length === 2) break;
      }
    })();
    for (let i = 0; i < 5; i++) stream.push(i);
    await breaker;
    stream.end();
    expect(firstTwo).toEqual([0, 1]);
    expect(await other).toEqual([0, 1, 2, 3, 4]);
  });

  it("wakes a waiting consumer when the stream ends with no further event", async () => {
    const stream = new EventStream<number, void>();
    const consumed = readAll(stream);
    await new Promise((resolve) => setTimeout(resolve, 5));
    stream.end();
    expect(await consumed).toEqual([]);
  });
});
