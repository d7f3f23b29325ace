import type { LoggedEvent } from "./event-log.js";

/** How a stream is written: NDJSON (one JSON object per line) or SSE, chosen by `Accept`. */
export type WireFormat = "ndjson" | "sse";

export const CONTENT_TYPES: Record<WireFormat, string> = {
  ndjson: "application/x-ndjson; charset=utf-8",
  sse: "text/event-stream; charset=utf-8",
};

export function formatFor(request: Request): WireFormat {
  return (request.headers.get("accept") ?? "").includes("text/event-stream") ? "sse" : "ndjson";
}

/** One event on the wire: SSE gives it `id:` = seq (for `Last-Event-ID`) and `event:` = type. */
export function frame(format: WireFormat, event: LoggedEvent): string {
  return format === "ndjson"
    ? `${event.json}\n`
    : `id: ${event.seq}\nevent: ${event.type}\ndata: ${event.json}\n\n`;
}

/** A heartbeat while the run is quiet: not part of the run's events (no runId, no seq). */
export function heartbeatFrame(format: WireFormat, ts: number): string {
  const json = `{"type":"heartbeat","ts":${ts}}`;
  return format === "ndjson" ? `${json}\n` : `event: heartbeat\ndata: ${json}\n\n`;
}
