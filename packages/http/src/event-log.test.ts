import { describe, expect, it } from "vitest";
import { EventLog, EventsExpiredError } from "./event-log.js";

const append = (log: EventLog, seq: number) => log.append({ seq, type: "text_delta" }, `{"seq":${seq}}`);

describe("EventLog", () => {
  it("reads from any seq it still holds, and wakes every waiting reader with one promise", async () => {
    const log = new EventLog(100);
    const first = log.changed(0);
    const second = log.changed(0);
    expect(second).toBe(first);
    append(log, 0);
    await first;
    expect(log.read(0).map((event) => event.seq)).toEqual([0]);
    expect(log.read(1)).toEqual([]);
    // Nothing new after seq 0: the next wait is a new promise, and an older position answers at once.
    expect(log.changed(1)).not.toBe(first);
    await log.changed(0);
  });

  it("drops the oldest half when full, and refuses a reader that needed them", () => {
    const log = new EventLog(4);
    for (let seq = 0; seq < 5; seq++) append(log, seq);
    expect(log.end).toBe(5);
    expect(log.read(2).map((event) => event.seq)).toEqual([2, 3, 4]);
    expect(() => log.read(1)).toThrow(EventsExpiredError);
    expect(() => log.read(1)).toThrow("Events after seq 0 are no longer kept (the log starts at seq 2).");
  });

  it("takes nothing after it closed, and answers every wait at once", async () => {
    const log = new EventLog(10);
    append(log, 0);
    const waiting = log.changed(1);
    log.close();
    await waiting;
    append(log, 1);
    expect(log.end).toBe(1);
    expect(log.closed).toBe(true);
    await log.changed(5);
  });
});
