import { describe, expect, it } from "vitest";
import { createCurrentTimeTool, currentTimeTool } from "./current-time.js";

const options = { signal: new AbortController().signal, toolCallId: "t", idempotencyKey: "r:t" };

// 2026-11-22T03:05:06.789Z: Paris is on winter time (+01:00), New York on EST (-05:00).
const fixed = createCurrentTimeTool({ now: () => new Date(Date.UTC(2026, 10, 22, 3, 5, 6, 789)) });
const timestamp = Math.floor(Date.UTC(2026, 10, 22, 3, 5, 6) / 1000);

describe("get_current_time", () => {
  it("defaults to UTC with a Z suffix and a whole-second timestamp", async () => {
    expect(await fixed.execute({}, options)).toEqual({
      timestamp,
      datetime: "2026-11-22T03:05:06Z",
      timezone: "UTC",
    });
  });

  it.each([
    ["Europe/Paris", "2026-11-22T04:05:06+01:00"],
    ["America/New_York", "2026-11-21T22:05:06-05:00"],
    ["Asia/Kolkata", "2026-11-22T08:35:06+05:30"],
    ["Asia/Kathmandu", "2026-11-22T08:50:06+05:45"],
  ])("gives the wall time and offset in %s", async (timeZone, datetime) => {
    expect(await fixed.execute({ timeZone }, options)).toEqual({ timestamp, datetime, timezone: timeZone });
  });

  it("follows daylight saving time", async () => {
    const summer = createCurrentTimeTool({ now: () => new Date(Date.UTC(2026, 6, 1, 12, 0, 0)) });
    expect(await summer.execute({ timeZone: "Europe/Paris" }, options)).toMatchObject({
      datetime: "2026-07-01T14:00:00+02:00",
    });
  });

  it("writes midnight as 00, not 24", async () => {
    const midnight = createCurrentTimeTool({ now: () => new Date(Date.UTC(2026, 0, 1, 0, 0, 0)) });
    expect(await midnight.execute({}, options)).toMatchObject({ datetime: "2026-01-01T00:00:00Z" });
  });

  it("accepts zone names in any case and echoes them", async () => {
    expect(await fixed.execute({ timeZone: "europe/paris" }, options)).toEqual({
      timestamp,
      datetime: "2026-11-22T04:05:06+01:00",
      timezone: "europe/paris",
    });
  });

  it("rejects an unknown zone with a hint", () => {
    expect(() => fixed.execute({ timeZone: "Mars/Base" }, options)).toThrow(
      'Unknown time zone "Mars/Base"; use an IANA name such as "Europe/Paris".',
    );
  });

  it("uses the real clock by default", async () => {
    const before = Math.floor(Date.now() / 1000);
    const result = await currentTimeTool.execute({}, options);
    expect(result.timestamp).toBeGreaterThanOrEqual(before);
    expect(result.timestamp).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(currentTimeTool.name).toBe("get_current_time");
    expect(currentTimeTool.jsonSchema).toMatchObject({ properties: { timeZone: { type: "string" } } });
  });
});
