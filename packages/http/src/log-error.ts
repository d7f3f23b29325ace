import { failSafeLogger, type Logger } from "@agent-core/core";

/**
 * Writes an error line to the server's logger. A logger that throws, or an async one whose line
 * rejects, loses the line, never the answer: the request still gets its 500, and nothing is left
 * to reject unhandled (which ends a Node process, and left a client of `serveNode` waiting for ever).
 */
export function logError(logger: Logger, fields: Record<string, unknown>, message: string): void {
  failSafeLogger(logger).error(fields, message);
}
