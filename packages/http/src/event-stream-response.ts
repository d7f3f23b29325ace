import { EventsExpiredError } from "./event-log.js";
import type { ServerRun } from "./server-run.js";
import { CONTENT_TYPES, formatFor, frame, heartbeatFrame } from "./wire.js";

export interface EventStreamOptions {
  heartbeatMs: number;
  now: () => number;
  detachGraceMs?: number;
}

const encoder = new TextEncoder();

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
              let text = "";
              for (const event of events) text += frame(format, event);
              next += events.length;
              controller.enqueue(encoder.encode(text));
              return;
            }
            if (log.closed) {
              detach();
              controller.close();
              return;
            }
            if (!(await changedWithin(log.changed(next), options.heartbeatMs))) {
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

/** Whether `changed` settled within `ms`. */
function changedWithin(changed: Promise<void>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([changed.then(() => true), timeout]).finally(() => clearTimeout(timer));
}
