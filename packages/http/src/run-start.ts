import type { RateLimiterMemory } from "rate-limiter-flexible";
import { z } from "zod";
import { mayTouch } from "./authorize.js";
import { streamEvents } from "./event-stream-response.js";
import { digest } from "./hook-tokens.js";
import { HttpError } from "./http-error.js";
import { consume, limiter } from "./rate-limits.js";
import { readJsonBody } from "./request-parsing.js";
import type { BackendRun, RunBackend } from "./run-backend.js";
import type { Principal, RateLimit, resolveOptions } from "./server-options.js";
import type { ServerRun } from "./server-run.js";
import { idempotencyKeyOf, type StartKey, StartKeys } from "./start-keys.js";

const promptBody = z.strictObject({
  prompt: z.string().min(1).max(100_000),
  conversationId: z.string().min(1).max(200).optional(),
  documentId: z.string().min(1).max(200).optional(),
  outliveStream: z.boolean().optional(),
});

/** What a start needs of the server: its options and backend, and the runs it keeps. */
export interface RunStartContext {
  config: ReturnType<typeof resolveOptions>;
  backend: RunBackend;
  /** `rateLimits.start`. */
  rateLimit: RateLimit | false | undefined;
  /** The runs the server keeps, by id: counted against `maxRuns`. */
  runs: ReadonlyMap<string, ServerRun>;
  /** Whether the server is closing: it starts no more runs. */
  closing(): boolean;
  /** Whether `close()` has ended: a run given now is not kept. */
  closed(): boolean;
  /** Keeps a run the backend gave. */
  track(run: BackendRun, outliveStream: boolean): ServerRun;
  /** The user's run of an id (404 otherwise). */
  ownRun(runId: string, principal: Principal): Promise<ServerRun>;
}

/**
 * `POST /runs`: starts a run and streams it from its first event. With an `Idempotency-Key`, the
 * same start again (same user, key and body) streams the first start's run, another body is 409
 * (`StartKeys` in this process; a durable backend finds a key's run in its database).
 */
export class RunStarts {
  readonly #context: RunStartContext;
  readonly #keys: StartKeys;
  readonly #limit: RateLimiterMemory | undefined;
  /** Starts past the `maxRuns` check whose run the backend has not given yet: `close()` waits for them. */
  readonly #starting = new Set<Promise<BackendRun>>();

  constructor(context: RunStartContext) {
    this.#context = context;
    this.#keys = new StartKeys(context.config.now);
    this.#limit = limiter(context.rateLimit, { points: 30, durationSec: 60 }, "rateLimits.start");
  }

  async start(request: Request, principal: Principal): Promise<Response> {
    const { config, closing, ownRun } = this.#context;
    if (closing()) throw closingError();
    const key = idempotencyKeyOf(request);
    await consume(this.#limit, principal.userId);
    const body = await readJsonBody(request, promptBody, config.maxBodyBytes);
    if (body.documentId !== undefined) mayTouch(principal, body.documentId);
    const { heartbeatMs, now, detachGraceMs } = config;
    const stream = (run: ServerRun) => streamEvents(request, run, 0, { heartbeatMs, now, detachGraceMs });
    if (key === undefined) return stream(await this.#begin(principal, body));
    const start: StartKey = { key, digest: digest(body), ttlMs: config.idempotencyKeyTtlMs };
    const runId = await this.#keys.once(
      principal.userId,
      start,
      async () => (await this.#begin(principal, body, start)).runId,
    );
    // The key's run, from its first event, as a re-attach would stream it (404 once forgotten).
    return stream(await ownRun(runId, principal));
  }

  /** Starts the run of a body (or, for a key a durable backend knows, finds that key's run). */
  async #begin(principal: Principal, body: z.output<typeof promptBody>, key?: StartKey) {
    const { config, backend, runs, track } = this.#context;
    // Starts still awaiting their agent count too, or concurrent starts would all pass the check.
    if (countedRuns(runs) + this.#starting.size >= config.maxRuns)
      throw new HttpError(503, "server-busy", "Too many runs in progress; try again shortly.", {
        headers: { "retry-after": "1" },
      });
    // Checked again here, after the body was read: a start close() has not seen must not begin.
    if (this.#context.closing()) throw closingError();
    const starting = (async () =>
      backend.start(
        { userId: principal.userId, conversationId: body.conversationId, documentId: body.documentId },
        body.prompt,
        key,
      ))();
    this.#starting.add(starting);
    let run: BackendRun;
    try {
      run = await starting;
    } finally {
      this.#starting.delete(starting);
    }
    // Given after close() stopped waiting for it (a factory slower than that): not kept, ended.
    if (this.#context.closed()) {
      // Best effort: a backend whose cancel fails is closed already.
      if (!backend.runsOutliveStreams)
        await (async () => run.cancel("the server is closing"))().catch(() => {});
      throw closingError();
    }
    // A key another server process started its run under: the run may be kept here already.
    return runs.get(run.runId) ?? track(run, body.outliveStream ?? false);
  }

  /** Forgets the idempotency keys (the server is closed) and stops their timers. */
  close(): void {
    this.#keys.close();
  }

  /** Resolves once no start waits for its run any more (`close()` keeps and ends those runs too). */
  async started(): Promise<void> {
    await Promise.allSettled(this.#starting);
  }
}

/**
 * The runs counted against `maxRuns`: every run kept but a suspended run that was resumed, whose
 * place the run that resumed it took (it is kept only to be re-attached to). So a resume, which
 * only a start already counted can lead to, never needs a place of its own: refusing it would
 * strand the user's calls on a full server until suspended runs are forgotten.
 */
function countedRuns(runs: ReadonlyMap<string, ServerRun>): number {
  let counted = 0;
  for (const run of runs.values()) if (run.continuedAs === undefined) counted++;
  return counted;
}

/** The refusal of what would begin a run (a start, a suspended run's last result) once `close()` began. */
export function closingError(): HttpError {
  return new HttpError(503, "server-closing", "The server is closing; start the run elsewhere.");
}
