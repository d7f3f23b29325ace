import type { Agent, AgentEvent, AgentRun, ClientToolOutcome } from "@agent-core/core";
import { HttpError } from "./http-error.js";
import { forgetOnceIdle } from "./idle-forgetting.js";
import { limitRunTime } from "./run-time-limit.js";
import type { StartKey } from "./start-keys.js";

/** What the server knows when it needs an agent for a conversation. */
export interface AgentRequest {
  userId: string;
  conversationId: string | undefined;
  documentId: string | undefined;
}

/** Who a run belongs to, as `authorize` said when it started. */
export interface RunOwner {
  userId: string;
  documentId: string | undefined;
}

/**
 * Where the server's runs execute: by default agents in this process (`memoryBackend`); a durable
 * runtime (`@agent-core/dbos`) runs them in workers, so any server process can serve any run.
 */
export interface RunBackend {
  /**
   * Starts a run of the prompt for this request. With `key` (the start's `Idempotency-Key`), a
   * backend whose runs other server processes serve makes the start idempotent among them: the
   * same key of the same user within `key.ttlMs` gives the run that key started, started once
   * (also when the start that recorded the key failed after it), and another body is refused
   * with `idempotencyKeyReused()`. The server answers the repeats that reach the process of the
   * first start itself: a backend of this process's runs only may ignore `key`.
   */
  start(request: AgentRequest, prompt: string, key?: StartKey): Promise<BackendRun>;
  /** A run this server process did not start (another process did), or undefined. */
  find(runId: string): Promise<BackendRun | undefined>;
  /** Whether a run goes on when no stream is attached (durable runs do: any process may serve it). */
  readonly runsOutliveStreams: boolean;
  close(): void | Promise<void>;
}

/** One run, wherever it executes: its events, and what clients may send it. */
export interface BackendRun {
  readonly runId: string;
  readonly owner: RunOwner;
  /** Calls `onEvent` with every event of the run, from seq 0, in order, until `agent_end`. */
  subscribe(onEvent: (event: AgentEvent) => void): Subscription;
  /**
   * Delivers a client tool's result; when it was the last a suspended run waited for, the run
   * that resumes it. Throws `ClientToolError` when the run no longer waits for the call. The same
   * result again (the ledger found a repeat: another server process took it) changes nothing and
   * answers with the resumed run once it is known.
   */
  submitToolResult(toolCallId: string, outcome: ClientToolOutcome): Promise<BackendRun | undefined>;
  /**
   * Queues a message for this run only, never another; an `HttpError` says why it cannot. A run
   * with `maxQueued` messages waiting to be taken (the server's `maxQueuedMessages`), steering
   * and follow-ups together, refuses it with `queueFull()`.
   */
  steer(message: string, maxQueued: number): Promise<void>;
  followUp(message: string, maxQueued: number): Promise<void>;
  /**
   * Cancels the run. The client is told the cancel was accepted once this returns, or once its
   * promise resolves: when the cancel is recorded where it takes effect. An `HttpError` says why
   * it cannot.
   */
  cancel(reason: string): void | Promise<void>;
}

/** The refusal of a message past `maxQueued` waiting for the run: 429 `queue-full`, the same from every backend. */
export function queueFull(runId: string, maxQueued: number): HttpError {
  return new HttpError(
    429,
    "queue-full",
    `Run "${runId}" has ${maxQueued} messages waiting to be taken (maxQueuedMessages); send this once it took some.`,
    { headers: { "retry-after": "1" } },
  );
}

export interface Subscription {
  stop(): void;
  /** Resolves once the events the run had when subscribed were passed on. */
  caughtUp: Promise<void>;
}

/** A conversation's agent: asked for (`agent`), and once made (`made`), when it was last used. */
interface Conversation {
  agent: Promise<Agent>;
  made?: Agent;
  /** When it was last asked for, or a run of its agent last ended: idle from then. */
  usedAt: number;
  /** Stops the watch that forgets it once idle, whether or not another request comes. */
  stopWatching: (() => void) | undefined;
  /**
   * Stops following its agent's runs: an agent the factory gives several conversations keeps no
   * listener of a forgotten one.
   */
  stopListening: (() => void) | undefined;
}

