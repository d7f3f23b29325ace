import { z } from "zod";
import { authorizedPrincipal, mayTouch } from "./authorize.js";
import { EventsExpiredError } from "./event-log.js";
import { type EventStreamOptions, streamEvents } from "./event-stream-response.js";
import { HookTokens } from "./hook-tokens.js";
import { HttpError } from "./http-error.js";
import { logError } from "./log-error.js";
import { afterOf, readJsonBody, runIdOf } from "./request-parsing.js";
import { notAllowed, notFound, routeMethod } from "./routes.js";
import { type BackendRun, memoryBackend, type RunBackend } from "./run-backend.js";
import { RunStarts } from "./run-start.js";
import {
  type AgentServerOptions,
  ownServerOptions,
  type Principal,
  resolveOptions,
} from "./server-options.js";
import { ServerRun } from "./server-run.js";
import { ToolResultPosts } from "./tool-result-post.js";

/** The server: a Fetch API handler, plus what a process needs to stop it cleanly. */
export interface AgentServer {
  fetch(request: Request): Promise<Response>;
  /** Runs in memory now (running or kept for re-attaching). */
  readonly runCount: number;
  /**
   * Refuses new runs, aborts every run of this process (those whose agent was still being made
   * too, once made) and resolves once each ended, so its streams deliver its `agent_end` (waiting
   * 5 s at most for each), then forgets them all. Await it before
   * closing the HTTP server, which cuts the streams still open.
   */
  close(): Promise<void>;
}

const messageBody = z.strictObject({ message: z.string().min(1).max(100_000) });

/**
 * Agents over HTTP, as one `(request: Request) => Promise<Response>` handler: it runs unchanged in
 * Node (`serveNode`), Hono, Next.js route handlers and anything else on the Fetch API.
 *
 * Routes: `POST /runs` starts a run and streams it; `GET /runs/:runId/events` re-attaches
 * (`?after=seq` or `Last-Event-ID`); `POST /runs/:runId/tool-results` delivers a client tool's
 * result with its hook token; `POST /runs/:runId/steer`, `/follow-up` and `/cancel`.
 * See docs/http.md for the wire format, every error and the token rules.
 */
