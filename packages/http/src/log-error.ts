import type { Logger } from "@agent-core/core";

/**
 * Writes an error line to the server's logger. A logger that throws loses the line, never the
 * answer: the request still gets its 500, and nothing is left to reject unhandled (which ends a
 * Node process, and left a client of `serveNode` waiting for ever).
 */
export function logError(logger: Logger, fields: Record<string, unknown>, message: string): void {
  try {
    logger.error(fields, message);
  } catch {
    // The line is lost; the server goes on answering.
  }
}
