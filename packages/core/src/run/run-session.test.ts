import { afterEach, describe, expect, it, vi } from "vitest";
import { AbortedError, AwaitingApprovalError, OrchestratorError } from "../errors.js";
import type { AgentMessage } from "../messages.js";
import type { ModelStepRequest } from "../model/stream-step.js";
import type { Orchestrator, RunContext } from "../orchestrator/contract.js";
import {
  answer,
  assistantCalling,
  call,
  callsReply,
  eventsOf,
  type HarnessOverrides,
  runHarness,
  type ScriptedReply,
  scriptedStep,
  textReply,
  trace,
  usage,
} from "./run-fixtures.test-support.js";
import { RunSession, type RunStart } from "./run-session.js";

const user = (content: string): AgentMessage => ({ role: "user", content, timestamp: 1 });

function orchestrator(run: (ctx: RunContext) => Promise<void>): Orchestrator & { runs: number } {
  const plugin = {
    name: "tiny",
    runs: 0,
    run: (ctx: RunContext) => {
      plugin.runs++;
      return run(ctx);
    },
  };
  return plugin;
}

/** A session over a fresh harness; the model step answers with `replies`. */
function sessionOf(
  start: Partial<RunStart> & Pick<RunStart, "orchestrator">,
  options: { replies?: ScriptedReply[]; setup?: HarnessOverrides; history?: AgentMessage[] } = {},
) {
  const h = runHarness({ modelStep: scriptedStep(...(options.replies ?? [])), ...options.setup });
  // Through the keeper, as earlier runs wrote it: it knows the calls still open.
  for (const message of options.history ?? []) h.keeper.append(message);
  const session = new RunSession(
    h.setup,
    { input: [user("hi")], resume: undefined, ...start },
    h.publisher,
    h.transcript,
  );
  return { ...h, session };
}

/** One turn: a model call, its tools if it asks for them, the answer. */
const oneTurn = orchestrator(async (ctx) => {
  ctx.startTurn();
  let decision = await ctx.decide();
  while (decision.mode === "steer") {
    await ctx.executeTools(decision.toolCalls);
    decision = await ctx.decide();
  }
  ctx.endTurn(decision.message);
});

