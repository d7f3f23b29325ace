import type { ClientErrorEvent, ClientEvent } from "./errors.js";

/** The server's keep-alive while a run is quiet: not one of the run's events (no `runId`, no `seq`). */
export interface Heartbeat {
  type: "heartbeat";
  ts: number;
}

/**
 * What a parser returns for each complete event of the stream: the event (any JSON object with a
 * string `type` other than `"client_error"`, handed on as it came, without schema validation), a
 * {@link Heartbeat}, or a `client_error` event with code `"malformed-event"` for a line that is not
 * one: every `client_error` a parser returns is its own.
 */
export type Parsed = ClientEvent | Heartbeat;

/** What an event parser may be given. */
export interface ParserOptions {
  /**
   * The most bytes the stream may bring without completing an event (default: no limit). Past it
   * the parser sets `tooLarge` and takes nothing more (the events before it were returned), so a
   * line that never ends is not held past the limit.
   */
  maxEventBytes?: number;
}

const LF = 10;
const CR = 13;
const encoder = new TextEncoder();

/**
 * What both parsers share: the stream split into lines, and the bytes of the unfinished event
 * counted as they come. Lines are cut in the bytes, where UTF-8 never puts a line break inside a
 * character; one streaming `TextDecoder` decodes them, so a character split between chunks decodes
 * right. With `cr`, `\r\n`, `\r` and `\n` all end a line (SSE); without, only `\n` does (NDJSON,
 * where a `\r` before it is JSON whitespace).
 */
abstract class EventParser {
  readonly #decoder = new TextDecoder("utf-8");
  readonly #cr: boolean;
  readonly #maxEventBytes: number;
  /** The current line's text so far: joined once the line ends, so a long line costs O(length). */
  #parts: string[] = [];
  /** The bytes since an event was last completed: what is held of the next one. */
  #eventBytes = 0;
  /** The last line ended with `\r`: a `\n` next belongs to that line break. */
  #afterCR = false;
  #tooLarge = false;

  constructor(cr: boolean, options: ParserOptions) {
    this.#cr = cr;
    this.#maxEventBytes = options.maxEventBytes ?? Number.POSITIVE_INFINITY;
  }

  /** True once an event grew past `maxEventBytes`: the parser takes nothing more. */
  get tooLarge(): boolean {
    return this.#tooLarge;
  }

  /** Parses a chunk: returns the events it completes, in order (up to one too large). */
  push(chunk: Uint8Array | string): Parsed[] {
    if (this.#tooLarge) return [];
    const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk;
    const parsed: Parsed[] = [];
    // The next `\n` and `\r` at or after the line's start (the chunk's length if none): each byte
    // is searched once, however many lines the chunk holds.
    let lf = -1;
    let cr = this.#cr ? -1 : bytes.length;
    for (let start = 0; start < bytes.length; ) {
      // The `\n` of a `\r\n` ends no line. It counts toward what follows the `\r`, where the line
      // (and maybe an event) ended: the same count however the chunks cut the `\r\n`.
      const from = this.#afterCR && bytes[start] === LF ? start + 1 : start;
      this.#afterCR = false;
      if (lf < from) lf = indexOrLength(bytes, LF, from);
      if (cr < from) cr = indexOrLength(bytes, CR, from);
      const end = Math.min(lf, cr);
      // Counted before it is held: a line that never ends takes no more memory than the limit, and
      // what was held of it is let go.
      this.#eventBytes += Math.min(end + 1, bytes.length) - start;
      if (this.#eventBytes > this.#maxEventBytes) {
        this.#tooLarge = true;
        this.#parts = [];
        break;
      }
      // Decoded with its line break, which ends any invalid sequence before it as a whole decode would.
      const text = this.#decoder.decode(bytes.subarray(from, end + 1), { stream: true });
      if (end === bytes.length) {
        this.#parts.push(text);
        break;
      }
      const line = this.#joinLine(text.slice(0, -1));
      this.#afterCR = bytes[end] === CR;
      start = end + 1;
      const event = this.parseLine(line);
      if (event !== undefined) {
        parsed.push(event);
        this.#eventBytes = 0;
      }
    }
    return parsed;
  }

  /** The stream is over: returns the events of what was left (see each parser). */
  end(): Parsed[] {
    if (this.#tooLarge) return [];
    const rest = this.#joinLine(this.#decoder.decode());
    this.#afterCR = false;
    this.#eventBytes = 0;
    const event = rest === "" ? undefined : this.parseLine(rest);
    return event === undefined ? [] : [event];
  }

  /** Reads one complete line: the event it completes, if any. */
  protected abstract parseLine(line: string): Parsed | undefined;

  /** The current line's text: what was held of it, and `last`, its end. */
  #joinLine(last: string): string {
    if (this.#parts.length === 0) return last;
    this.#parts.push(last);
    const line = this.#parts.join("");
    this.#parts = [];
    return line;
  }
}

/** The index of `byte` from `start` on, or the chunk's length when there is none. */
function indexOrLength(chunk: Uint8Array, byte: number, start: number): number {
  const at = chunk.indexOf(byte, start);
  return at === -1 ? chunk.length : at;
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
  // Handed on as it came, it would pass for a problem the client met (a rejected tool result, say),
  // with none of the checks a run's event gets.
  if ((value as { type: string }).type === "client_error")
    return malformed(
      "Not an event: \"client_error\" is the type of the client's own events, never of the stream's.",
      text,
    );
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
 * UTF-8 becomes U+FFFD), strings are taken as already decoded, whole characters, and counted in
 * UTF-8 bytes. Toward `maxEventBytes` an event is its line, `\n` included, and the blank lines
 * before it.
 */
export class NdjsonParser extends EventParser {
  constructor(options: ParserOptions = {}) {
    super(false, options);
  }

  protected parseLine(line: string): Parsed | undefined {
    return line.trim() === "" ? undefined : parseEvent(line);
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
 * Give it either bytes or strings, not both (see {@link NdjsonParser}). Toward `maxEventBytes` an
 * event counts all its lines, comments included, with their line breaks; it is complete once the
 * `\r` or `\n` of its blank line comes, so the `\n` of a closing `\r\n` counts toward the next one.
 */
export class SseParser extends EventParser {
  /** The current event's `data:` lines; undefined while it has none. */
  #data: string[] | undefined;

  constructor(options: ParserOptions = {}) {
    super(true, options);
  }

  /** The stream is over: an event without its closing blank line is dropped. */
  override end(): Parsed[] {
    const parsed = super.end();
    this.#data = undefined;
    return parsed;
  }

  protected parseLine(line: string): Parsed | undefined {
    if (line === "") {
      const data = this.#data;
      this.#data = undefined;
      const text = data?.join("\n");
      return text === undefined || text === "" ? undefined : parseEvent(text);
    }
    if (line.charCodeAt(0) === 58) return undefined; // ":" a comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== "data") return undefined; // event, id, retry and unknown fields: nothing to do
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (this.#data === undefined) this.#data = [value];
    else this.#data.push(value);
    return undefined;
  }
}
