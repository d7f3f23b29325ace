import type { AgentEvent } from "@agent-core/core";
import { ClientError, type ClientErrorEvent, type ClientEvent, describe } from "./errors.js";
import { NdjsonParser, type Parsed, SseParser } from "./parsers.js";
import {
  ACCEPT,
  type Config,
  deadline,
  discard,
  httpError,
  ignore,
  isRunId,
  jsonInPlaceOfStream,
  MAX_RETRY_AFTER_MS,
  retryAfterMs,
  sleep,
  type Transport,
  untilAborted,
} from "./transport.js";

/** What the connection needs of the run it reads: values and callbacks, no more. */
export interface FollowedRun {
  /** Aborted when the run is cancelled or fails: it ends the connection and the wait before a re-attach. */
  readonly signal: AbortSignal;
  /** The run to re-attach to: undefined until the server named it. */
  currentRunId(): string | undefined;
  /** True once the run wants nothing more of this stream: it settled, or it suspended for client tools. */
  done(): boolean;
  /** Resolves when the consumer has room for more events: the connection reads no faster. */
  demand(): Promise<void>;
  /** A run id the server named (its `x-run-id` header, or an event's `runId`). */
  learnRunId(runId: string): void;
  /** An event new to the run: a replay after a re-attach never gets here. */
  receive(event: ClientEvent): void;
}

/** A run's start: its body, and the `Idempotency-Key` every post of it carries. */
export interface StartRequest {
  body: Record<string, unknown>;
  key: string;
}

/** Where a re-attaching run starts: after `after`, its last seq the caller had. */
export interface AttachPoint {
  runId: string;
  after: number;
}

/** How one connection ended, when the run goes on. */
interface Dropped {
  /** It delivered an event with a new seq: the re-attach count starts again. */
  progress: boolean;
  error: unknown;
  /** A 429's or 503's `Retry-After`. */
  retryAfterMs?: number | undefined;
}

/**
 * The network side of a `Run`: it reads the run's events (`POST /runs`, else
 * `GET …/events?after=<last seq>`) and re-attaches after each drop, until the run is `done()`. It
 * owns the last seq read of each run id; the run's ids, its events and its settlement stay the run's,
 * reached only through {@link FollowedRun}.
 */
export class RunConnection {
  readonly #transport: Transport;
  readonly #config: Config;
  readonly #run: FollowedRun;
  /** The last seq delivered, by run id: what re-attaches ask for, and what dedupes replays. */
  readonly #lastSeq = new Map<string, number>();

  constructor(transport: Transport, run: FollowedRun, attach: AttachPoint | undefined) {
    this.#transport = transport;
    this.#config = transport.config;
    this.#run = run;
    if (attach !== undefined) this.#lastSeq.set(attach.runId, attach.after);
  }