export function createAgentServer(given: AgentServerOptions): AgentServer {
  const options = ownServerOptions(given);
  const config = resolveOptions(options);
  const tokens = new HookTokens(options.hookSecret);
  const runs = new Map<string, ServerRun>();
  let closing = false;
  let closed = false;
  const backend: RunBackend =
    options.backend ??
    memoryBackend(options.agent as NonNullable<AgentServerOptions["agent"]>, {
      conversationTtlMs: config.conversationTtlMs,
      suspendedTtlMs: config.suspendedTtlMs,
      now: config.now,
      promptOptions: () => ({
        timeouts: { clientToolMs: config.clientToolTimeoutMs },
        clientTools: config.clientTools,
      }),
      runTimeoutMs: config.runTimeoutMs,
    });
  const streamOptions: EventStreamOptions = { heartbeatMs: config.heartbeatMs, now: config.now };

  const starts = new RunStarts({
    config,
    backend,
    rateLimit: options.rateLimits?.start,
    runs,
    closing: () => closing,
    closed: () => closed,
    track,
    ownRun,
  });
  const toolResults = new ToolResultPosts({
    config,
    tokens,
    ledger: options.ledger,
    rateLimit: options.rateLimits?.callback,
    anyRun,
    track,
    closing: () => closing,
  });

  /** A run the server keeps: its log, its tokens, and its forgetting once it ended. */
  function track(run: BackendRun, outliveStream: boolean): ServerRun {
    const serverRun = new ServerRun(run, {
      maxEvents: config.maxEventsPerRun,
      maxStreams: config.maxStreamsPerRun,
      outliveStream: outliveStream || backend.runsOutliveStreams,
      tokens,
      tokenTtlMs: config.clientToolTimeoutMs,
      suspendedTtlMs: config.suspendedTtlMs,
      now: config.now,
      onEnd: (ended) =>
        forgetAfter(
          ended,
          ended.suspended ? Math.max(config.suspendedTtlMs, config.retainEndedMs) : config.retainEndedMs,
        ),
      // Kept so long for the results it waited for: now as long as any ended run.
      onWaitOver: (suspended) => forgetAfter(suspended, config.retainEndedMs),
    });
    runs.set(run.runId, serverRun);
    return serverRun;
  }

  /** The ended runs' timers that forget them, each replaced by a later wait of its run. */
  const forgetTimers = new WeakMap<ServerRun, ReturnType<typeof setTimeout>>();

  function forgetAfter(ended: ServerRun, ms: number): void {
    clearTimeout(forgetTimers.get(ended));
    const forget = setTimeout(() => {
      if (runs.get(ended.runId) === ended) runs.delete(ended.runId);
    }, ms);
    // Keeping an ended run for re-attaching is no reason to keep the process alive.
    forget.unref?.();
    forgetTimers.set(ended, forget);
  }

  /** A run this process keeps, else one the backend finds (started by another process). */
  async function anyRun(runId: string): Promise<ServerRun | undefined> {
    const kept = runs.get(runId);
    if (kept !== undefined) return kept;
    const found = await backend.find(runId);
    if (found === undefined) return undefined;
    // Found twice at once: the first one kept is the one.
    const run = runs.get(runId) ?? track(found, true);
    await run.caughtUp;
    return run;
  }

  async function ownRun(runId: string, principal: Principal): Promise<ServerRun> {
    const run = await anyRun(runId);
    // Another user's run is as unknown as a run that never was: nothing leaks about it.
    if (run === undefined || run.owner.userId !== principal.userId)
      throw new HttpError(404, "run-not-found", `No run "${runId}".`);
    // The user's documents may have changed since the start: checked on every request.
    if (run.owner.documentId !== undefined) mayTouch(principal, run.owner.documentId);
    return run;
  }

  async function reattach(request: Request, principal: Principal, runId: string): Promise<Response> {
    const run = await ownRun(runId, principal);
    const asked = afterOf(request);
    if (asked > BigInt(run.log.end - 1))
      throw new HttpError(
        416,
        "after-out-of-range",
        `The run has no event ${asked} yet (its last is ${run.log.end - 1}).`,
      );
    const after = Number(asked); // at most the last seq, so exact
    // Nothing will ever follow: an empty 200 stream would have an EventSource reconnect every few
    // seconds until the run is forgotten; 204 is what tells it to stop.
    if (run.log.closed && after === run.log.end - 1)
      return new Response(null, { status: 204, headers: { "x-run-id": run.runId } });
    return streamEvents(request, run, after + 1, { ...streamOptions, detachGraceMs: config.detachGraceMs });
  }

  async function queueMessage(
    request: Request,
    principal: Principal,
    runId: string,
    queue: "steer" | "followUp",
  ): Promise<Response> {
    const run = await ownRun(runId, principal);
    const body = await readJsonBody(request, messageBody, config.maxBodyBytes);
    if (run.log.closed) throw new HttpError(409, "run-ended", `Run "${runId}" has ended.`);
    await run.run[queue](body.message, config.maxQueuedMessages);
    return new Response(null, { status: 202 });
  }

  async function route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    // The base path is a whole segment: with "/api", "/apiruns" is no route.
    const rest = url.pathname.slice(config.basePath.length);
    if (!url.pathname.startsWith(config.basePath) || (rest !== "" && !rest.startsWith("/"))) throw notFound();
    // Every segment counts, an empty one too: "//runs" or "/runs//r1/events" is no route, and
    // answering it as one would make two addresses of each (caches, logs and proxy rules see two).
    const parts = rest.split("/").slice(1);
    const allowed = parts.includes("") ? undefined : routeMethod(parts);
    if (allowed === undefined) throw notFound();
    const principal = await authorizedPrincipal(options.authorize, request);
    if (request.method !== allowed) throw notAllowed(allowed);
    const runId = parts[1] === undefined ? undefined : runIdOf(parts[1]);
    if (runId === undefined) return starts.start(request, principal);
    const action = parts[2];
    if (action === "events") return reattach(request, principal, runId);
    switch (action) {
      case "tool-results":
        return toolResults.post(request, principal, runId);
      case "steer":
        return queueMessage(request, principal, runId, "steer");
      case "follow-up":
        return queueMessage(request, principal, runId, "followUp");
      case "cancel":
        // Accepted once the backend recorded it: a durable backend waits for its database.
        await (await ownRun(runId, principal)).cancel("cancelled by the client");
        return new Response(null, { status: 202 });
      default:
        throw notFound();
    }
  }

  return {
    async fetch(request) {
      try {
        return await route(request);
      } catch (error) {
        if (error instanceof HttpError) return error.toResponse();
        if (error instanceof EventsExpiredError)
          return new HttpError(410, "events-expired", error.message).toResponse();
        logError(
          config.logger,
          { err: error, method: request.method, url: request.url },
          "agent-core http: a request failed",
        );
        return new HttpError(500, "internal", "The server failed to answer this request.").toResponse();
      }
    },
    get runCount() {
      return runs.size;
    },
    async close() {
      closing = true;
      // Starts whose agent is still being made: their runs are kept once made, and ended below.
      await atMost(starts.started(), CLOSE_WAIT_MS);
      const kept = [...runs.values()];
      // A durable backend's runs go on in their workers: their streams here end now.
      if (!backend.runsOutliveStreams) {
        for (const run of kept) run.abandon("the server is closing");
        await atMost(Promise.all(kept.map((run) => untilEnded(run))), CLOSE_WAIT_MS);
      }
      for (const run of kept) {
        run.stop();
        clearTimeout(forgetTimers.get(run));
      }
      runs.clear();
      starts.close();
      toolResults.close();
      closed = true;
      await backend.close();
    },
  };
}

/**
 * How long `close()` waits for aborted runs to end: an agent ends an aborted run within its
 * `limits.abortGraceMs` (250 ms by default), so this only bounds a backend that does not.
 */
const CLOSE_WAIT_MS = 5_000;

/** Resolves once the run's log has taken its last event. */
async function untilEnded({ log }: ServerRun): Promise<void> {
  while (!log.closed) await log.changed(log.end);
}

/** Resolves when `promise` settles, or after `ms`, whichever comes first. */
async function atMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
