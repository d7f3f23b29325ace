import type { LoggedEvent } from "./event-log.js";

/** How a stream is written: NDJSON (one JSON object per line) or SSE, chosen by `Accept`. */
export type WireFormat = "ndjson" | "sse";

export const CONTENT_TYPES: Record<WireFormat, string> = {
  ndjson: "application/x-ndjson; charset=utf-8",
  sse: "text/event-stream; charset=utf-8",
};

/**
 * SSE when `Accept` lists `text/event-stream` with a quality above 0 and not below that of
 * `application/x-ndjson`; NDJSON otherwise (no `Accept`, only wildcards, or SSE refused with `q=0`).
 * Media types are case-insensitive; a `q` that is not a number from 0 to 1 counts as 1.
 */
export function formatFor(request: Request): WireFormat {
  const accept = request.headers.get("accept")?.toLowerCase();
  if (accept === undefined || !accept.includes("text/event-stream")) return "ndjson";
  let sse = 0;
  let ndjson = 0;
  for (const range of accept.split(",")) {
    const [type = "", ...params] = range.split(";");
    const media = type.trim();
    if (media === "text/event-stream") sse = Math.max(sse, qualityOf(params));
    else if (media === "application/x-ndjson") ndjson = Math.max(ndjson, qualityOf(params));
  }
  return sse > 0 && sse >= ndjson ? "sse" : "ndjson";
}

function qualityOf(params: string[]): number {
  for (const param of params) {
    const [name = "", value = ""] = param.split("=");
    if (name.trim() !== "q") continue;
    const q = Number(value.trim());
    return value.trim() !== "" && q >= 0 && q <= 1 ? q : 1;
  }
  return 1;
}

/**
 * One event on the wire, as the text before its JSON, the JSON, and the text after it (kept apart
 * so that a large event is written in pieces without a copy of it): SSE gives it `id:` = seq (for
 * `Last-Event-ID`) and `event:` = type.
 */
export function frame(format: WireFormat, event: LoggedEvent): [head: string, json: string, tail: string] {
  return format === "ndjson"
    ? ["", event.json, "\n"]
    : [`id: ${event.seq}\nevent: ${event.type}\ndata: `, event.json, "\n\n"];
}

/** A heartbeat while the run is quiet: not part of the run's events (no runId, no seq). */
export function heartbeatFrame(format: WireFormat, ts: number): string {
  const json = `{"type":"heartbeat","ts":${ts}}`;
  return format === "ndjson" ? `${json}\n` : `event: heartbeat\ndata: ${json}\n\n`;
}
