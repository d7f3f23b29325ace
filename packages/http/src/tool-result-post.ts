import { ClientToolError, type ClientToolOutcome } from "@agent-core/core";
import type { RateLimiterMemory } from "rate-limiter-flexible";
import { z } from "zod";
import { mayTouch } from "./authorize.js";
import { digest, type HookClaims, type HookTokens } from "./hook-tokens.js";
import { HttpError } from "./http-error.js";
import { consume, limiter } from "./rate-limits.js";
import { readJsonBody } from "./request-parsing.js";
import type { BackendRun } from "./run-backend.js";
import { closingError } from "./run-start.js";
import type { Principal, RateLimit, resolveOptions } from "./server-options.js";
import type { ServerRun } from "./server-run.js";
import { MemoryTokenLedger, type TokenLedger } from "./token-ledger.js";
import { ToolResultAnswers } from "./tool-result-answers.js";

// One object with a check, not a union of the two forms: a union's refusal is a bare "Invalid
// input", which tells a client neither that one of the two is missing nor which field is wrong.
const toolResultBody = z
  .strictObject({
    toolCallId: z.string().min(1),
    token: z.string().min(1),
    result: z.unknown().optional(),
    error: z.string().optional(),
  })
  .refine((body) => "result" in body !== "error" in body, {
    message: 'Give either "result" or "error" (a string), not both.',
  });

/** What a tool-result post needs of the server: its options and tokens, and the runs it keeps. */
export interface ToolResultPostContext {
  config: ReturnType<typeof resolveOptions>;
  tokens: HookTokens;
  /** `ledger` (default: in memory). */
  ledger: TokenLedger | undefined;
  /** `rateLimits.callback`. */
  rateLimit: RateLimit | false | undefined;
  /** A run this process keeps, else one the backend finds. */
  anyRun(runId: string): Promise<ServerRun | undefined>;
  /** Keeps a run the backend gave (a resumed one). */
  track(run: BackendRun, outliveStream: boolean): ServerRun;
  /** Whether the server is closing: it begins no more runs, resumed ones included. */
  closing(): boolean;
}

/**
 * `POST /runs/:runId/tool-results`: a client tool's result, with its hook token: the token
 * checked, the ledger's verdict, the result delivered; the same post again gets the first one's
 * answer (`ToolResultAnswers`).
 */
export class ToolResultPosts {
  readonly #context: ToolResultPostContext;
  readonly #ledger: TokenLedger;
  /** The ledger this server made (no `ledger` option): it is the server's to close. */
  readonly #ownLedger: MemoryTokenLedger | undefined;
  readonly #answers: ToolResultAnswers;
  readonly #limit: RateLimiterMemory | undefined;

  constructor(context: ToolResultPostContext) {
    this.#context = context;
    if (context.ledger !== undefined) this.#ledger = context.ledger;
    else {
      this.#ownLedger = new MemoryTokenLedger(context.config.now);
      this.#ledger = this.#ownLedger;
    }
    this.#answers = new ToolResultAnswers(context.config.now);
    this.#limit = limiter(context.rateLimit, { points: 600, durationSec: 60 }, "rateLimits.callback");
  }

  async post(request: Request, principal: Principal, runId: string): Promise<Response> {
    const { config, tokens } = this.#context;
    await consume(this.#limit, principal.userId);
    const body = await readJsonBody(request, toolResultBody, config.maxBodyBytes);
    const claims = tokens.verify(body.token);
    const forbidden = (why: string) =>
      new HttpError(403, "invalid-token", `The hook token is not valid here: ${why}.`);
    if (claims === undefined) throw forbidden("it was not issued by this server");
    if (claims.runId !== runId) throw forbidden("it is for another run");
    if (claims.toolCallId !== body.toolCallId) throw forbidden("it is for another tool call");
    if (claims.userId !== principal.userId) throw forbidden("it is for another user");
    if (claims.documentId !== undefined)
      mayTouch(principal, claims.documentId, forbidden("it is for another document"));
    if (claims.exp <= config.now()) throw new HttpError(410, "token-expired", "The hook token has expired.");
    const outcome = body.error !== undefined ? { error: body.error } : { result: body.result ?? null };
    const payload = digest(outcome);
    const resumed = await this.#answers.once(claims.nonce, payload, claims.exp, () =>
      this.#take(claims, payload, runId, outcome),
    );
    if (resumed === undefined) return new Response(null, { status: 204 });
    return Response.json({ runId: resumed }, { status: 202 });
  }

  /**
   * The ledger's verdict on a posted result, then the result delivered: the id of the run it
   * resumed (a suspended run's last result), else undefined.
   */
  async #take(
    claims: HookClaims,
    payload: string,
    runId: string,
    outcome: ClientToolOutcome,
  ): Promise<string | undefined> {
    const verdict = await this.#ledger.use(claims.nonce, payload, claims.exp);
    if (verdict === "conflict")
      throw new HttpError(409, "token-used", "This hook token was already used with a different result.");
    const run = await this.#context.anyRun(runId);
    if (verdict === "repeat") {
      // Taken, but not answered by this process (another one on a shared ledger took it, or the
      // post here failed): passed again, which changes nothing where it was delivered, to learn
      // the run it resumed, and delivers it where the post that recorded it failed (its database
      // went away). A call that no longer waits had its result, or has ended; any other failure
      // is this post's answer, which may be retried: a 204 would say the result was taken.
      // A run neither kept here nor found by the backend (forgotten, or the server closed) takes
      // nothing: a 204 would say it took this result.
      if (run === undefined) throw callEnded();
      if (run.continuedAs === undefined)
        await this.#deliver(run, claims.toolCallId, outcome).catch((error: unknown) => {
          if (!(error instanceof ClientToolError)) throw error;
        });
      return run.continuedAs;
    }
    const waiting = run?.waitingCall(claims.toolCallId);
    if (run === undefined || waiting === undefined) throw callEnded();
    if (waiting.toolName !== claims.toolName || waiting.args !== claims.args)
      throw new HttpError(
        403,
        "invalid-token",
        "The hook token is not valid here: it does not match the call.",
      );
    try {
      return await this.#deliver(run, claims.toolCallId, outcome);
    } catch (error) {
      if (error instanceof ClientToolError) throw new HttpError(410, "call-ended", error.message);
      throw error;
    }
  }

  /** Forgets the answers and the server's own ledger (the server is closed), and stops their timers. */
  close(): void {
    this.#answers.close();
    this.#ownLedger?.close();
  }

  /** Delivers the result; the id of the run it resumed, when it was a suspended run's last. */
  async #deliver(
    run: ServerRun,
    toolCallId: string,
    outcome: ClientToolOutcome,
  ): Promise<string | undefined> {
    // A resumed run is a new run: close() would neither abort it nor wait for it. Refused before the
    // run takes the result, which a post to a server that is not closing can then deliver.
    if (this.#context.closing() && run.resumesWith(toolCallId)) throw closingError();
    const resumed = await run.run.submitToolResult(toolCallId, outcome);
    run.answered(toolCallId);
    if (resumed === undefined) return undefined;
    // The client attaches to the resumed run; two posts that both learned of it track it once.
    if (run.continuedAs === undefined) {
      this.#context.track(resumed, run.outliveStream);
      run.resumedAs(resumed.runId);
    }
    return run.continuedAs;
  }
}

function callEnded(): HttpError {
  return new HttpError(
    410,
    "call-ended",
    "The tool call no longer waits for a result (it timed out or the run ended).",
  );
}
