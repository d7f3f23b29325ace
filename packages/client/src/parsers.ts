import type { ClientErrorEvent, ClientEvent } from "./errors.js";

/** The server's keep-alive while a run is quiet: not one of the run's events (no `runId`, no `seq`). */
export interface Heartbeat {
  type: "heartbeat";
  ts: number;
}

/**
 * What a parser returns for each complete event of the stream: the event (any JSON object with a
 * string `type`, handed on as it came, without schema validation), a {@link Heartbeat}, or a
 * `client_error` event with code `"malformed-event"` for a line that is not one.
 */
export type Parsed = ClientEvent | Heartbeat;

/**
 * Splits decoded text into lines, across chunks. Bytes go through one streaming `TextDecoder`, so a
 * UTF-8 character split between two chunks decodes right. With `cr`, `\r\n`, `\r` and `\n` all end
 * a line (SSE); without, only `\n` does (NDJSON, where a `\r` before it is JSON whitespace).
 */
class LineSplitter {
  readonly #decoder = new TextDecoder("utf-8");
  readonly #breaks: RegExp;
  /** The current line's text so far: joined once the line ends, so a long line costs O(length). */
  #parts: string[] = [];
  /** The last chunk ended with `\r`: a `\n` starting the next one belongs to that line break. */
  #afterCR = false;

  constructor(cr: boolean) {
    this.#breaks = cr ? /\r\n|\r|\n/g : /\n/g;
  }

  push(chunk: Uint8Array | string): string[] {
    return this.#split(typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true }));
  }

  /** The remaining lines, the last one unterminated (if not empty). */
  end(): string[] {
    const lines = this.#split(this.#decoder.decode());
    const rest = this.#parts.join("");
    this.#parts = [];
    this.#afterCR = false;
    if (rest !== "") lines.push(rest);
    return lines;
  }

  #split(text: string): string[] {
    const lines: string[] = [];
    if (text === "") return lines;
    let start = 0;
    if (this.#afterCR) {
      this.#afterCR = false;
      if (text.charCodeAt(0) === 10) start = 1;
    }
    const breaks = this.#breaks;
    breaks.lastIndex = start;
    for (let match = breaks.exec(text); match !== null; match = breaks.exec(text)) {
      this.#parts.push(text.slice(start, match.index));
      lines.push(this.#parts.join(""));
      this.#parts = [];
      start = match.index + match[0].length;
      // A lone "\r" at the very end may be the first half of a "\r\n" split between chunks.
      if (match[0] === "\r" && start === text.length) this.#afterCR = true;
    }
    if (start < text.length) this.#parts.push(text.slice(start));
    return lines;
  }
}

/** Parses one event's JSON text, or says why it is not an event. Never throws. */
function parseEvent(text: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return malformed(`Not JSON: ${error instanceof Error ? error.message : String(error)}`, text);
  }
  if (
    typeof value !== "object" ||
    value === null ||
    Array.isArray(value) ||
    typeof (value as { type?: unknown }).type !== "string"
  )
    return malformed('Not an event: an event is a JSON object with a string "type".', text);
  return value as Parsed;
}

function malformed(message: string, line: string): ClientErrorEvent {
  return { type: "client_error", code: "malformed-event", message, line };
}

/**
 * An incremental parser of NDJSON (`application/x-ndjson`): one JSON object per line.
 *
 * Feed it chunks as they arrive, split anywhere (mid-line, mid-UTF-8 character), with `push`; call
 * `end` once the stream is over. Blank lines are skipped; a line that is not a JSON object with a
 * string `type` becomes a `client_error` event (`"malformed-event"`) and the lines after it still
 * parse. `end` also parses a last line without its `\n`.
 *
 * Give it either bytes or strings, not both: bytes go through a streaming `TextDecoder` (invalid
 * UTF-8 becomes U+FFFD), strings are taken as already decoded.
 */
export class NdjsonParser {
  readonly #lines = new LineSplitter(false);

  /** Parses a chunk: returns the events its complete lines hold, in order. */
  push(chunk: Uint8Array | string): Parsed[] {
    return this.#parse(this.#lines.push(chunk));
  }

  /** The stream is over: returns the events of what was left, including an unterminated last line. */
  end(): Parsed[] {
    return this.#parse(this.#lines.end());
  }

  #parse(lines: string[]): Parsed[] {
    const parsed: Parsed[] = [];
    for (const line of lines) if (line.trim() !== "") parsed.push(parseEvent(line));
    return parsed;
  }
}

/**
 * An incremental parser of server-sent events (`text/event-stream`), as the HTML standard reads them:
 * lines end with `\n`, `\r\n` or `\r` (even split between chunks), `:` lines are comments, the
 * `data:` lines of an event are joined with `\n`, and a blank line ends the event. The joined data
 * is the event's JSON (the `event:` and `id:` fields repeat its `type` and `seq`, and are not needed).
 * Data that is not a JSON object with a string `type` becomes a `client_error` event
 * (`"malformed-event"`); the events after it still parse.
 *
 * Like `EventSource`, `end` drops an event whose blank line never came: it may be cut short.
 * Give it either bytes or strings, not both (see {@link NdjsonParser}).
 */
export class SseParser {
  readonly #lines = new LineSplitter(true);
  /** The current event's `data:` lines; undefined while it has none. */
  #data: string[] | undefined;

  /** Parses a chunk: returns the events it completes, in order. */
  push(chunk: Uint8Array | string): Parsed[] {
    return this.#parse(this.#lines.push(chunk));
  }

  /** The stream is over: an event without its closing blank line is dropped. */
  end(): Parsed[] {
    const parsed = this.#parse(this.#lines.end());
    this.#data = undefined;
    return parsed;
  }

  #parse(lines: string[]): Parsed[] {
    const parsed: Parsed[] = [];
    for (const line of lines) {
      if (line === "") {
        const data = this.#data;
        this.#data = undefined;
        if (data !== undefined) {
          const text = data.join("\n");
          if (text !== "") parsed.push(parseEvent(text));
        }
        continue;
      }
      if (line.charCodeAt(0) === 58) continue; // ":" a comment
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      if (field !== "data") continue; // event, id, retry and unknown fields: nothing to do
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
      if (this.#data === undefined) this.#data = [value];
      else this.#data.push(value);
    }
    return parsed;
  }
}
