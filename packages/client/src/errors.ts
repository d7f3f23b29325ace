import type { AgentEvent } from "@agent-core/core";

/** Why a run failed on the client's side: see {@link ClientError}. */
export type ClientErrorCode = "http" | "network" | "too-large" | "cancelled";

/**
 * Why a run's `result()` rejected (and why its iteration threw, for all but `"cancelled"`).
 *
 * - `"http"`: the server answered with an error status: `status` is it, `serverCode` is the
 *   `error.code` of the server's JSON body when it had one (e.g. `"not-found"`, `"after-out-of-range"`;
 *   read from the body's first MiB at most, the rest is not read), and the message ends with its
 *   `error.message` (its first 2,000 characters, then `…`: a server cannot make every error
 *   megabytes long; `serverCode` keeps the first 200 so), or, for a body that is no JSON, its
 *   first 200 characters, then `…` (of a body `{ "error": "…" }`, that string is the message);
 *   or with no stream where one was due: a 204, or an HTML page (`text/html`) in its place, or a
 *   JSON document (`application/json` or `application/problem+json`: an error a server answered
 *   with status 200), whose `error` the message ends with (`serverCode` is its `code`), never
 *   posted or re-attached again;
 *   or with a redirect (a 3xx; status 0 in a browser, which hides it), which the client never follows.
 * - `"network"`: the connection failed and could not be re-attached (the re-attach attempts were
 *   exhausted, or, before the run's id was learnt, the posts of the start with its
 *   `Idempotency-Key` were). `cause` is the last failure.
 * - `"too-large"`: the event stream brought more than `maxEventBytes` without completing an event
 *   (a line that never ends): the stream was cancelled, and no re-attach is tried (it would bring
 *   the same).
 * - `"cancelled"`: `cancel()` was called, the caller's `signal` aborted, or a newer `start()` of the
 *   same client took over, before `agent_end` arrived.
 */
export class ClientError extends Error {
  override readonly name = "ClientError";
  readonly code: ClientErrorCode;
  /** The HTTP status, for `code: "http"`. */
  readonly status: number | undefined;
  /** The server's `error.code`, for `code: "http"` when the body was the protocol's error JSON. */
  readonly serverCode: string | undefined;

  constructor(
    code: ClientErrorCode,
    message: string,
    options: { status?: number; serverCode?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status;
    this.serverCode = options.serverCode;
  }
}

/**
 * A problem the client met while a run went on, delivered in the run's event stream (never thrown):
 *
 * - `"malformed-event"`: a line (NDJSON) or a `data:` payload (SSE) that is not JSON, or not an
 *   object with a string `type`, or of type `"client_error"` (a server cannot forge the client's
 *   own events); `line` is its text. Also a client `tool_call` whose `toolCallId`
 *   or `toolName` is no string (no tool is run for it), and a call of a suspended run's
 *   `pendingClientTools` whose `hookToken` is there but no string (one without a `hookToken`, as a
 *   `tool_call` without one, takes no result and is not run: the server replays a call that has
 *   its result, or was given up, so), and an `agent_end` whose
 *   `pendingClientTools` is no list of calls (the run ends with it: nothing can be run),
 *   and, dropped (they change nothing), an object that is no event of a run (no string `runId`, or
 *   one that names no path segment, `.` or `..`, or no whole `seq` from 0) and an event of another
 *   run than the one the stream is for.
 * - `"tool-result-rejected"`: the server refused a client tool's result (403, 404, 409, 410, 400…);
 *   `status` and `serverCode` say how. It is not retried; a result refused as too large (413) is
 *   followed by an error posted in its place, so the call ends now (see `ClientTool`).
 * - `"tool-result-failed"`: the result could not be delivered: network errors, 5xx or 429 until
 *   `postRetry.attempts` retries were spent, or no whole answer within `idleTimeoutMs` (a
 *   `Retry-After` wait included). Also a 202 whose answer names no run (`status` 202): the server
 *   took the result, but the client cannot follow the run it resumed.
 *
 * It has no `runId`/`seq` of its own: it is not one of the run's events.
 */
export interface ClientErrorEvent {
  type: "client_error";
  code: "malformed-event" | "tool-result-rejected" | "tool-result-failed";
  message: string;
  /** The offending text, for `"malformed-event"`. */
  line?: string;
  /** The HTTP status of the tool-result post, when there was one. */
  status?: number;
  /** The server's `error.code`, when the tool-result post was answered with the protocol's error JSON. */
  serverCode?: string;
  /** The client tool call concerned, for the tool-result codes. */
  toolCallId?: string;
}

/** What a `ClientRun` yields: the run's events, and the client's own {@link ClientErrorEvent}s. */
export type ClientEvent = AgentEvent | ClientErrorEvent;

/**
 * What was thrown, for a message: an `Error`'s message, or `String(thrown)`; for a value `String`
 * cannot convert (an object with no prototype, or whose `toString` throws), its tag, `[object Object]`.
 */
export function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}
