import { Run } from "./client-run.js";
import type {
  AgentClientOptions,
  AttachOptions,
  ClientLogger,
  ClientRun,
  StartOptions,
} from "./client-types.js";
import { isRunId, LONGEST_TIMER_MS, sendableHeaders, Transport } from "./transport.js";

const silentLogger: ClientLogger = { error: () => {} };

/**
 * A client of an agent-core HTTP server (`@agent-core/http`) for browsers and Node 20+: it starts
 * runs and re-attaches to them, streams their events (NDJSON or SSE), re-attaches by itself after a
 * dropped connection without losing or repeating an event, runs client tools and posts their
 * results, and steers and cancels runs. It only needs `fetch`, `ReadableStream`, `TextDecoder` and
 * `AbortController`.
 *
 * ```ts
 * const client = new AgentClient({ baseUrl: "/api", tools: { now: () => new Date().toISOString() } });
 * const run = client.start("What time is it?");
 * for await (const event of run) if (event.type === "text_delta") output.append(event.text);
 * const end = await run.result(); // the agent_end event
 * ```
 */
export class AgentClient {
  readonly #transport: Transport;
  readonly #inFlight = new Set<Run>();

  constructor(given: AgentClientOptions) {
    const options = ownOptions("AgentClient", given, CLIENT_OPTIONS);
    if (typeof options.baseUrl !== "string" || options.baseUrl === "")
      throw new TypeError("AgentClient needs a baseUrl, e.g. http://127.0.0.1:8787/api.");
    // The routes are appended to it as text: `…/api?key=1` would become `…/api?key=1/runs`.
    if (/[?#]/.test(options.baseUrl))
      throw new TypeError(
        `AgentClient's baseUrl is the routes' prefix, so it takes no query or fragment, got ${JSON.stringify(options.baseUrl)}: send a key with the headers option.`,
      );
    // Checked once here: else every request would fail alike, each as a network error.
    if (typeof options.headers !== "function")
      sendableHeaders(options.headers, "AgentClient's headers option holds headers fetch cannot send");
    const format = options.format ?? "ndjson";
    if (format !== "ndjson" && format !== "sse")
      throw new TypeError(`AgentClient needs format as "ndjson" or "sse", got ${shown(format)}.`);
    const tools = options.tools ?? {};
    if (typeof tools !== "object" || tools === null || Array.isArray(tools))
      throw new TypeError(`AgentClient needs tools as an object of functions by name, got ${shown(tools)}.`);
    for (const [name, tool] of Object.entries(tools))
      if (typeof tool !== "function")
        throw new TypeError(`AgentClient needs tools.${name} as a function, got ${shown(tool)}.`);
    const reconnect = ownOptions("AgentClient's reconnect", options.reconnect ?? {}, RETRY_OPTIONS);
    const postRetry = ownOptions("AgentClient's postRetry", options.postRetry ?? {}, RETRY_OPTIONS);
    const fetchFn = options.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== "function")
      throw new TypeError("AgentClient needs fetch: pass options.fetch where there is no global one.");
    this.#transport = new Transport({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      headers: options.headers,
      format,
      tools,
      // Called unbound: a browser's fetch must not be called as a method of another object.
      fetch: (input, init) => fetchFn(input, init),
      reconnect: {
        attempts: whole("reconnect.attempts", reconnect.attempts, 5, 0),
        delayMs: duration("reconnect.delayMs", reconnect.delayMs, 250, 0),
      },
      postRetry: {
        attempts: whole("postRetry.attempts", postRetry.attempts, 4, 0),
        delayMs: duration("postRetry.delayMs", postRetry.delayMs, 200, 0),
      },
      idleTimeoutMs: duration("idleTimeoutMs", options.idleTimeoutMs, 45_000, 1),
      maxEventBytes: whole("maxEventBytes", options.maxEventBytes, 16 * 1024 * 1024, 1),
      logger: clientLogger(options.logger),
    });
  }

  /**
   * Starts a run (`POST {baseUrl}/runs`) and follows its events from `agent_start`. A new prompt
   * cancels the one in flight: every run of this client that has not ended yet (started or
   * attached) is cancelled first, and this run's request goes out once their `/cancel` posts are
   * answered. It carries an `Idempotency-Key` (`options.idempotencyKey`, else a new random one),
   * so a connection lost before the run's id is known, or a 429 or 503 with `Retry-After`, posts
   * it again, within `reconnect.attempts`: the server answers with the same run, never a second.
   * Once the run's id is known, a lost connection is re-attached.
   */
  start(prompt: string, given: StartOptions = {}): ClientRun {
    if (typeof prompt !== "string") throw new TypeError("start() needs the prompt as a string.");
    const options = ownOptions("start()", given, START_OPTIONS);
    for (const name of ["conversationId", "documentId"] as const)
      if (options[name] !== undefined && typeof options[name] !== "string")
        throw new TypeError(`start() needs ${name} as a string, got ${shown(options[name])}.`);
    if (options.outliveStream !== undefined && typeof options.outliveStream !== "boolean")
      throw new TypeError(`start() needs outliveStream as a boolean, got ${shown(options.outliveStream)}.`);
    checkSignal("start()", options.signal);
    const key = options.idempotencyKey ?? randomKey();
    if (typeof key !== "string" || !/^[\x21-\x7e]{1,255}$/.test(key))
      throw new TypeError("start() needs idempotencyKey as 1 to 255 visible ASCII characters.");
    const previous = [...this.#inFlight].map((run) => run.cancel());
    const body: Record<string, unknown> = { prompt };
    if (options.conversationId !== undefined) body.conversationId = options.conversationId;
    if (options.documentId !== undefined) body.documentId = options.documentId;
    if (options.outliveStream !== undefined) body.outliveStream = options.outliveStream;
    return this.#track(
      new Run(
        this.#transport,
        { kind: "start", start: { body, key }, previous: Promise.all(previous) },
        options.signal,
      ),
    );
  }

  /**
   * Follows an existing run (`GET {baseUrl}/runs/:runId/events?after=…`), e.g. after a page
   * reload: the events after `after` (all of them by default), then the live ones. A first
   * connection that fails is retried like a dropped one; a 4xx fails the run with code `"http"`, as
   * does a 204: the run has ended and `after` was its last event (nothing more will come). A run
   * id `.` or `..` throws a `TypeError`: in a URL it names no segment (`/runs/../cancel` is
   * `/cancel`), and the client takes none from the server either.
   */
  attach(runId: string, given: AttachOptions = {}): ClientRun {
    if (!isRunId(runId))
      // Quoted, so an empty id reads `got "".`, not `got .`
      throw new TypeError(
        `attach() needs a run id (not "." or ".."), got ${typeof runId === "string" ? JSON.stringify(runId) : String(runId)}.`,
      );
    const options = ownOptions("attach()", given, ["after", "signal"]);
    checkSignal("attach()", options.signal);
    const after = options.after ?? -1;
    // A safe integer: a larger one is no seq, and would be written `1e+21` in the URL.
    if (!Number.isSafeInteger(after) || after < -1)
      throw new TypeError(
        `attach() needs after as a whole number from -1 to 2^53 - 1, got ${String(options.after)}.`,
      );
    return this.#track(new Run(this.#transport, { kind: "attach", runId, after }, options.signal));
  }

  #track(run: Run): Run {
    this.#inFlight.add(run);
    run.whenSettled(() => this.#inFlight.delete(run));
    return run;
  }
}