  /**
   * Reads the current run until its `agent_end`: `POST /runs` with `start` until the server named
   * the run (again, with the same `Idempotency-Key`, after a drop or a 429/503 with `Retry-After`:
   * the server answers a repeat with the same run), then re-attaching after each drop.
   */
  async read(start: StartRequest | undefined): Promise<void> {
    const { attempts, delayMs } = this.#config.reconnect;
    let retries = 0;
    while (!this.#run.done()) {
      const dropped = await this.#connect(this.#run.currentRunId() === undefined ? start : undefined);
      if (dropped === undefined || this.#run.done()) return;
      if (dropped.progress) retries = 0;
      // The server's error (a ClientError "http") when it asks for a longer wait than the client gives.
      if ((dropped.retryAfterMs ?? 0) > MAX_RETRY_AFTER_MS) throw dropped.error;
      if (retries >= attempts)
        throw new ClientError(
          "network",
          this.#run.currentRunId() === undefined
            ? `The run could not be started: ${attempts + 1} attempt(s) to post it with the same Idempotency-Key got no answer naming the run: ${describe(dropped.error)}`
            : `The event stream was lost and ${attempts} re-attach attempt(s) failed: ${describe(dropped.error)}`,
          { cause: dropped.error },
        );
      await sleep(dropped.retryAfterMs ?? delayMs * 2 ** retries, this.#run.signal);
      retries++;
    }
  }

  /**
   * The id of the run `start` started, asked for by posting it once more: the server answers a
   * repeat of its `Idempotency-Key` with that run (and starts it now if the first post never
   * reached it). Posted again as a cancel is (`postRetry`), and the answer's stream is not read.
   * Undefined when no answer within `idleTimeoutMs` names a run.
   */
  async nameStart(start: StartRequest): Promise<string | undefined> {
    const timeout = deadline(this.#config.idleTimeoutMs);
    try {
      const response = await this.#transport.post("/runs", start.body, {
        headers: { "idempotency-key": start.key },
        accept: ACCEPT[this.#config.format],
        signal: timeout.signal,
        retryNetwork: true,
        retryStatus: (status) => status === 503 || status === 429,
      });
      discard(response);
      const runId = response.headers.get("x-run-id");
      return response.ok && isRunId(runId) ? runId : undefined;
    } catch {
      return undefined;
    } finally {
      timeout.clear();
    }
  }

  /**
   * One connection: `POST /runs` with `start`, else `GET …/events?after=<last seq>`. Reads it to
   * its end. Returns undefined when the run is done, how it dropped otherwise; throws a
   * `ClientError` when the run cannot go on.
   */
  async #connect(start: StartRequest | undefined): Promise<Dropped | undefined> {
    const signal = this.#run.signal;
    const connection = new AbortController();
    // A start cancelled before the server named its run goes on until the server does (the answer's
    // headers, within idleTimeoutMs), so that the run can be cancelled on the server too.
    const stop = () => {
      if (start === undefined || this.#run.currentRunId() !== undefined) connection.abort(signal.reason);
    };
    signal.addEventListener("abort", stop, { once: true });
    let idle = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      timer = setTimeout(() => {
        idle = true;
        connection.abort(new Error(`nothing came for ${this.#config.idleTimeoutMs} ms`));
      }, this.#config.idleTimeoutMs);
    };
    const disarm = () => clearTimeout(timer);
    let progress = false;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    const accept = ACCEPT[this.#config.format];
    try {
      arm();
      const response = await untilAborted(
        start === undefined
          ? this.#transport.request("GET", this.#eventsPath(), { accept, signal: connection.signal })
          : this.#transport.request("POST", "/runs", {
              json: start.body,
              headers: { "idempotency-key": start.key },
              accept,
              signal: connection.signal,
            }),
        connection.signal,
      );
      if (!response.ok) {
        const error = await httpError(response);
        const retryAfter = retryAfterMs(response);
        // A 4xx will not change; a 5xx (or 429) on a re-attach is worth another try, and so is a
        // start the server asks to be sent again later (its key makes a repeat the same run).
        const transient =
          start === undefined
            ? response.status >= 500 || response.status === 429 || response.status === 408
            : (response.status === 503 || response.status === 429) && retryAfter !== undefined;
        if (!transient) throw error;
        return { progress, error, retryAfterMs: retryAfter };
      }
      const headerRunId = response.headers.get("x-run-id");
      if (isRunId(headerRunId)) this.#run.learnRunId(headerRunId);
      if (signal.aborted) return undefined;
      // The server's answer to a re-attach after an ended run's last event: no retry brings more.
      if (response.status === 204) {
        const runId = this.#run.currentRunId() as string;
        // A start is answered with its stream: a 204 there is a server off the protocol.
        const message =
          start !== undefined
            ? "HTTP 204: the server answered the start of a run with no stream of its events."
            : `HTTP 204: run "${runId}" has ended and nothing follows event ${this.#lastSeq.get(runId) ?? -1}; attach with a lower \`after\` to read its end again.`;
        throw new ClientError("http", message, { status: 204 });
      }
      if (response.body === null) return { progress, error: new Error("the response had no body") };
      // Media types are case-insensitive: `Text/Event-Stream` is SSE too.
      const type = response.headers.get("content-type")?.toLowerCase();
      // A page in place of the stream (a proxy's or a framework's HTML fallback): read as events,
      // each of its lines was a malformed-event error, and no retry brings another answer.
      if (type !== undefined && isPage(type))
        throw new ClientError(
          "http",
          `HTTP ${response.status}: the server answered with ${type.split(";")[0]}, not a stream of the run's events.`,
          { status: response.status },
        );
      // A JSON document (a framework's error answered with status 200, say): read as a stream, its
      // one line is no event and its end a drop, and a start would be posted again for an answer
      // that will not change. Its `error` is the server's word on why no stream came.
      if (type !== undefined && isJson(type)) throw await jsonInPlaceOfStream(response, mediaType(type));
      const sse = (type ?? accept).includes("text/event-stream");
      const limit = { maxEventBytes: this.#config.maxEventBytes };
      const parser = sse ? new SseParser(limit) : new NdjsonParser(limit);
      reader = response.body.getReader();
      for (;;) {
        disarm();
        await this.#run.demand();
        if (this.#run.done()) return undefined;
        arm();
        const chunk = await untilAborted(reader.read(), connection.signal);
        disarm();
        const items = chunk.done ? cutShort(parser.end()) : parser.push(chunk.value);
        for (const item of items) {
          if (this.#take(item)) progress = true;
          if (this.#run.done()) return undefined;
        }
        // A line that never ends would fill the memory: the stream is cancelled (below) instead.
        if (parser.tooLarge)
          throw new ClientError(
            "too-large",
            `The server sent more than ${this.#config.maxEventBytes} bytes without completing an event (maxEventBytes): the stream was cancelled.`,
          );
        if (chunk.done) return { progress, error: new Error("the stream ended before agent_end") };
      }
    } catch (error) {
      if (this.#run.done()) return undefined;
      if (error instanceof ClientError) throw error;
      return {
        progress,
        error: idle ? new Error(`no byte came for ${this.#config.idleTimeoutMs} ms`) : error,
      };
    } finally {
      disarm();
      signal.removeEventListener("abort", stop);
      // Closes the connection (after agent_end, the server closes it anyway).
      connection.abort();
      reader?.cancel().catch(ignore);
    }
  }

  #eventsPath(): string {
    const runId = this.#run.currentRunId() as string;
    const after = this.#lastSeq.get(runId) ?? -1;
    return `/runs/${encodeURIComponent(runId)}/events${after >= 0 ? `?after=${after}` : ""}`;
  }

  /**
   * Hands a parsed item on to the run; true if the connection made progress: an event with a new
   * seq. A heartbeat, a replay, an object with no seq are none: a server that drops every re-attach
   * after such things alone would have the client re-attach for ever. Throws (a drop: the connection
   * is re-attached) when the event's seq skips some.
   */
  #take(item: Parsed): boolean {
    if (item.type === "heartbeat" && typeof (item as { seq?: unknown }).seq !== "number") return false;
    if (item.type === "client_error") {
      this.#run.receive(item as ClientErrorEvent);
      return false;
    }
    const event = item as AgentEvent;
    const { runId, seq } = event as { runId?: unknown; seq?: unknown };
    if (!isRunId(runId) || !isSeq(seq)) {
      // Not one of the run's events: handed on, a bare `{"type":"agent_end"}` would settle the run
      // with a result that is none.
      this.#run.receive({
        type: "client_error",
        code: "malformed-event",
        message:
          'Not an event of the run: an event has a string "runId" (not "." or "..") and a whole "seq" from 0: it was dropped.',
        line: JSON.stringify(event),
      });
      return false;
    }
    const current = this.#run.currentRunId();
    if (current !== undefined && runId !== current) {
      // Not this run's: taken, another run's agent_end would settle this one with its result.
      this.#run.receive({
        type: "client_error",
        code: "malformed-event",
        message: `An event of run "${runId}" came on the stream of run "${current}": it was dropped.`,
        line: JSON.stringify(event),
      });
      return false;
    }
    const last = this.#lastSeq.get(runId) ?? -1;
    if (seq <= last) return false; // a replay after a re-attach
    // Named by an event that skips some too: the re-attach asks that run for them, where a start
    // posted again (as for a run never named) would bring the same stream.
    this.#run.learnRunId(runId);
    // A run's seqs have no gaps: the events between never came on this stream, and a re-attach
    // from the last one asks for them again.
    if (seq > last + 1)
      throw new Error(`event ${seq} of run "${runId}" came after event ${last}: the stream skipped some`);
    this.#lastSeq.set(runId, seq);
    this.#run.receive(event);
    return true;
  }
}

