import { defineTool } from "@agent-core/core";
import { z } from "zod";

export interface CurrentTime {
  /** Unix time in whole seconds. */
  timestamp: number;
  /** ISO-8601 local wall time with the zone's offset, e.g. 2026-11-22T04:05:06+01:00 ("Z" when the offset is 0). */
  datetime: string;
  /**
   * The zone as the caller named it. Not `resolvedOptions().timeZone`: Node's ICU "canonicalizes" to
   * legacy names (Asia/Kolkata comes back as Asia/Calcutta), which would puzzle the reader.
   */
  timezone: string;
}

/** `now` is injectable so tests (and replays) get a fixed clock. */
export function createCurrentTimeTool(options: { now?: () => Date } = {}) {
  const now = options.now ?? (() => new Date());
  return defineTool({
    name: "get_current_time",
    description: "Returns the current date and time, optionally in an IANA time zone.",
    inputSchema: z.object({
      timeZone: z.string().optional().describe("IANA time zone such as Europe/Paris; default UTC"),
    }),
    execute: ({ timeZone }): CurrentTime => describeTime(now(), timeZone ?? "UTC"),
  });
}

export const currentTimeTool = createCurrentTimeTool();

function describeTime(date: Date, timeZone: string): CurrentTime {
  const format = wallClockFormat(timeZone);
  // Whole seconds, so the datetime (which has no fraction) and the offset agree exactly.
  const utcMs = Math.floor(date.getTime() / 1000) * 1000;
  const wall = wallClockParts(format, new Date(utcMs));
  const localAsUtcMs = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  const offsetMinutes = Math.round((localAsUtcMs - utcMs) / 60_000);
  const datetime =
    `${pad(wall.year, 4)}-${pad(wall.month)}-${pad(wall.day)}` +
    `T${pad(wall.hour)}:${pad(wall.minute)}:${pad(wall.second)}${formatOffset(offsetMinutes)}`;
  return { timestamp: utcMs / 1000, datetime, timezone: timeZone };
}

function wallClockFormat(timeZone: string): Intl.DateTimeFormat {
  try {
    return new Intl.DateTimeFormat("en-US", {
      timeZone,
      // h23, not hour12: false, which some engines render as "24" at midnight.
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
  } catch {
    throw new Error(`Unknown time zone "${timeZone}"; use an IANA name such as "Europe/Paris".`);
  }
}

type WallClock = Record<"year" | "month" | "day" | "hour" | "minute" | "second", number>;

function wallClockParts(format: Intl.DateTimeFormat, date: Date): WallClock {
  const wall: WallClock = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (const part of format.formatToParts(date))
    if (part.type in wall) wall[part.type as keyof WallClock] = Number(part.value);
  return wall;
}

function formatOffset(minutes: number): string {
  if (minutes === 0) return "Z";
  const sign = minutes < 0 ? "-" : "+";
  const absolute = Math.abs(minutes);
  return `${sign}${pad(Math.floor(absolute / 60))}:${pad(absolute % 60)}`;
}

function pad(value: number, width = 2): string {
  return String(value).padStart(width, "0");
}
