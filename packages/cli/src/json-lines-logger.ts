import type { Logger } from "@agent-core/core";
import type { TextSink } from "./render.js";

/**
 * `--verbose`: the library's log lines as JSON lines (pino's field names: `level`, `time`, `msg`,
 * then the line's fields), written to stderr so that `--json` output on stdout stays clean.
 */
export function jsonLinesLogger(out: TextSink, now: () => number = Date.now): Logger {
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      out.write(`${JSON.stringify({ level, time: now(), msg: message, ...fields }, withErrors)}\n`);
    };
  return { error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") };
}

/** An Error's own fields are not enumerable: JSON.stringify would write `{}`. */
function withErrors(_key: string, value: unknown): unknown {
  return value instanceof Error ? { type: value.name, message: value.message, stack: value.stack } : value;
}
