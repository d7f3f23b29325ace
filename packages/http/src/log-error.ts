import type { Logger } from "@agent-core/core";

/**
 * Writes an error line to the server's logger. A logger that throws, or an async one whose line
 * rejects, loses the line, never the answer: the request still gets its 500, and nothing is left
 * to reject unhandled (which ends a Node process, and left a client of `serveNode` waiting for ever).
 */
export function logError(logger: Logger, fields: Record<string, unknown>, message: string): void {
  try {
    // Typed to return nothing, yet an async logger's line is a promise: any thenable, not only
    // `instanceof Promise` (a logger made in another realm, a vm context, returns that realm's).
    const written: unknown = logger.error(fields, message);
    if (typeof written === "object" && written !== null) {
      const { then } = written as { then?: unknown };
      if (typeof then === "function") then.call(written, undefined, () => {});
    }
  } catch {
    // The line is lost; the server goes on answering.
  }
}
