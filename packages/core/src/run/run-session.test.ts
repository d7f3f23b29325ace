import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  AbortedError,
  AwaitingApprovalError,
  AwaitingClientToolError,
  OrchestratorError,
} from "../errors.js";
import { InvalidEventError } from "../events/event-registry.js";
import type { AgentMessage } from "../messages.js";
import type { ModelStepRequest } from "../model/stream-step.js";
import type { Orchestrator, RunContext } from "../orchestrator/contract.js";
import { defineTool } from "../tools/define-tool.js";
import { ToolRegistry } from "../tools/registry.js";
import {
  answer,
  assistantCalling,
  call,
  callsReply,
  echoTool,
  eventsOf,
  type HarnessOverrides,
  manualTool,
  runHarness,
  type ScriptedReply,
  scriptedStep,
  textReply,
  trace,
  usage,
} from "./run-fixtures.test-support.js";
import { type RunResult, RunSession, type RunStart } from "./run-session.js";
import { validateTranscript } from "./transcript.js";

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

/** The session's run, its result once it ends. */
const executed = (session: RunSession) => new Promise<RunResult>((resolve) => session.execute(resolve));

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
    const result = await executed(s.session);
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
    const result = await executed(s.session);
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
    const result = await executed(s.session);
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
    const running = executed(s.session).finally(() => {
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
    const running = executed(s.session).finally(() => {
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
    const result = await executed(s.session);
    expect(seen).toEqual(["user", "assistant", "toolResult", "user"]);
    expect(result.stopReason).toBe("completed");
    expect(trace(s.events)).toEqual(["agent_start", "tool_call:a", "tool_result:a", "agent_end"]);
  });

  it("a run aborted while it resumes a batch still puts its prompt into the history, after the results", async () => {
    let hooked = 0;
    // The resumed call's hook never returns: the run abandons the batch after the grace period.
    const afterToolCall = () => {
      hooked++;
      return new Promise<undefined>(() => {});
    };
    const history = [user("go"), assistantCalling([call("e")])];
    const s = sessionOf(
      {
        orchestrator: oneTurn,
        input: [user("next")],
        resume: {
          suspension: { calls: [call("e")], waits: new Map([["e", { kind: "approval" as const }]]) },
          decisions: new Map([["e", { approved: true }]]),
          results: new Map(),
        },
      },
      { history, setup: { hooks: { afterToolCall } } },
    );
    const running = executed(s.session);
    await flush();
    expect(hooked).toBe(1);
    s.setup.abortScope.abort("user pressed stop");
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(result.newMessages.map((m) => m.role)).toEqual(["toolResult", "user"]);
    expect(result.messages.at(-1)).toEqual(user("next"));
    expect(validateTranscript(result.messages)).toEqual([]);
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
    const result = await executed(s.session);
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
    const result = await executed(s.session);
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
    const result = await executed(s.session);
    const steer = { role: "user", content: "steer", timestamp: 2 };
    const follow = { role: "user", content: "follow", timestamp: 3 };
    expect(result.requeued).toEqual([steer, follow]);
    expect(s.steeringQueue.peek()).toEqual([steer]);
    expect(s.followUpQueue.peek()).toEqual([follow]);
  });

  it("with nothing to do (idle), completes without running the orchestrator", async () => {
    const never = orchestrator(async () => {});
    const s = sessionOf({ orchestrator: never, idle: true });
    const result = await executed(s.session);
    expect(never.runs).toBe(0);
    expect(result.stopReason).toBe("completed");
    expect(result.newMessages).toEqual([]);
    expect(trace(s.events)).toEqual(["agent_start", "agent_end"]);
  });
});

