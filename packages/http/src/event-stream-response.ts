import { EventsExpiredError, type LoggedEvent } from "./event-log.js";
import type { ServerRun } from "./server-run.js";
import { CONTENT_TYPES, formatFor, frame, heartbeatFrame } from "./wire.js";

export interface EventStreamOptions {
  heartbeatMs: number;
  now: () => number;
  detachGraceMs?: number;
}

const encoder = new TextEncoder();

/**
 * Most text one `pull` hands the connection, a large event in pieces: a reader that stops
 * reading holds the connection's buffer and this, never a copy of the log.
 */
const CHUNK_CHARS = 64 * 1024;

/**
 * A response that streams a run's events from seq `from` on, in the format `Accept` asks for, and
 * ends after `agent_end`. It reads the run's log only when the client's connection takes more
 * (`pull`), so a slow reader holds a position, not a copy of the events. A heartbeat goes out
 * when nothing else did for `heartbeatMs`. The stream's cancellation (the client went away) and
 * the request's abort detach it from the run.
 */
export function streamEvents(
  request: Request,
  run: ServerRun,
  from: number,
  options: EventStreamOptions & { detachGraceMs: number },
): Response {
  const format = formatFor(request);
  const { log } = run;
  // Checked now, so a re-attach to events already dropped is a 410, not a stream that breaks.
  log.read(from);
  let next = from;
  /** How much of the frame of event `next` went out already (a large event goes in pieces). */
  let written = 0;
  /** The frames from event `next` on, at most `CHUNK_CHARS` of them. */
  const piece = (events: readonly LoggedEvent[]): string => {
    let text = "";
    for (const event of events) {
      const parts = frame(format, event);
      const length = parts[0].length + parts[1].length + parts[2].length;
      let end = Math.min(length, written + CHUNK_CHARS - text.length);
      // Cut between the halves of a surrogate pair, each half would be encoded as U+FFFD.
      if (end < length && isHighSurrogate(codeUnitAt(parts, end - 1))) end--;
      text += sliceOf(parts, written, end);
      if (end < length) {
        written = end;
        return text;
      }
      written = 0;
      next++;
      if (text.length >= CHUNK_CHARS) return text;
    }
    return text;
  };
  /**
   * The wait for the event after the last one sent, made once per event, not once per heartbeat:
   * each wait on the log's promise stays on it until an event comes, however long the run is
   * quiet (a client call waiting for its result).
   */
  let waiting: { from: number; arrived: boolean; wake?: (() => void) | undefined } | undefined;
  /** The heartbeat of the wait under way: a cancelled stream stops it rather than keep it to its time. */
  let heartbeat: ReturnType<typeof setTimeout> | undefined;
  const nextEventWithin = (ms: number): Promise<boolean> => {
    if (waiting?.from !== next) {
      const wait: NonNullable<typeof waiting> = { from: next, arrived: false };
      waiting = wait;
      void log.changed(next).then(() => {
        wait.arrived = true;
        wait.wake?.();
      });
    }
    const wait = waiting;
    if (wait.arrived) return Promise.resolve(true);
    return new Promise((resolve) => {
      heartbeat = setTimeout(() => {
        wait.wake = undefined;
        resolve(false);
      }, ms);
      wait.wake = () => {
        clearTimeout(heartbeat);
        resolve(true);
      };
    });
  };
  let detached = false;
  const detach = () => {
    if (detached) return;
    detached = true;
    request.signal.removeEventListener("abort", detach);
    run.detach(options.detachGraceMs);
  };
  run.attach();
  request.signal.addEventListener("abort", detach, { once: true });
  // Gone already (while the run was being started): no abort event will come to say so.
  if (request.signal.aborted) detach();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (;;) {
            const events = log.read(next);
            if (events.length > 0) {
              controller.enqueue(encoder.encode(piece(events)));
              return;
            }
            if (log.closed) {
              detach();
              controller.close();
              return;
            }
            if (!(await nextEventWithin(options.heartbeatMs))) {
              controller.enqueue(encoder.encode(heartbeatFrame(format, options.now())));
              return;
            }
          }
        } catch (error) {
          detach();
          // Fell behind the log's bound while streaming: nothing right can follow.
          if (error instanceof EventsExpiredError) controller.error(error);
          else throw error;
        }
      },
      cancel() {
        clearTimeout(heartbeat);
        detach();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": CONTENT_TYPES[format],
      "cache-control": "no-cache, no-transform",
      // nginx and others buffer responses by default; a buffered stream arrives all at once.
      "x-accel-buffering": "no",
      "x-run-id": run.runId,
    },
  });
}

/** The text from `start` to `end` of the parts written one after the other. */
function sliceOf(parts: readonly string[], start: number, end: number): string {
  let text = "";
  let at = 0;
  for (const part of parts) {
    if (start < at + part.length && end > at) text += part.slice(Math.max(start - at, 0), end - at);
    at += part.length;
  }
  return text;
}

/** The UTF-16 code unit at `index` of the parts written one after the other. */
function codeUnitAt(parts: readonly string[], index: number): number {
  let at = index;
  for (const part of parts) {
    if (at < part.length) return part.charCodeAt(at);
    at -= part.length;
  }
  return Number.NaN;
}

function isHighSurrogate(codeUnit: number): boolean {
  return codeUnit >= 0xd800 && codeUnit <= 0xdbff;
}
