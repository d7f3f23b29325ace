import type { AgentEventOf } from "@agent-core/core";
import type { ClientEvent } from "./errors.js";

/** The last event of a run: `stopReason` says how it ended. */
export type AgentEndEvent = AgentEventOf<"agent_end">;

/** What a client tool gets besides its arguments. */
export interface ClientToolContext {
  /**
   * Aborted when the run is cancelled (or fails), when it ends, and when the server ended the call
   * without this result (its `tool_result` came first: the server's `clientToolTimeoutMs` passed,
   * say): stop working (close the dialog that asks the user), the result will not be posted.
   */
  signal: AbortSignal;
  toolCallId: string;
}

/**
 * A tool the server's agent asks the client to run (a `tool_call` event with `execution: "client"`).
 * What it returns (or resolves to) is posted as the call's result (`undefined` as `null`); what it
 * throws is posted as the call's error (an `Error`'s message, or `String(thrown)`, or
 * `[object Object]` for what `String` cannot convert), and so is a result JSON cannot carry (a
 * `BigInt`, a cycle, a function or a symbol): `the result is not JSON: <why>`, and a result the
 * server refuses as too large (a 413, past its `maxBodyBytes`), after a `client_error` of code
 * `"tool-result-rejected"` that says so: `the result is larger than the server takes: <its error>`.
 */
export type ClientTool = (args: unknown, context: ClientToolContext) => unknown | Promise<unknown>;

/**
 * How an {@link AgentClient} talks to an agent-core HTTP server. The counts (`attempts`,
 * `maxEventBytes`) are whole numbers (`maxEventBytes` from 1), the times (`delayMs`,
 * `idleTimeoutMs`, from 1) at most 2,147,483,647 ms, the longest a timer waits: anything else throws
 * a `TypeError` when the client is made, as does an option it does not know (a misspelled one) or
 * cannot read (a getter that throws). An option given as `undefined` keeps its default.
 */
export interface AgentClientOptions {
  /**
   * The server's routes prefix, e.g. `"http://127.0.0.1:8787/api"` (a trailing `/` is ignored); one
   * with a query or a fragment (`?key=…`) is a `TypeError`: the routes are appended to it.
   */
  baseUrl: string;
  /**
   * Headers sent with every request (e.g. `Authorization`). A function is called again for every
   * request, re-attaches and tool-result posts included, so it can hand out a fresh token; its
   * wait counts toward the request's `idleTimeoutMs`, so one that never settles fails the request
   * as a server that never answers does (`steer()` rejects, `cancel()` resolves), and one that
   * throws, or returns headers fetch cannot send (a line break in a value), fails it as a network
   * error does (retried alike), saying `the headers() option failed: <why>`; such headers given as
   * an object are a `TypeError` when the client is made. They only
   * ever go to `baseUrl`'s server: the client follows no redirect (a 3xx fails the request with a
   * `ClientError` of code `"http"`), so a server cannot send them, or a prompt, to another origin.
   */
  headers?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
  /**
   * The stream format to ask for with `Accept` (default `"ndjson"`). Either is parsed, whatever
   * comes; what is no stream (an HTML page, a JSON document such as an error sent with status 200)
   * fails the run with a `ClientError` of code `"http"`, and is not asked for again.
   */
  format?: "ndjson" | "sse";
  /** Client tools by name. A client tool call with no handler here is answered with an error. */
  tools?: Record<string, ClientTool>;
  /** The `fetch` to use (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /**
   * Re-attaching after the event stream dropped, or skipped a `seq` (a run's seqs have no gaps)
   * (default `{ attempts: 5, delayMs: 250 }`): at most
   * `attempts` re-attaches in a row, waiting `delayMs`, then twice as long each time (up to
   * 2,147,483,647 ms, the longest a timer waits). The count
   * starts again once a connection delivers a new event (a heartbeat is none). A re-attach
   * answered 5xx, 408 or 429 is tried again so (another 4xx fails the run), after what the answer's
   * `Retry-After` says if it has one; one asking for more than 60 s fails the run with that answer
   * (a `ClientError` of code `"http"`). A start whose connection
   * dropped before the run's id was known, or that was answered 429 or 503 with a `Retry-After`,
   * is posted again the same way, with the same `Idempotency-Key`.
   */
  reconnect?: { attempts?: number; delayMs?: number };
  /**
   * Retrying a tool-result or cancel post after a network error, a 5xx or a 429, and a steer or
   * follow-up after a 429 only (such as `queue-full`: one that may have been taken is not sent
   * again) (default `{ attempts: 4, delayMs: 200 }`): at most `attempts` retries (so `attempts + 1`
   * posts, with the same body), waiting `delayMs` then twice as long each time (up to
   * 2,147,483,647 ms), or what the
   * answer's `Retry-After` says (a 429's, or a 503's such as `database-unreachable`): one asking for
   * more than 60 s is not waited for, that answer is the post's last.
   */
  postRetry?: { attempts?: number; delayMs?: number };
  /**
   * A connection that brings no byte (not even a heartbeat) for this long is taken as dropped, and
   * re-attached (default 45 000 ms; the server sends a heartbeat every 15 s by default). It also
   * bounds the wait for a response's headers, for the whole answer to `steer()`, `followUp()` and
   * `cancel()`'s post, and for the whole answer to a client tool's result post; each with its
   * retries included. A result post then ends with a `client_error` of code `"tool-result-failed"`.
   */
  idleTimeoutMs?: number;
  /**
   * The most bytes the event stream may bring without completing an event (default 16 MiB): one
   * NDJSON line, or one SSE event with its comments, line breaks included, however the network cuts
   * it (blank lines before an NDJSON line count toward it; an SSE event is complete once the `\r`
   * or `\n` of its blank line comes, so the `\n` of a closing `\r\n` counts toward the next).
   * Past it the stream is cancelled (the events before it are delivered) and the run fails with a
   * `ClientError` of code `"too-large"`, so a server cannot fill the memory with a line that never
   * ends.
   */
  maxEventBytes?: number;
  /** Where the client's log lines go (a listener that threw), each with the run's id. Default: silent. */
  logger?: ClientLogger;
}

