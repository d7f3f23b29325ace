import type { InjectionToken } from "tsyringe";
import { InvalidConfigError } from "../errors.js";

/**
 * One level of a structured logger: the fields of the line, then its message. The shape of
 * pino's `logger.info(obj, msg)`, so a pino logger (or one of the same shape) plugs in as is.
 */
export type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Where the library's log lines go. Every line it writes about a run carries `runId` in its
 * fields. The default writes nothing; the library never writes to the console itself.
 */
export interface Logger {
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
}

/** Where the library's log lines go (`config.logger` wins); silent by default. */
export const LOGGER: InjectionToken<Logger> = Symbol.for("agent-core.Logger");

const writeNothing: LogFn = () => {};

/** The default logger: every level writes nothing, and a run with it logs nothing at all. */
export const silentLogger: Logger = Object.freeze({
  error: writeNothing,
  warn: writeNothing,
  info: writeNothing,
  debug: writeNothing,
});

/**
 * The logger, with what its lines return caught. A `LogFn` is typed to return nothing, yet an
 * async logger's returns a promise, whose rejection, unhandled, would end a default Node process:
 * the line is lost instead, as when a logger throws.
 */
export function rejectionsCaught(logger: Logger): Logger {
  return {
    error: (fields, message) => catchRejection(logger.error(fields, message)),
    warn: (fields, message) => catchRejection(logger.warn(fields, message)),
    info: (fields, message) => catchRejection(logger.info(fields, message)),
    debug: (fields, message) => catchRejection(logger.debug(fields, message)),
  };
}

/**
 * The logger, whose lines never throw and never reject: a line the logger could not write (it
 * threw, or its promise rejected) is lost, never the work that wrote it. For a logger handed to code
 * that does not expect a line to fail (a dependency's, an error path).
 */
export function failSafeLogger(logger: Logger): Logger {
  // Refused here rather than made safe: each line would fail, and be lost without a word.
  if (!isLogger(logger))
    throw new InvalidConfigError(
      "failSafeLogger(logger) needs a logger: an object with error, warn, info and debug functions (pino's shape).",
    );
  const failSafe =
    (level: keyof Logger): LogFn =>
    (fields, message) => {
      try {
        catchRejection(logger[level](fields, message));
      } catch {
        // The line is lost; what wrote it goes on.
      }
    };
  return {
    error: failSafe("error"),
    warn: failSafe("warn"),
    info: failSafe("info"),
    debug: failSafe("debug"),
  };
}

/**
 * Catches the rejection of what a log line returned, when it is a promise (see `rejectionsCaught`).
 * Any thenable, not only `instanceof Promise`: a logger made in another realm (a `vm` context)
 * returns that realm's promises, whose rejections Node reports all the same.
 */
function catchRejection(written: unknown): void {
  if (typeof written !== "object" || written === null) return;
  try {
    const { then } = written as { then?: unknown };
    if (typeof then === "function") then.call(written, undefined, () => {});
  } catch {
    // A thenable whose `then` throws: the line is lost, as when the logger throws.
  }
}

/** Whether a value has the four levels a `Logger` needs (config validation). */
export function isLogger(value: unknown): value is Logger {
  if (typeof value !== "object" || value === null) return false;
  const logger = value as Record<string, unknown>;
  try {
    return (
      typeof logger.error === "function" &&
      typeof logger.warn === "function" &&
      typeof logger.info === "function" &&
      typeof logger.debug === "function"
    );
  } catch {
    // A level that cannot be read (a getter or a Proxy that throws): no logger, refused as one
    // without its levels is, rather than with the getter's own error.
    return false;
  }
}