/** Whether the agent's last run was suspended for client tool results or approvals it still waits for. */
function waitsForAnswers(agent: Agent | undefined): boolean {
  return agent !== undefined && (agent.pendingClientTools.length > 0 || agent.pendingApprovals.length > 0);
}

/**
 * Runs agents in this process: one per `(user, conversation)` for `conversationTtlMs` idle (it
 * keeps the conversation's history), one per run without a conversation id.
 */
export function memoryBackend(
  makeAgent: (request: AgentRequest) => Agent | Promise<Agent>,
  options: {
    conversationTtlMs: number;
    /**
     * How long a suspended run can still be resumed (default 0): a conversation whose agent waits
     * for client tool results or approvals is kept at least that long, its history with it.
     */
    suspendedTtlMs?: number;
    now: () => number;
    /** The options of every prompt, given the agent that runs it. */
    promptOptions: (agent: Agent) => Parameters<Agent["prompt"]>[1];
    /** A run's whole time, resumed runs' too, unless its agent sets its own `timeouts.totalMs`. */
    runTimeoutMs?: number;
  },
): RunBackend {
  /**
   * Each conversation's agent, kept from the moment it is asked for: starts of a new conversation
   * at once wait for the one agent (an async `makeAgent` is asked once), and run on it in turn.
   */
  const conversations = new Map<string, Conversation>();

  /** Forgets the conversation once its agent has been idle for its TTL (see `forgetOnceIdle`). */
  function watchIdle(key: string, conversation: Conversation, agent: Agent): void {
    conversation.stopWatching = forgetOnceIdle(
      {
        busy: () => agent.busy,
        idleFor: () => options.now() - conversation.usedAt,
        ttlMs: () =>
          waitsForAnswers(agent)
            ? Math.max(options.conversationTtlMs, options.suspendedTtlMs ?? 0)
            : options.conversationTtlMs,
        forget: () => forget(key, conversation),
      },
      options.conversationTtlMs,
    );
  }

  function forget(key: string, conversation: Conversation): void {
    conversation.stopWatching?.();
    conversation.stopListening?.();
    if (conversations.get(key) === conversation) conversations.delete(key);
  }

  function agentFor(request: AgentRequest): Promise<Agent> {
    if (request.conversationId === undefined) return madeAgent(request);
    const key = `${request.userId}\u0000${request.conversationId}`;
    let conversation = conversations.get(key);
    if (conversation === undefined) {
      const kept: Conversation = {
        agent: madeAgent(request),
        usedAt: options.now(),
        stopWatching: undefined,
        stopListening: undefined,
      };
      conversations.set(key, kept);
      kept.agent.then(
        (agent) => {
          kept.made = agent;
          // Made after close() forgot every conversation: nothing to follow.
          if (conversations.get(key) !== kept) return;
          // Idle from the end of its last run, not from its start: a run longer than the TTL
          // leaves a conversation the user has only just been answered in.
          kept.stopListening = agent.on("agent_end", () => {
            kept.usedAt = options.now();
          });
          watchIdle(key, kept, agent);
        },
        // A factory that failed is asked again by the conversation's next start.
        () => {
          if (conversations.get(key) === kept) conversations.delete(key);
        },
      );
      conversation = kept;
    }
    conversation.usedAt = options.now();
    return conversation.agent;
  }

  async function madeAgent(request: AgentRequest): Promise<Agent> {
    return checkedAgent(await makeAgent(request));
  }

  return {
    runsOutliveStreams: false,
    async start(request, prompt) {
      const agent = await agentFor(request);
      const owner = { userId: request.userId, documentId: request.documentId };
      const run = agent.prompt(prompt, options.promptOptions(agent));
      return inProcess(agent, run, owner, options.runTimeoutMs);
    },
    // Runs live in the process that started them: there is nothing to find elsewhere.
    find: async () => undefined,
    close() {
      for (const [key, conversation] of conversations) forget(key, conversation);
    },
  };
}