/** Every option `AgentClient` knows: any other key is refused (a misspelled one, most likely). */
const CLIENT_OPTIONS: readonly (keyof AgentClientOptions)[] = [
  "baseUrl",
  "headers",
  "format",
  "tools",
  "fetch",
  "reconnect",
  "postRetry",
  "idleTimeoutMs",
  "maxEventBytes",
  "logger",
];

const RETRY_OPTIONS = ["attempts", "delayMs"] as const;

const START_OPTIONS: readonly (keyof StartOptions)[] = [
  "conversationId",
  "documentId",
  "outliveStream",
  "idempotencyKey",
  "signal",
];

/**
 * The caller's options (of `what`) as the client takes them: a copy, each option read once,
 * without those given as `undefined` (an option left out, which keeps its default). A `TypeError`,
 * as for every bad option: what is no object of options (a promise of them, not awaited, would be
 * none at all), a key none of `known` (a misspelled option would be dropped without a word and its
 * default used), and an option that cannot be read (a getter that throws, its error the cause).
 */
function ownOptions<Options extends object>(
  what: string,
  options: Options,
  known: readonly string[],
): Options {
  if (typeof options !== "object" || options === null || Array.isArray(options) || "then" in options)
    throw new TypeError(
      `${what} needs its options as an object (the options themselves, not a promise of them), got ${shown(options)}.`,
    );
  const own: Record<string, unknown> = {};
  for (const key of Object.keys(options)) {
    if (!known.includes(key))
      throw new TypeError(`${what} has no option ${key} (known: ${known.join(", ")}).`);
    let value: unknown;
    try {
      value = (options as Record<string, unknown>)[key];
    } catch (cause) {
      throw new TypeError(
        `${what}'s option ${key} could not be read: ${String(cause instanceof Error ? cause.message : cause)}`,
        {
          cause,
        },
      );
    }
    if (value !== undefined) own[key] = value;
  }
  return own as Options;
}

