import type { AgentClientOptions, ClientLogger, ClientTool } from "./client-types.js";
import { ClientError, describe } from "./errors.js";
import { onAbortShared } from "./shared-abort.js";

export interface Config {
  baseUrl: string;
  headers: AgentClientOptions["headers"];
  format: "ndjson" | "sse";
  tools: Record<string, ClientTool>;
  fetch: typeof fetch;
  reconnect: { attempts: number; delayMs: number };
  postRetry: { attempts: number; delayMs: number };
  idleTimeoutMs: number;
  maxEventBytes: number;
  logger: ClientLogger;
}

export const ACCEPT = { ndjson: "application/x-ndjson", sse: "text/event-stream" } as const;

/** Requests with the configured headers, and posts retried on what is worth retrying. */
export class Transport {
  constructor(readonly config: Config) {}

  async request(
    method: "GET" | "POST",
    path: string,
    init: {
      json?: unknown;
      headers?: Record<string, string>;
      accept?: string;
      signal?: AbortSignal | undefined;
    },
  ): Promise<Response> {
    const { headers } = this.config;
    const all = typeof headers === "function" ? await askHeaders(headers, init.signal) : new Headers(headers);
    for (const [name, value] of Object.entries(init.headers ?? {})) all.set(name, value);
    if (init.accept !== undefined) all.set("accept", init.accept);
    if (init.json !== undefined) all.set("content-type", "application/json");
    // A redirect is answered, not followed: fetch would send the headers (an API key, a token) and
    // the body to wherever the server points, another origin included.
    const request: RequestInit = { method, headers: all, redirect: "manual" };
    if (init.json !== undefined) request.body = JSON.stringify(init.json);
    if (init.signal !== undefined) request.signal = init.signal;
    return this.config.fetch(this.config.baseUrl + path, request);
  }

  /**
   * Posts `json`, again with the same body after a network error (if `retryNetwork`) or a status
   * `retryStatus` accepts, at most `postRetry.attempts` times. Returns the last response (whatever its
   * status); throws the last network error, or the abort of `signal`. `signal` aborts the request
   * under way; `stop` (default: `signal`) only ends the retries, so the request under way still
   * gets its answer (a post the server may already have taken).
   */
  async post(
    path: string,
    json: unknown,
    options: {
      signal: AbortSignal;
      stop?: AbortSignal;
      retryNetwork: boolean;
      retryStatus: (status: number) => boolean;
      headers?: Record<string, string>;
      accept?: string;
    },
  ): Promise<Response> {
    const { attempts, delayMs } = this.config.postRetry;
    const stop = options.stop ?? options.signal;
    for (let retry = 0; ; retry++) {
      let wait = delayMs * 2 ** retry;
      try {
        const response = await this.request("POST", path, {
          json,
          signal: options.signal,
          headers: options.headers,
          accept: options.accept,
        });
        if (retry >= attempts || stop.aborted || !options.retryStatus(response.status)) return response;
        const retryAfter = retryAfterMs(response);
        if (retryAfter !== undefined && retryAfter > MAX_RETRY_AFTER_MS) return response;
        wait = retryAfter ?? wait;
        discard(response);
      } catch (error) {
        if (options.signal.aborted || stop.aborted || !options.retryNetwork || retry >= attempts) throw error;
      }
      // The request's signal ends the wait too: a deadline on the whole post (idleTimeoutMs) holds
      // through a Retry-After longer than it.
      await sleep(wait, stop, options.signal);
      if (stop.aborted) throw stop.reason;
      if (options.signal.aborted) throw options.signal.reason;
    }
  }
}

export function ignore(): void {}

/**
 * What the `headers()` option gives, bounded by the request's signal (its deadline, the run's
 * cancel): one that never settles must not hold a cancel, a steer or a tool result's post for ever.
 * Its failure is told as its own: the request never went out.
 */
async function askHeaders(
  headers: () => Record<string, string> | Promise<Record<string, string>>,
  signal: AbortSignal | undefined,
): Promise<Headers> {
  try {
    const asked = Promise.resolve()
      .then(headers)
      .then((given) => sendableHeaders(given, "it gave headers fetch cannot send"));
    return await (signal === undefined ? asked : untilAborted(asked, signal));
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new Error(`the headers() option failed: ${describe(error)}`, { cause: error });
  }
}

/**
 * `given` as fetch sends it. A value it cannot send (a line break in a header, a number for the
 * whole) is a `TypeError` that says so after `said`, not a network error.
 */
export function sendableHeaders(given: Record<string, string> | undefined, said: string): Headers {
  try {
    return new Headers(given);
  } catch (error) {
    throw new TypeError(`${said}: ${describe(error)}`, { cause: error });
  }
}

/**
 * A run's id as the client takes it, from the caller or the server: a string that can name a path
 * segment. `.` and `..` cannot: encoded or not, a URL drops the one or the segment before it, and
 * `/runs/../cancel` would reach another route, `{baseUrl}/cancel`.
 */
export function isRunId(runId: unknown): runId is string {
  return typeof runId === "string" && runId !== "" && runId !== "." && runId !== "..";
}

/** Drops a response's body, so its connection is free again. */
export function discard(response: Response): undefined {
  response.body?.cancel().catch(ignore);
}

