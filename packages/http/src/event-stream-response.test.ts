import { describe, expect, it, vi } from "vitest";
import { EventLog } from "./event-log.js";
import { streamEvents } from "./event-stream-response.js";
import type { ServerRun } from "./server-run.js";

describe("streamEvents", () => {
  it("waits on the log once per event, not once per heartbeat, however long the run is quiet", async () => {
    const log = new EventLog(100);
    // Counts the reactions the stream puts on the log's promise while no event comes.
    let waits = 0;
    const changed = log.changed.bind(log);
    log.changed = (from: number) => {
      const promise = changed(from);
      const then = promise.then.bind(promise);
      return Object.assign(promise, {
        // biome-ignore lint/suspicious/noThenProperty: counts the waits on the log's own promise.
        then: (...args: Parameters<typeof then>) => {
          waits++;
          return then(...args);
        },
      });
    };
    const run = { runId: "r1", log, attach() {}, detach() {} } as unknown as ServerRun;
    const response = streamEvents(new Request("http://localhost/runs/r1/events"), run, 0, {
      heartbeatMs: 1,
      now: () => 0,
      detachGraceMs: 0,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (let heartbeat = 0; heartbeat < 100; heartbeat++)
      expect(decoder.decode((await reader.read()).value)).toBe('{"type":"heartbeat","ts":0}\n');
    expect(waits).toBe(1);
    log.append({ seq: 0, type: "agent_end" }, '{"seq":0}');
    log.close();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += decoder.decode(chunk.value);
    expect(rest.split("\n").filter(Boolean).at(-1)).toBe('{"seq":0}');
  });

  it("leaves no heartbeat timer behind when the client goes away while the run is quiet", async () => {
    vi.useFakeTimers();
    try {
      const log = new EventLog(100);
      const run = { runId: "r1", log, attach() {}, detach() {} } as unknown as ServerRun;
      const response = streamEvents(new Request("http://localhost/runs/r1/events"), run, 0, {
        heartbeatMs: 15_000,
        now: () => 0,
        detachGraceMs: 0,
      });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const pending = reader.read();
      await vi.advanceTimersByTimeAsync(0);
      expect(vi.getTimerCount()).toBe(1);
      await reader.cancel();
      expect(vi.getTimerCount()).toBe(0);
      expect((await pending).done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