/**
 * What an `agent` factory gave, checked: anything but an agent (an async factory that forgot to
 * return) fails the request, as a factory that threw, instead of breaking where it is used later.
 */
export function checkedAgent(agent: unknown): Agent {
  if (typeof (agent as Agent | undefined)?.prompt !== "function" || typeof (agent as Agent).on !== "function")
    throw new TypeError(`agent() must return an Agent (or a promise of one), got ${String(agent)}.`);
  return agent as Agent;
}

function inProcess(
  agent: Agent,
  run: AgentRun,
  owner: RunOwner,
  runTimeoutMs: number | undefined,
): BackendRun {
  // The agent's own timeouts.totalMs, when it sets one, is the run's whole time.
  if (runTimeoutMs !== undefined && agent.timeouts.totalMs === undefined)
    limitRunTime(agent, run, runTimeoutMs);
  const taken = new Set<string>();
  let resumedRun: BackendRun | undefined;
  let sent = false;
  /**
   * The agent's queues feed whichever of its runs reaches a boundary next, and a conversation's
   * agent runs its prompts one after the other: a message for a run still waiting behind another
   * would steer that other run. So it is refused until the run has begun.
   */
  const queue = (message: string, maxQueued: number, into: (message: string) => void) => {
    if (run.events.length === 0)
      throw new HttpError(
        409,
        "run-not-started",
        `Run "${run.runId}" waits for the conversation's run before it; send this once its agent_start arrived.`,
      );
    // The agent's queues hold this run's messages only (see above): a client must not grow them
    // without bound while the run takes none (a long tool call, a slow model).
    const { steering, followUps } = agent.queued;
    if (steering.length + followUps.length >= maxQueued) throw queueFull(run.runId, maxQueued);
    into(message);
    if (!sent) dropLeftMessagesAtEnd(agent, run);
    sent = true;
  };
  return {
    runId: run.runId,
    owner,
    subscribe(onEvent) {
      // What the run emitted inside `prompt()`, then the rest as it comes: both read synchronously
      // here, so no event falls between them. An agent runs one prompt at a time; the filter skips
      // the events of its runs before and after this one.
      let ended = false;
      let stop: (() => void) | undefined;
      const forward = (event: AgentEvent) => {
        if (event.runId !== run.runId || ended) return;
        ended = event.type === "agent_end";
        onEvent(event);
        if (ended) stop?.();
      };
      for (const event of run.events) forward(event);
      if (!ended) stop = agent.on("*", forward);
      return { stop: () => stop?.(), caughtUp: Promise.resolve() };
    },
    async submitToolResult(toolCallId, outcome) {
      if (taken.has(toolCallId)) return resumedRun;
      const resumed = agent.submitToolResult(toolCallId, outcome);
      taken.add(toolCallId);
      if (resumed !== undefined) resumedRun = inProcess(agent, resumed, owner, runTimeoutMs);
      return resumedRun;
    },
    async steer(message, maxQueued) {
      queue(message, maxQueued, (text) => agent.steer(text));
    },
    async followUp(message, maxQueued) {
      queue(message, maxQueued, (text) => agent.followUp(text));
    },
    cancel(reason) {
      run.abort(new Error(reason));
    },
  };
}

/**
 * What the run was sent and did not take before it ended (it was aborted, failed, or suspended
 * first) goes with it: the agent would put it back for its next run, another run of the
 * conversation. Messages are only queued for a run that has begun, and an agent has one such run
 * at a time: at its end, everything queued is its.
 */
function dropLeftMessagesAtEnd(agent: Agent, run: AgentRun): void {
  const stop = agent.on("agent_end", (event) => {
    if (event.runId !== run.runId) return;
    stop();
    agent.takeQueued();
  });
}