/** What a refused option was, said briefly. */
function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value !== "object" || value === null) return String(value);
  if (Array.isArray(value)) return "an array";
  return "then" in value ? "a promise" : "an object";
}

/**
 * Throws unless `signal` is absent or an `AbortSignal` (anything else would throw once the run
 * began). Known by its shape: a signal of another realm (an iframe's, jsdom's) is no instance of this one's.
 */
function checkSignal(what: string, signal: unknown): void {
  const isSignal =
    typeof signal === "object" &&
    signal !== null &&
    typeof (signal as AbortSignal).addEventListener === "function" &&
    typeof (signal as AbortSignal).aborted === "boolean";
  if (signal !== undefined && !isSignal)
    throw new TypeError(`${what} needs signal as an AbortSignal, got ${shown(signal)}.`);
}

/**
 * The client's logger (silent when not given). One without an `error` function is refused here:
 * taken, it would lose every line without a word, when a listener throws.
 */
function clientLogger(logger: ClientLogger | null | undefined): ClientLogger {
  // null, as `??` took it before: no logger.
  if (logger === undefined || logger === null) return silentLogger;
  if (typeof logger !== "object" || typeof logger.error !== "function")
    throw new TypeError(
      "AgentClient needs logger as an object with an error(fields, message) method (pino's shape).",
    );
  return logger;
}

/**
 * A count option (`fallback` when not given): a whole number from `min`. A NaN attempts count would
 * never be reached, so the retries would never end.
 */
function whole(name: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min)
    throw new TypeError(`AgentClient needs ${name} as a whole number >= ${min}, got ${String(value)}.`);
  return value;
}

/**
 * A time option in ms (`fallback` when not given), from `min` to `LONGEST_TIMER_MS`: a longer (or
 * infinite) one would fire at once, and an idleTimeoutMs of 0 would drop every connection at once.
 */
function duration(name: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value >= min && value <= LONGEST_TIMER_MS))
    throw new TypeError(
      `AgentClient needs ${name} in ms from ${min} to ${LONGEST_TIMER_MS} (the longest a timer waits), got ${String(value)}.`,
    );
  return value;
}

/**
 * 128 random bits, as 32 hex digits. `getRandomValues`, not `randomUUID`: a browser has the latter
 * only in secure contexts (a page served over plain HTTP has not).
 */
function randomKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