describe("RunSession and its services, what the measured survivors showed untested", () => {
  /** A tool that moves the fake clock while it runs, and one that queues steering. */
  const tools = (s: () => ReturnType<typeof sessionOf>) =>
    new ToolRegistry([
      echoTool,
      defineTool({
        name: "slow",
        description: "Takes 30 ms of the fake clock.",
        inputSchema: z.object({ text: z.string() }),
        execute: ({ text }) => {
          s().clock.advance(30);
          return text;
        },
      }),
      defineTool({
        name: "steerer",
        description: "Queues steering.",
        inputSchema: z.object({ text: z.string() }),
        execute: ({ text }) => {
          s().steeringQueue.push("change of plan", 5);
          return text;
        },
      }),
    ]);

  it("a run that finished its work leaves its signal alone, and counts the tools' time", async () => {
    const s = sessionOf(
      { orchestrator: oneTurn },
      {
        replies: [
          () => {
            s.clock.advance(40);
            return callsReply([call("a", "slow")]);
          },
          textReply("done"),
        ],
        setup: { tools: tools(() => s) },
      },
    );
    const result = await executed(s.session);
    expect(result.stopReason).toBe("completed");
    expect(s.setup.abortScope.aborted).toBe(false);
    expect(result.metrics.toolMs).toBe(30);
    // Nothing to report: no error, nothing queued again, nothing pending.
    expect(Object.keys(result)).not.toContain("error");
    expect(Object.keys(result)).not.toContain("requeued");
    expect(Object.keys(result)).not.toContain("pendingApprovals");
  });

  it("cancels a tool batch still in flight when the orchestrator returns without awaiting it", async () => {
    const slow = manualTool("wait");
    let late: unknown;
    const hasty = orchestrator(async (ctx) => {
      ctx.messages.append(assistantCalling([call("w", "wait")]));
      ctx.executeTools([call("w", "wait")]).catch((error: unknown) => {
        late = error;
      });
    });
    const s = sessionOf({ orchestrator: hasty }, { setup: { tools: new ToolRegistry([slow.tool]) } });
    const result = await executed(s.session);
    expect(result.stopReason).toBe("completed");
    expect(slow.aborted).toEqual(["w"]);
    expect(s.setup.abortScope.signal.reason).toEqual(new AbortedError("the run has ended"));
    await flush();
    expect(late).toEqual(new AbortedError("the run has already ended"));
  });

  it("rejects executeTools with the error of an orchestrator's callback, synchronous or not", async () => {
    const slow = manualTool("wait");
    const errors: unknown[] = [];
    const failing = orchestrator(async (ctx) => {
      ctx.messages.append(assistantCalling([call("a")]));
      await ctx
        .executeTools([call("a")], {
          beforeEach: () => {
            throw new Error("before");
          },
        })
        .catch((error: unknown) => errors.push(error));
      ctx.messages.append(assistantCalling([call("w", "wait")]));
      const running = ctx
        .executeTools([call("w", "wait")], {
          afterEach: () => {
            throw new Error("after");
          },
        })
        .catch((error: unknown) => errors.push(error));
      slow.release("w");
      await running;
    });
    const s = sessionOf(
      { orchestrator: failing },
      { setup: { tools: new ToolRegistry([echoTool, slow.tool]) } },
    );
    const result = await executed(s.session);
    expect(errors).toEqual([new Error("before"), new Error("after")]);
    expect(result.stopReason).toBe("completed");
    // Both batches ended: nothing in flight was left to cancel.
    expect(s.setup.abortScope.aborted).toBe(false);
  });

  it("tells the orchestrator which calls wait for approval, and only those", async () => {
    const beforeToolCall = ({ call }: { call: { id: string } }) =>
      call.id === "b" ? { requireApproval: true as const } : undefined;
    let thrown: unknown;
    const catching = orchestrator(async (ctx) => {
      ctx.messages.append(assistantCalling([call("a"), call("b")]));
      await ctx.executeTools([call("a"), call("b")]).catch((error: unknown) => {
        thrown = error;
      });
    });
    const s = sessionOf({ orchestrator: catching }, { setup: { hooks: { beforeToolCall } } });
    const result = await executed(s.session);
    expect(result.stopReason).toBe("awaiting_approval");
    // The run ends as it suspends; the orchestrator hears of it as it unwinds.
    await flush();
    expect(thrown).toBeInstanceOf(AwaitingApprovalError);
    expect((thrown as AwaitingApprovalError).calls).toEqual([{ id: "b", name: "echo", args: { text: "b" } }]);
  });

  it("tells the orchestrator which calls wait for their client (suspend mode), and only those", async () => {
    const page = defineTool({
      name: "page",
      description: "Runs in the page",
      inputSchema: z.object({ text: z.string() }),
      execution: "client",
    });
    let thrown: unknown;
    const catching = orchestrator(async (ctx) => {
      ctx.messages.append(assistantCalling([call("a"), { id: "p", name: "page", args: { text: "p" } }]));
      await ctx.executeTools([call("a"), { id: "p", name: "page", args: { text: "p" } }]).catch((error) => {
        thrown = error;
      });
    });
    const s = sessionOf(
      { orchestrator: catching },
      { setup: { clientToolMode: "suspend", tools: new ToolRegistry([echoTool, page]) } },
    );
    const result = await executed(s.session);
    expect(result.stopReason).toBe("awaiting_client_tool");
    expect(thrown).toBeInstanceOf(AwaitingClientToolError);
    expect((thrown as AwaitingClientToolError).calls).toEqual([
      { id: "p", name: "page", args: { text: "p" } },
    ]);
  });

  it("an abort that came while the batch asked for approval wins: aborted, the call answered, nothing pending", async () => {
    let s: ReturnType<typeof sessionOf> | undefined;
    const beforeToolCall = async () => {
      s?.setup.abortScope.abort("user pressed stop");
      return { requireApproval: true as const };
    };
    s = sessionOf(
      { orchestrator: oneTurn },
      { replies: [callsReply([call("a")])], setup: { hooks: { beforeToolCall } } },
    );
    const result = await executed(s.session);
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeInstanceOf(AbortedError);
    expect(result.pendingApprovals).toBeUndefined();
    expect(s.session.suspension).toBeUndefined();
    expect(s.keeper.openCalls).toEqual([]);
    const events = trace(s.events);
    expect(events).toContain("tool_result:a");
    expect(events.slice(-2)).toEqual(["error", "agent_end"]);
  });

  it("a run that suspended is not failed by an abort that comes after", async () => {
    let s: ReturnType<typeof sessionOf> | undefined;
    const asking = orchestrator(async (ctx) => {
      const reply = await ctx.decide();
      try {
        await ctx.executeTools(reply.mode === "steer" ? reply.toolCalls : []);
      } finally {
        s?.setup.abortScope.abort("too late");
      }
    });
    s = sessionOf(
      { orchestrator: asking },
      {
        replies: [callsReply([call("a")])],
        setup: { hooks: { beforeToolCall: () => ({ requireApproval: true as const }) } },
      },
    );
    const result = await executed(s.session);
    expect(result.stopReason).toBe("awaiting_approval");
    expect(result.error).toBeUndefined();
  });

  it("reports an orchestrator that fails with a plain error after the abort as aborted", async () => {
    const listening = orchestrator(
      (ctx) =>
        new Promise<void>((_resolve, reject) =>
          ctx.signal.addEventListener("abort", () => reject(new Error("socket closed"))),
        ),
    );
    const s = sessionOf({ orchestrator: listening });
    const running = executed(s.session);
    s.setup.abortScope.abort("user pressed stop");
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeInstanceOf(AbortedError);
  });

  it("resumes a batch with steering left queued: every approved call runs", async () => {
    const history = [user("go"), assistantCalling([call("a", "steerer"), call("b")])];
    const looking = orchestrator(async () => {});
    const s = sessionOf(
      {
        orchestrator: looking,
        resume: {
          suspension: {
            calls: [call("a", "steerer"), call("b")],
            waits: new Map([["a", { kind: "approval" as const }]]),
          },
          decisions: new Map([["a", { approved: true }]]),
          results: new Map(),
        },
      },
      { history, setup: { tools: tools(() => s) } },
    );
    const result = await executed(s.session);
    expect(result.newMessages.flatMap((m) => ("status" in m ? [m.status] : []))).toEqual(["ok", "ok"]);
  });

  it("a resumed batch that waits again ends the run as awaiting_approval, without the orchestrator", async () => {
    const history = [user("go"), assistantCalling([call("a"), call("b")])];
    const beforeToolCall = ({ call }: { call: { id: string } }) =>
      call.id === "b" ? { requireApproval: true as const } : undefined;
    const never = orchestrator(async () => {});
    const s = sessionOf(
      {
        orchestrator: never,
        resume: {
          suspension: {
            calls: [call("a"), call("b")],
            waits: new Map([["a", { kind: "approval" as const }]]),
          },
          decisions: new Map([["a", { approved: true }]]),
          results: new Map(),
        },
      },
      { history, setup: { hooks: { beforeToolCall } } },
    );
    const result = await executed(s.session);
    expect(never.runs).toBe(0);
    expect(result.stopReason).toBe("awaiting_approval");
    expect(result.pendingApprovals?.map((p) => p.toolCallId)).toEqual(["b"]);
  });

  it("does not queue again the steering an orchestrator took and put into the history", async () => {
    const delivering = orchestrator(async (ctx) => {
      ctx.messages.append(...(await ctx.steering.take()));
    });
    const s = sessionOf({ orchestrator: delivering });
    s.steeringQueue.push("steer", 2);
    const result = await executed(s.session);
    expect(result.requeued).toBeUndefined();
    expect(s.steeringQueue.size).toBe(0);
    expect(result.newMessages.map((m) => m.role === "user" && m.content)).toEqual(["hi", "steer"]);
  });

  it("gives the orchestrator the agent's container, the length of the history, and checks its events", async () => {
    const seen: unknown[] = [];
    const looking = orchestrator(async (ctx) => {
      seen.push(ctx.container, ctx.messages.length);
      expect(() => ctx.emit({ type: "never_registered" } as never)).toThrow(InvalidEventError);
    });
    const s = sessionOf({ orchestrator: looking });
    const result = await executed(s.session);
    expect(result.stopReason).toBe("completed");
    expect(seen).toEqual([s.setup.owner.container, 1]);
  });

  it("hands the orchestrator the history as a frozen copy: it cannot edit the history, only append", async () => {
    let first: readonly AgentMessage[] = [];
    let again: readonly AgentMessage[] = [];
    const editing = orchestrator(async (ctx) => {
      first = ctx.messages.all;
      expect(() => (ctx.messages.all as AgentMessage[]).pop()).toThrow(TypeError);
      again = ctx.messages.all;
      ctx.messages.append(user("noted"));
    });
    const s = sessionOf({ orchestrator: editing });
    const result = await executed(s.session);
    expect(again).toBe(first);
    expect(first.map((m) => m.role)).toEqual(["user"]);
    expect(result.messages.map((m) => (m as { content: string }).content)).toEqual(["hi", "noted"]);
  });

  it("ends a turn left open with an empty answer saying why the run stopped", async () => {
    const stopReasonOf = async (run: (ctx: RunContext) => Promise<void>, abort = false) => {
      const s = sessionOf({ orchestrator: orchestrator(run) });
      const running = executed(s.session);
      if (abort) s.setup.abortScope.abort("stop");
      await running;
      return eventsOf(s.events, "turn_end")[0]?.message.stopReason;
    };
    expect(await stopReasonOf(async (ctx) => void ctx.startTurn())).toBe("stop");
    expect(
      await stopReasonOf(async (ctx) => {
        ctx.startTurn();
        throw new Error("broken");
      }),
    ).toBe("error");
    expect(
      await stopReasonOf(async (ctx) => {
        ctx.startTurn();
        await new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", reject));
      }, true),
    ).toBe("aborted");
  });

  it("leaves no grace timer behind when the run stops at the abort, before the grace period ends", async () => {
    vi.useFakeTimers();
    // One orchestrator fails at the abort, the other returns.
    for (const settle of ["reject", "resolve"] as const) {
      const listening = orchestrator(
        (ctx) =>
          new Promise<void>((resolve, reject) =>
            ctx.signal.addEventListener("abort", () =>
              settle === "reject" ? reject(ctx.signal.reason) : resolve(),
            ),
          ),
      );
      const s = sessionOf({ orchestrator: listening });
      const running = executed(s.session);
      s.setup.abortScope.abort("user pressed stop");
      expect((await running).stopReason).toBe("aborted");
      // A timer left running would keep the process alive for abortGraceMs after the run.
      expect(vi.getTimerCount()).toBe(0);
    }
  });
});