/**
 * What the end of a stream leaves: an NDJSON line that does not parse there was cut short (the
 * server ends every line with `\n`), not malformed; the re-attach brings it whole, so it is dropped
 * as SSE drops an event whose blank line never came.
 */
function cutShort(rest: Parsed[]): Parsed[] {
  return rest.filter((item) => item.type !== "client_error");
}

/** A run's seq: a whole number from 0 (`agent_start`'s). */
function isSeq(seq: unknown): seq is number {
  return Number.isSafeInteger(seq) && (seq as number) >= 0;
}

/**
 * An HTML page (`contentType` lowercased): what a proxy or a framework's fallback route answers in
 * place of the stream.
 */
function isPage(contentType: string): boolean {
  const media = mediaType(contentType);
  return media === "text/html" || media === "application/xhtml+xml";
}

/**
 * A JSON document (`contentType` lowercased): `application/json`, or an RFC 9457 problem. Not any
 * `+json` type: `application/stream+json` is a stream of JSON lines, read as NDJSON.
 */
function isJson(contentType: string): boolean {
  const media = mediaType(contentType);
  return media === "application/json" || media === "application/problem+json";
}

/** A Content-Type's media type, without its parameters. */
function mediaType(contentType: string): string {
  return contentType.split(";")[0]?.trim() ?? "";
}