/** Lets every settled promise run its callbacks (the model step and hooks here use no timers). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe("RunSession", () => {
  it("runs the orchestrator from agent_start to agent_end and reports a completed run", async () => {
    const earlier = [user("before"), answer("earlier answer")];
    const s = sessionOf(
      { orchestrator: oneTurn },
      {
        history: earlier,
        replies: [
          (request: ModelStepRequest) => {
            s.clock.advance(40);
            return textReply(`Hello (${request.prompt.length} messages).`, { usage: usage(8, 4) });
          },
        ],
      },
    );
    const result = await s.session.execute();
    expect(trace(s.events)).toEqual([
      "agent_start",
      "turn_start",
      "text_delta",
      "steering_mode",
      "turn_end",
      "agent_end",
    ]);
    expect(s.events[0]?.seq).toBe(0);
    expect(result).toMatchObject({
      runId: "run-1",
      stopReason: "completed",
      text: "Hello (4 messages).",
      usage: usage(8, 4),
      durationMs: 40,
    });
    expect(result.error).toBeUndefined();
    expect(result.newMessages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(result.messages).toEqual([...earlier, ...result.newMessages]);
    expect(eventsOf(s.events, "agent_end")[0]).toMatchObject({ stopReason: "completed", durationMs: 40 });
  });

  it("reports an orchestrator that throws a plain error as orchestrator_error, before agent_end", async () => {
    const failing = orchestrator(async (ctx) => {
      ctx.startTurn();
      throw new Error("boom");
    });
    const s = sessionOf({ orchestrator: failing });
    const result = await s.session.execute();
    expect(result.stopReason).toBe("error");
    expect(result.error).toBeInstanceOf(OrchestratorError);
    expect(result.error?.message).toBe('Orchestrator "tiny" failed: boom');
    expect(trace(s.events)).toEqual(["agent_start", "turn_start", "turn_end", "error", "agent_end"]);
    expect(eventsOf(s.events, "turn_end")[0]?.message).toMatchObject({ content: [], stopReason: "error" });
    expect(eventsOf(s.events, "error")[0]).toMatchObject({
      code: "orchestrator_error",
      message: 'Orchestrator "tiny" failed: boom',
    });
    expect(eventsOf(s.events, "agent_end")[0]?.stopReason).toBe("error");
  });

  it("fails the run alike when the orchestrator's run() throws synchronously", async () => {
    const sync: Orchestrator = {
      name: "sync",
      run: () => {
        throw new Error("not even a promise");
      },
    };
    const s = sessionOf({ orchestrator: sync });
    const result = await s.session.execute();
    expect(result.error?.message).toBe('Orchestrator "sync" failed: not even a promise');
    expect(trace(s.events)).toEqual(["agent_start", "error", "agent_end"]);
  });

  it("abandons an orchestrator that ignores the abort abortGraceMs after it", async () => {
    vi.useFakeTimers();
    const stubborn = orchestrator(() => new Promise<void>(() => {}));
    const s = sessionOf(
      { orchestrator: stubborn },
      { setup: { limits: { maxCycles: 10, abortGraceMs: 100 } } },
    );
    let settled = false;
    const running = s.session.execute().finally(() => {
      settled = true;
    });
    s.setup.abortScope.abort("user pressed stop");
    await vi.advanceTimersByTimeAsync(99);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(true);
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeInstanceOf(AbortedError);
    expect(trace(s.events)).toEqual(["agent_start", "error", "agent_end"]);
    expect(eventsOf(s.events, "error")[0]?.code).toBe("aborted");
  });

  it("ends as awaiting_approval with the pending calls, leaving them open", async () => {
    const beforeToolCall = () => ({ requireApproval: true as const, reason: "it writes" });
    let thrown: unknown;
    const catching = orchestrator(async (ctx) => {
      const decision = await ctx.decide();
      if (decision.mode !== "steer") return;
      await ctx.executeTools(decision.toolCalls).catch((error: unknown) => {
        thrown = error;
        // Waits forever: the suspension ends the run, not the orchestrator.
        return new Promise(() => {});
      });
    });
    const s = sessionOf(
      { orchestrator: catching },
      { replies: [callsReply([call("a")])], setup: { hooks: { beforeToolCall } } },
    );
    let settled = false;
    const running = s.session.execute().finally(() => {
      settled = true;
    });
    await flush();
    expect(settled).toBe(true);
    const result = await running;
    expect(thrown).toBeInstanceOf(AwaitingApprovalError);
    expect(result.stopReason).toBe("awaiting_approval");
    expect(result.error).toBeUndefined();
    expect(result.pendingApprovals).toEqual([
      { toolCallId: "a", toolName: "echo", args: { text: "a" }, reason: "it writes" },
    ]);
    expect(s.session.suspension?.calls).toEqual([call("a")]);
    expect(s.keeper.openCalls).toEqual([call("a")]);
    expect(trace(s.events)).toEqual(["agent_start", "steering_mode", "agent_end"]);
  });

  it("resumes a suspended batch before the orchestrator runs", async () => {
    const history = [user("go"), assistantCalling([call("a")])];
    let seen: string[] = [];
    const looking = orchestrator(async (ctx) => {
      seen = ctx.messages.all.map((m) => m.role);
    });
    const s = sessionOf(
      {
        orchestrator: looking,
        input: [user("next")],
        resume: {
          suspension: { calls: [call("a")], waits: new Map([["a", { kind: "approval" as const }]]) },
          decisions: new Map([["a", { approved: true }]]),
          results: new Map(),
        },
      },
      { history },
    );
    const result = await s.session.execute();
    expect(seen).toEqual(["user", "assistant", "toolResult", "user"]);
    expect(result.stopReason).toBe("completed");
    expect(trace(s.events)).toEqual(["agent_start", "tool_call:a", "tool_result:a", "agent_end"]);
  });

  it("cancels a model call still in flight when the orchestrator returns without awaiting it", async () => {
    let late: unknown;
    let request: ModelStepRequest | undefined;
    const hasty = orchestrator(async (ctx) => {
      ctx.decide().catch((error: unknown) => {
        late = error;
      });
    });
    const s = sessionOf(
      { orchestrator: hasty },
      {
        replies: [
          (r) => {
            request = r;
            return new Promise((_resolve, reject) =>
              r.abortScope?.onAbort(() => reject(r.abortScope?.signal.reason)),
            );
          },
        ],
      },
    );
    const result = await s.session.execute();
    expect(result.stopReason).toBe("completed");
    expect(request?.abortScope?.aborted).toBe(true);
    expect(s.setup.abortScope.signal.reason).toEqual(new AbortedError("the run has ended"));
    await flush();
    expect(late).toBeInstanceOf(AbortedError);
    expect(s.keeper.messages.map((m) => m.role)).toEqual(["user"]);
  });

  it("answers the calls the orchestrator left without results", async () => {
    const leaving = orchestrator(async (ctx) => {
      await ctx.decide();
    });
    const s = sessionOf({ orchestrator: leaving }, { replies: [callsReply([call("a")])] });
    const result = await s.session.execute();
    expect(result.stopReason).toBe("completed");
    expect(trace(s.events)).toEqual([
      "agent_start",
      "steering_mode",
      "tool_call:a",
      "tool_result:a",
      "agent_end",
    ]);
    expect(result.newMessages.at(-1)).toMatchObject({
      role: "toolResult",
      toolCallId: "a",
      status: "error",
      content: "not completed: the orchestrator ended without running this call",
    });
    expect(result.metrics.toolCalls).toEqual({ error: 1 });
  });

  it("queues again, on the result, the steering and follow-ups it took and did not use", async () => {
    const taking = orchestrator(async (ctx) => {
      await ctx.followUps.take();
      await ctx.steering.take();
    });
    const s = sessionOf({ orchestrator: taking });
    s.steeringQueue.push("steer", 2);
    s.followUpQueue.push("follow", 3);
    const result = await s.session.execute();
    const steer = { role: "user", content: "steer", timestamp: 2 };
    const follow = { role: "user", content: "follow", timestamp: 3 };
    expect(result.requeued).toEqual([steer, follow]);
    expect(s.steeringQueue.peek()).toEqual([steer]);
    expect(s.followUpQueue.peek()).toEqual([follow]);
  });

  it("with nothing to do (idle), completes without running the orchestrator", async () => {
    const never = orchestrator(async () => {});
    const s = sessionOf({ orchestrator: never, idle: true });
    const result = await s.session.execute();
    expect(never.runs).toBe(0);
    expect(result.stopReason).toBe("completed");
    expect(result.newMessages).toEqual([]);
    expect(trace(s.events)).toEqual(["agent_start", "agent_end"]);
  });
});