/** A ClientError of code "http" from an error response and its `{ error: { code, message } }` body. */
export async function httpError(response: Response): Promise<ClientError> {
  // A browser hides a redirect it did not follow: type "opaqueredirect", status 0, no headers.
  if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
    discard(response);
    const location = response.headers.get("location");
    return new ClientError(
      "http",
      `HTTP ${response.status}: the server redirected the request${location === null ? "" : ` to ${location}`}; the client follows no redirect, so its headers only ever go to baseUrl's server.`,
      { status: response.status },
    );
  }
  const { serverCode, serverMessage } = await readServerError(response);
  const what = serverCode ?? response.statusText;
  const message = `HTTP ${response.status}${what ? ` ${what}` : ""}${serverMessage ? `: ${serverMessage}` : ""}`;
  return new ClientError("http", message, {
    status: response.status,
    ...(serverCode === undefined ? {} : { serverCode }),
  });
}

/**
 * A ClientError of code "http" for a JSON document where the run's stream was due (`media`, its
 * media type): a server or a framework that answers an error with status 200. It carries the
 * body's `error`, the server's word on why no stream came.
 */
export async function jsonInPlaceOfStream(response: Response, media: string): Promise<ClientError> {
  const { serverCode, serverMessage } = await readServerError(response);
  const said =
    serverCode === undefined ? serverMessage : `${serverCode}${serverMessage ? `: ${serverMessage}` : ""}`;
  return new ClientError(
    "http",
    `HTTP ${response.status}: the server answered with ${media}, not a stream of the run's events${said ? `: ${said}` : "."}`,
    { status: response.status, ...(serverCode === undefined ? {} : { serverCode }) },
  );
}

/**
 * The server's error in a response's body (its first MiB): the protocol's `{ error: { code,
 * message } }`, or an `{ error: "…" }` (its message), or the text of a body that is no JSON.
 */
async function readServerError(response: Response): Promise<{ serverCode?: string; serverMessage?: string }> {
  try {
    const text = await readText(response);
    try {
      const { error } = JSON.parse(text) as { error?: unknown };
      if (typeof error === "string") return { serverMessage: cut(error, MAX_SERVER_MESSAGE_CHARS) };
      const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
      return {
        ...(typeof code === "string" ? { serverCode: cut(code, MAX_SERVER_CODE_CHARS) } : {}),
        ...(typeof message === "string" ? { serverMessage: cut(message, MAX_SERVER_MESSAGE_CHARS) } : {}),
      };
    } catch {
      return text === "" ? {} : { serverMessage: cut(text, MAX_SERVER_TEXT_CHARS) };
    }
  } catch {
    // No body to read: the status says it all.
    return {};
  }
}

/**
 * The most of the server's `error.message` (and `error.code`) an error keeps, in characters: the
 * body may be a MiB long, and a server must not make every error message that long.
 */
const MAX_SERVER_MESSAGE_CHARS = 2000;
const MAX_SERVER_CODE_CHARS = 200;
/** Of a body that is no JSON (a proxy's error page), the first characters the message keeps. */
const MAX_SERVER_TEXT_CHARS = 200;

/** `text`, or its first `max` characters and "…" when it is longer (never half a surrogate pair). */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * The most of a response's body the client reads when it wants no stream from it (an error's
 * `{ error }`, a resumed run's `{ runId }`): a server must not fill the memory with an endless one.
 */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** A response's body as text, at most its first `MAX_ANSWER_BYTES`: the rest is cancelled, unread. */
export async function readText(response: Response): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (let left = MAX_ANSWER_BYTES; left > 0; ) {
      const chunk = await reader.read();
      if (chunk.done) break;
      const bytes = chunk.value.subarray(0, left);
      left -= bytes.length;
      text += decoder.decode(bytes, { stream: true });
    }
    return text + decoder.decode();
  } finally {
    reader.cancel().catch(ignore);
  }
}

/**
 * The longest `Retry-After` the client waits for: a server asking for more is taken at its word that
 * no retry helps soon, and the request fails as if its retries were spent. (A timer set past
 * 2^31 − 1 ms fires at once: the retries went out back to back.)
 */
export const MAX_RETRY_AFTER_MS = 60_000;

/** A `Retry-After` header (seconds, or an HTTP date) in ms; undefined without a usable one. */
export function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * A signal for a request and the reading of its answer: it aborts when `signal` (if any) does, or
 * after `ms`, with an error saying no answer came. `clear()` once the answer was read.
 */
export function deadline(ms: number, signal?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const follow = () => controller.abort(signal?.reason);
  let stopFollowing = () => {};
  if (signal?.aborted) follow();
  // Shared: the posts of a batch of client tool calls run at once, each with a deadline on the run's signal.
  else if (signal !== undefined) stopFollowing = onAbortShared(signal, follow);
  const timer = setTimeout(() => controller.abort(new Error(`no answer came for ${ms} ms`)), ms);
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      stopFollowing();
    },
  };
}

/**
 * What `promise` settles with, or the rejection of `signal`'s reason once it aborts first: for a
 * `fetch` that would not honour the signal. Its listener goes once `promise` settles: raced with one
 * promise made per connection, each wait (a read per chunk) would leave it a reaction, holding the
 * chunk, for as long as the connection lasts.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(ignore);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const stopWaiting = onAbortShared(signal, () => reject(signal.reason));
    promise.then(resolve, reject).finally(stopWaiting);
  });
}

/**
 * The longest a timer waits: one set for longer fires at once. Core's `LONGEST_TIMER_MS`, kept here:
 * the client takes only types from core, so that a page's bundle carries none of it.
 */
export const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * Waits `ms` (`LONGEST_TIMER_MS` at most: a doubled retry delay may be longer, and must not be no wait),
 * or less if one of `signals` aborts. Never rejects.
 */
export function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal.aborted)) return resolve();
    const done = () => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.min(ms, LONGEST_TIMER_MS));
    for (const signal of signals) signal.addEventListener("abort", done, { once: true });
  });
}