/**
 * The part of a structured logger the client writes to: pino's shape (`logger.error(fields,
 * message)`), so a pino logger or an `@agent-core/core` `Logger` fits.
 */
export interface ClientLogger {
  error(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link AgentClient.start}. */
export interface StartOptions {
  /** Continue this conversation. */
  conversationId?: string;
  /** The document the run works on (the server checks the caller may touch it). */
  documentId?: string;
  /** Ask the server to go on with the run when the stream goes away (re-attach later with `attach`). */
  outliveStream?: boolean;
  /**
   * The start's `Idempotency-Key` (default: a new random one for each `start()`): 1 to 255 visible
   * ASCII characters. The client posts the start again with it after a connection lost before
   * the run's id was known; give your own to retry a start yourself (after a page reload, say):
   * the same key, user and body within the server's `idempotencyKeyTtlMs` is the same run.
   */
  idempotencyKey?: string;
  /** Aborting it cancels the run, like `run.cancel()`. */
  signal?: AbortSignal;
}

/** Options of {@link AgentClient.attach}. */
export interface AttachOptions {
  /**
   * The seq of the last event already seen: the run's events after it come (default: all of them).
   * A whole number from -1 to 2^53 - 1; anything else throws a `TypeError`.
   */
  after?: number;
  /** Aborting it cancels the run, like `run.cancel()`. */
  signal?: AbortSignal;
}

/**
 * One run on the server, as the client follows it: its events (as an async iterable, or to
 * listeners), its result, and the ways to steer it.
 *
 * The client reads the run's events as soon as it is created, whether or not anybody iterates:
 * client tools run, listeners are called and `result()` settles on their own.
 *
 * **Iteration and backpressure.** One consumer iterates at a time (a second concurrent
 * `[Symbol.asyncIterator]()` throws a `TypeError`; use `on("*")` to watch from elsewhere). While a
 * consumer iterates, the client reads the network only while fewer than 32 events wait for it, so a
 * slow consumer slows the download (and the idle timeout does not count the time it is paused).
 * When nobody iterates, every event is buffered, so a consumer that starts late (or again, after a
 * `break`) still gets each event once, from where the previous one stopped. Breaking out of the loop
 * does not cancel the run: call `cancel()` for that. A consumer that waits for `result()` inside the
 * loop may wait until it pulls more events, since the run only reads on as the loop drains it.
 *
 * Iteration ends after the last `agent_end`, and also, quietly, when the run is cancelled (like a
 * cancelled `ReadableStream`); it throws the run's {@link ClientError} when the run failed
 * (`"http"`, `"network"`, `"too-large"`). Heartbeats are never yielded.
 *
 * **Suspended runs.** A server with `clientTools: "suspend"` ends a run that calls client tools with
 * an `agent_end` whose `stopReason` is `"awaiting_client_tool"` and whose `pendingClientTools` lists
 * the calls. That event is yielded like any other, but the ClientRun goes on: it runs each listed
 * call's tool (once per call id, as for a `tool_call`), posts the results, and when the post of the
 * last one answers 202 `{ runId }`, it follows that new run from its `agent_start` (its events are
 * yielded next; `currentRunId` names it). That run may suspend again, and so on: `result()` resolves
 * with the first `agent_end` of the chain that is not such a suspension. When every post ended
 * without a 202 naming a run (one was rejected, say, or a 202's answer named none: a
 * `client_error` event tells why), `result()` resolves with the suspended run's `agent_end`
 * (`stopReason: "awaiting_client_tool"`).
 */
export interface ClientRun extends AsyncIterable<ClientEvent> {
  /**
   * The run's id: from the `X-Run-Id` header or the first event. Rejects if the run fails before.
   * It stays the first run's id when a suspended run resumes as another (see `currentRunId`).
   */
  readonly runId: Promise<string>;
  /**
   * The id of the run followed now: undefined until `runId` is known, then `runId`'s, then (after
   * a suspension for client tools) the id of the run that resumed it. `steer()`, `followUp()` and
   * `cancel()` act on it.
   */
  readonly currentRunId: string | undefined;
  /**
   * Calls `listener` with each later event of that type (or every event, for `"*"`), as it is read
   * (iteration or not), `client_error` events included. Returns the function that removes it. A
   * listener's throw goes to the client's `logger` and changes nothing else.
   */
  on<T extends ClientEvent["type"]>(
    type: T,
    listener: (event: Extract<ClientEvent, { type: T }>) => void,
  ): () => void;
  on(type: "*", listener: (event: ClientEvent) => void): () => void;
  /**
   * Resolves with the `agent_end` event (the last of the chain, when the run suspended for client
   * tools and resumed); rejects with a {@link ClientError} if the run failed or was cancelled first.
   */
  result(): Promise<AgentEndEvent>;
  /**
   * Sends a steering message (`POST …/steer`). Rejects with a {@link ClientError} if it was not
   * accepted, or (code `"network"`) if no answer came within `idleTimeoutMs`: it may have been taken.
   */
  steer(message: string): Promise<void>;
  /** Queues a follow-up message (`POST …/follow-up`). Rejects as `steer()` does. */
  followUp(message: string): Promise<void>;
  /**
   * Cancels the run: stops reading, aborts the client tools' signals, makes `result()` reject with
   * code `"cancelled"` (unless the last `agent_end` came first) and, once the run's id is known,
   * posts `…/cancel` for the current run (retried like a tool result). A start the server has not
   * answered yet is let go on until its answer names the run (for `idleTimeoutMs` at most), so
   * that the run is cancelled on the server too (a start the server refused, with a 4xx or an error
   * in place of the stream, started nothing: no post then). While a suspended run's
   * calls are answered, the suspended run is cancelled, which gives its calls up (a page that
   * attaches to it later runs none of them); a result post under way is let finish, and
   * if it resumed the run, that new run is cancelled. Resolves once those posts are answered or given
   * up on; never rejects. Calling it again returns the same promise.
   */
  cancel(): Promise<void>;
}
