import type { LanguageModelV4StreamPart } from "@ai-sdk/provider";

/*
 * A provider's stream as a model call reads it: checked to be one, read as a web stream (whose
 * pending read a cancel settles), with the event loop let go round now and then, and cancelled
 * without a rejection left unhandled.
 */

export function cancelReader(
  reader: ReadableStreamDefaultReader<LanguageModelV4StreamPart>,
  reason: unknown,
): void {
  reader.cancel(reason).catch(ignore);
}

export function ignore(): void {}

/** Cancels a stream that arrived after the call gave up on it; a malformed result (see `StepState.read`) has none. */
export function cancelLate(late: { stream?: unknown } | undefined): void {
  // Runs in a then() of the provider's promise: what a `stream` getter or a `cancel` of the
  // provider's own throws there would be a rejection nobody handles, and the call failed already.
  try {
    const stream = late?.stream;
    if (isReadable(stream)) stream.cancel().catch(ignore);
  } catch {
    // Nothing to cancel that could be reached.
  }
}

// Node's global `ReadableStream` is a lazy getter on `globalThis`: read once.
const WebReadableStream = globalThis.ReadableStream;

export function isReadable(stream: unknown): stream is ReadableStream<LanguageModelV4StreamPart> {
  // The common case first: reading a web stream's methods off it costs more than the check.
  if (stream instanceof WebReadableStream) return true;
  const { getReader, cancel } =
    typeof stream === "object" && stream !== null ? (stream as Partial<ReadableStream>) : {};
  return typeof getReader === "function" && typeof cancel === "function";
}

/**
 * A web stream settles a pending read when its reader is cancelled, which is how an abort or a
 * timeout ends the read of a stream that sends nothing more. A stream that only looks like one
 * (another realm's, a polyfill's, a provider's own object) may not: read through a web stream, a
 * timeout ends the call even when its own `read()` never settles.
 */
export function asWebStream(
  stream: Pick<ReadableStream<LanguageModelV4StreamPart>, "getReader">,
): ReadableStream<LanguageModelV4StreamPart> {
  if (stream instanceof WebReadableStream) return stream as ReadableStream<LanguageModelV4StreamPart>;
  const reader = stream.getReader();
  return new WebReadableStream<LanguageModelV4StreamPart>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** Parts read before the event loop is let go round: rare enough to cost nothing per part. */
export const PARTS_BETWEEN_TURNS = 1024;

/**
 * Node's `setImmediate` (a timeout elsewhere), taken as the module loads: a test's fake timers
 * installed later do not hold this turn back, which is no timer of the call's.
 */
const scheduleTurn: (run: () => void) => unknown =
  typeof setImmediate === "function" ? setImmediate : (run) => setTimeout(run, 0);

/** Settles once the event loop has gone round, running the timers that are due. */
export function nextTurnOfEventLoop(): Promise<void> {
  return new Promise((resolve) => scheduleTurn(resolve));
}
