import "@agent-core/agentic";
import { runInNewContext } from "node:vm";
import {
  AbortedError,
  Agent,
  AgentError,
  type AgentEvent,
  type AgentRun,
  type AssistantMessage,
  defineEventSchema,
  defineTool,
  EVENT_SINK,
  InvalidEventError,
  InvalidHistoryError,
  type Orchestrator,
  ReservedEventError,
  type RunContext,
  type RunResult,
  registerEventSchema,
  type StopReason,
  type ToolBatchResult,
  type ToolCall,
  type ToolResultMessage,
  validateTranscript,
} from "@agent-core/core";
import { assertEventProtocol, eventsOf, script, scriptedModel } from "@agent-core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { add } from "./fixtures.js";

/**
 * Orchestrators that misuse the contract: whatever a plug-in does, the run settles, its events
 * keep the protocol and the history stays valid (the promise of docs/writing-an-orchestrator.md).
 */

function plugin(run: (ctx: RunContext) => Promise<void> | void, name = "misuse"): Orchestrator {
  return { name, run: run as (ctx: RunContext) => Promise<void> };
}

/** The run's result, or a rejection when it does not settle within `ms`. */
function settled(run: AgentRun, ms = 2000): Promise<RunResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`result() did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([run.result(), late]).finally(() => clearTimeout(timer));
}

/** Checks what every run must keep, and returns its result. */
async function kept(run: AgentRun): Promise<RunResult> {
  const result = await settled(run);
  assertEventProtocol(run.events);
  expect(validateTranscript(result.messages)).toEqual([]);
  return result;
}

/**
 * "charge": a tool that counts its runs (a side effect: a payment, an email), takes `ms` and
 * ignores its abort signal.
 */
function charging(ms: number) {
  const runs: string[] = [];
  const tool = defineTool({
    name: "charge",
    description: "Charges a card",
    inputSchema: z.object({ amount: z.number() }),
    execute: async ({ amount }) => {
      runs.push(String(amount));
      await new Promise((resolve) => setTimeout(resolve, ms));
      return "charged";
    },
  });
  return { runs, tool };
}

describe("a thrown value that instanceof cannot inspect", () => {
  const hostile = {
    "a Proxy whose prototype trap throws": () =>
      new Proxy(
        {},
        {
          getPrototypeOf() {
            throw new Error("trap");
          },
        },
      ),
    "a revoked Proxy": () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    },
  };
  for (const [label, make] of Object.entries(hostile)) {
    it(`${label}, thrown by the orchestrator, ends the run as orchestrator_error`, async () => {
      const agent = new Agent({
        orchestrator: plugin(async () => {
          throw make();
        }),
      });
      const result = await kept(agent.prompt("hi"));
      expect(result.stopReason).toBe("error");
      expect(result.error?.code).toBe("orchestrator_error");
      // The agent takes the next prompt.
      expect((await settled(agent.prompt("again"))).stopReason).toBe("error");
    });

    it(`${label}, given as the abort reason, ends the run as aborted`, async () => {
      const agent = new Agent({ orchestrator: plugin(() => new Promise<void>(() => {})) });
      const run = agent.prompt("hi");
      run.abort(make());
      const result = await kept(run);
      expect(result.stopReason).toBe("aborted");
      expect(result.error?.code).toBe("aborted");
    });
  }
});

describe("an AgentError that cannot end the run as it says", () => {
  const made = {
    "a stop reason of no run": () =>
      new AgentError("mine", "made up", { stopReason: "finished" as StopReason }),
    "a suspension's stop reason, with no batch suspended": () =>
      new AgentError("mine", "made up", { stopReason: "awaiting_approval" }),
    "a code that is no text": () => Object.assign(new AgentError("mine", "made up"), { code: 42 }),
  };
  for (const [label, make] of Object.entries(made)) {
    it(`${label}, thrown by the orchestrator, ends the run as orchestrator_error`, async () => {
      const agent = new Agent({
        orchestrator: plugin(async () => {
          throw make();
        }),
      });
      const result = await kept(agent.prompt("hi"));
      expect(result).toMatchObject({ stopReason: "error", error: { code: "orchestrator_error" } });
      expect(result.error?.message).toBe('Orchestrator "misuse" failed: made up');
      expect(result.pendingApprovals).toBeUndefined();
    });

    it(`${label}, given as the abort reason, ends the run as aborted`, async () => {
      const agent = new Agent({ orchestrator: plugin(() => new Promise<void>(() => {})) });
      const run = agent.prompt("hi");
      run.abort(make());
      const result = await kept(run);
      expect(result).toMatchObject({ stopReason: "aborted", error: { code: "aborted" } });
    });
  }

  it("one that ends the run as completed is a requested stop: no error event, no result.error", async () => {
    const agent = new Agent({
      orchestrator: plugin(async () => {
        throw new AgentError("mine", "enough", { stopReason: "completed" });
      }),
    });
    const run = agent.prompt("hi");
    const result = await kept(run);
    expect(result.stopReason).toBe("completed");
    expect(result.error).toBeUndefined();
    expect(eventsOf(run.events, "error")).toEqual([]);
  });

  /** An AgentError whose `field` answers `first` when read first, and throws on every later read. */
  function changingOnRead(field: "code" | "message" | "stopReason", first: string): AgentError {
    const error = new AgentError("mine", "made up");
    let reads = 0;
    Object.defineProperty(error, field, {
      get() {
        if (++reads === 1) return first;
        throw new Error(`${field} read again`);
      },
    });
    return error;
  }

  for (const field of ["code", "message", "stopReason"] as const)
    it(`one whose ${field} changes after its first read still ends the run, as that first read said`, async () => {
      const first = field === "stopReason" ? "error" : `first ${field}`;
      const agent = new Agent({
        orchestrator: plugin(async () => {
          throw changingOnRead(field, first);
        }),
      });
      const run = agent.prompt("hi");
      const result = await kept(run);
      expect(result.stopReason).toBe("error");
      const reported = { code: "mine", message: "made up", [field]: first };
      expect(eventsOf(run.events, "error")).toMatchObject([
        { code: reported.code, message: reported.message },
      ]);
      // The agent takes the next prompt (which fails the same way).
      expect((await settled(agent.prompt("again"))).stopReason).toBe("error");
    });
});

describe("executeTools runs only the calls of the history still waiting for their result, each once", () => {
  const counting = () => charging(5);

  /** Runs `misuse` after a first model call that asks for one charge; returns what it threw. */
  async function misusing(misuse: (ctx: RunContext, calls: ToolCall[]) => Promise<unknown>) {
    const { runs, tool } = counting();
    let thrown: unknown;
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("charge", { amount: 5 }, { id: "c1" })],
        [script.toolCall("charge", { amount: 7 }, { id: "c2" })],
      ]),
      tools: [tool],
      orchestrator: plugin(async (ctx) => {
        const decision = await ctx.decide();
        if (decision.mode !== "steer") throw new Error("expected a call");
        try {
          await misuse(ctx, decision.toolCalls);
        } catch (error) {
          thrown = error;
        }
      }),
    });
    const run = agent.prompt("pay");
    const result = await kept(run);
    return { runs, thrown, result, run };
  }

  it("a call the orchestrator made up is refused before its tool runs", async () => {
    const { runs, thrown, run } = await misusing((ctx) =>
      ctx.executeTools([{ id: "made-up", name: "charge", args: { amount: 1 } }]),
    );
    expect(thrown).toBeInstanceOf(InvalidHistoryError);
    expect((thrown as Error).message).toMatch(/"made-up" is not a call of the history/);
    expect(runs).toEqual([]);
    expect(eventsOf(run.events, "tool_call").map((e) => e.toolCallId)).toEqual(["c1"]);
  });

  it("a call that already has its result is not run again", async () => {
    const { runs, thrown, result } = await misusing(async (ctx, calls) => {
      await ctx.executeTools(calls);
      await ctx.executeTools(calls);
    });
    expect(thrown).toBeInstanceOf(InvalidHistoryError);
    expect(runs).toEqual(["5"]);
    expect(result.messages.filter((m) => m.role === "toolResult")).toHaveLength(1);
  });

  it("two batches at once with the same call run it once", async () => {
    const { runs, thrown } = await misusing((ctx, calls) =>
      Promise.all([ctx.executeTools(calls), ctx.executeTools(calls)]),
    );
    expect(thrown).toBeInstanceOf(InvalidHistoryError);
    expect((thrown as Error).message).toMatch(/already running in another executeTools\(\) batch/);
    expect(runs).toEqual(["5"]);
  });

  it("the same call twice in one batch runs once", async () => {
    const { runs, thrown } = await misusing((ctx, calls) => ctx.executeTools([...calls, ...calls]));
    expect((thrown as Error).message).toMatch(/given twice/);
    expect(runs).toEqual([]);
  });

  it("a call whose id or tool the orchestrator changed is refused; the model's call is answered at the end", async () => {
    const renamed = await misusing((ctx, calls) =>
      ctx.executeTools(calls.map((call) => ({ ...call, id: "changed" }))),
    );
    const retargeted = await misusing((ctx, calls) =>
      ctx.executeTools(calls.map((call) => ({ ...call, name: "refund" }))),
    );
    for (const { runs, thrown, result } of [renamed, retargeted]) {
      expect(thrown).toBeInstanceOf(InvalidHistoryError);
      expect(runs).toEqual([]);
      expect(result.messages.at(-1)).toMatchObject({ role: "toolResult", toolCallId: "c1", status: "error" });
    }
  });

  it("a call whose arguments the orchestrator changed is refused: the model never made it", async () => {
    const { runs, thrown, result, run } = await misusing((ctx, calls) =>
      ctx.executeTools(calls.map((call) => ({ ...call, args: { amount: 5000 } }))),
    );
    expect(thrown).toBeInstanceOf(InvalidHistoryError);
    expect(runs).toEqual([]);
    // Only the model's call is announced: the run's end answers it.
    expect(eventsOf(run.events, "tool_call").map((event) => event.args)).toEqual([{ amount: 5 }]);
    expect(result.messages.at(-1)).toMatchObject({ role: "toolResult", toolCallId: "c1", status: "error" });
  });

  it("a call given with a copy of the model's arguments runs", async () => {
    const { runs, thrown } = await misusing((ctx, calls) =>
      ctx.executeTools(calls.map((call) => ({ ...call, args: structuredClone(call.args) }))),
    );
    expect(thrown).toBeUndefined();
    expect(runs).toEqual(["5"]);
  });

  it("the calls of an earlier reply, closed by the next one, are not run", async () => {
    const { runs, thrown } = await misusing(async (ctx, calls) => {
      await ctx.decide(); // its reply closes c1 with an error result
      await ctx.executeTools(calls);
    });
    expect(thrown).toBeInstanceOf(InvalidHistoryError);
    expect(runs).toEqual([]);
  });

  it("a call added to the array after executeTools() took it does not run", async () => {
    const { runs, thrown, result } = await misusing(async (ctx, calls) => {
      const mine = [...calls];
      const running = ctx.executeTools(mine);
      mine.push({ id: "later", name: "charge", args: { amount: 99 } });
      const renamed = mine[0] as ToolCall;
      mine[0] = { ...renamed, id: "renamed" };
      return running;
    });
    expect(thrown).toBeUndefined();
    expect(runs).toEqual(["5"]);
    expect(result.messages.at(-1)).toMatchObject({ role: "toolResult", toolCallId: "c1", status: "ok" });
  });

  it("a result appended for a call the batch is running is refused: the batch's result is the one", async () => {
    let refused: unknown;
    const { runs, thrown, result, run } = await misusing(async (ctx, calls) => {
      const running = ctx.executeTools(calls);
      try {
        ctx.messages.append({
          role: "toolResult",
          toolCallId: "c1",
          toolName: "charge",
          content: "mine",
          isError: false,
          status: "ok",
        });
      } catch (error) {
        refused = error;
      }
      return running;
    });
    expect(refused).toBeInstanceOf(InvalidHistoryError);
    expect(thrown).toBeUndefined();
    expect(runs).toEqual(["5"]);
    expect(result.messages.at(-1)).toMatchObject({
      role: "toolResult",
      toolCallId: "c1",
      content: "charged",
    });
    expect(eventsOf(run.events, "tool_result")).toHaveLength(1);
  });

  it("what is not a list of calls is refused with the same error", async () => {
    for (const bad of [null, "c1", [null], [{}], [{ id: 5, name: "charge" }]]) {
      const { thrown, runs } = await misusing((ctx) => ctx.executeTools(bad as never));
      expect(thrown).toBeInstanceOf(InvalidHistoryError);
      expect(runs).toEqual([]);
    }
  });
});

describe("a parallel batch whose orchestrator callback throws", () => {
  it("rejects once the calls already running have ended, and starts none after the error", async () => {
    const log: string[] = [];
    const tool = defineTool({
      name: "work",
      description: "Works for a while",
      inputSchema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        log.push(`start ${n}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        log.push(`end ${n}`);
        return n;
      },
    });
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("work", { n: 1 }),
          script.toolCall("work", { n: 2 }),
          script.toolCall("work", { n: 3 }),
        ],
      ]),
      tools: [tool],
      orchestrator: plugin(async (ctx) => {
        const decision = await ctx.decide();
        if (decision.mode !== "steer") return;
        const beforeEach = (call: ToolCall) => {
          if ((call.args as { n: number }).n === 2) throw new Error("before 2");
        };
        await ctx.executeTools(decision.toolCalls, { concurrency: 2, beforeEach }).catch((error: Error) => {
          log.push(`rejected: ${error.message}`);
        });
        // Trying again must not run call 1 a second time.
        await ctx.executeTools(decision.toolCalls, { concurrency: 2 }).catch(() => log.push("refused"));
      }),
    });
    const result = await kept(agent.prompt("work"));
    expect(log).toEqual(["start 1", "end 1", "rejected: before 2", "refused"]);
    expect(
      result.messages.filter((m) => m.role === "toolResult").map((m) => (m as { status: string }).status),
    ).toEqual(["ok", "error", "error"]);
  });
});

describe("executeTools options", () => {
  it("a concurrency that is not a number >= 1 (NaN, 0, -2) runs every call, one at a time", async () => {
    for (const concurrency of [Number.NaN, 0, -2]) {
      let results: unknown[] = [];
      const agent = new Agent({
        provider: scriptedModel([
          [script.toolCall("add", { a: 1, b: 2 }), script.toolCall("add", { a: 3, b: 4 })],
        ]),
        tools: [add],
        orchestrator: plugin(async (ctx) => {
          const decision = await ctx.decide();
          if (decision.mode === "steer")
            results = (await ctx.executeTools(decision.toolCalls, { concurrency })).results;
        }),
      });
      await kept(agent.prompt("add"));
      expect(results.map((result) => (result as { status: string } | undefined)?.status)).toEqual([
        "ok",
        "ok",
      ]);
    }
  });

  for (const [label, options, says] of [
    ["null", null, "expected an object of options, got null"],
    ["a beforeEach that is no function", { beforeEach: 5 }, "beforeEach must be a function, got number"],
    ["an afterEach that is no function", { afterEach: "log" }, "afterEach must be a function, got string"],
    ["a concurrency that is no number", { concurrency: "2" }, "concurrency must be a number, got string"],
    [
      "a misspelt option",
      { concurency: 2 },
      "concurency is not an option (known: concurrency, interruptOnSteering, beforeEach, afterEach)",
    ],
    [
      "an interruptOnSteering that is no boolean",
      { interruptOnSteering: "no" },
      "interruptOnSteering must be a boolean, got string",
    ],
  ] as const)
    it(`refuses ${label} with a TypeError saying so, before any tool runs`, async () => {
      const { tool, runs } = charging(0);
      let caught: unknown;
      const agent = new Agent({
        provider: scriptedModel([
          [script.toolCall("charge", { amount: 1 }), script.toolCall("charge", { amount: 2 })],
        ]),
        tools: [tool],
        orchestrator: plugin(async (ctx) => {
          const decision = await ctx.decide();
          if (decision.mode !== "steer") return;
          try {
            await ctx.executeTools(decision.toolCalls, options as never);
          } catch (error) {
            caught = error;
          }
        }),
      });
      await kept(agent.prompt("charge"));
      expect(caught).toBeInstanceOf(TypeError);
      expect((caught as Error).message).toBe(`ctx.executeTools() got invalid options: ${says}.`);
      expect(runs).toEqual([]);
    });

  // An async function passes for a hook returning void: the batch would not wait for it, and its
  // rejection would be unhandled (ending the process, by Node's default).
  for (const hook of ["beforeEach", "afterEach"] as const)
    it(`an async ${hook} fails the batch as a throwing one does, its rejection handled`, async () => {
      const unhandled: unknown[] = [];
      const listen = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", listen);
      try {
        const { tool, runs } = charging(0);
        const agent = new Agent({
          provider: scriptedModel([[script.toolCall("charge", { amount: 1 })]]),
          tools: [tool],
          orchestrator: plugin(async (ctx) => {
            const decision = await ctx.decide();
            if (decision.mode !== "steer") return;
            await ctx.executeTools(decision.toolCalls, {
              [hook]: async () => {
                throw new Error("the hook's own failure");
              },
            });
          }),
        });
        const result = await kept(agent.prompt("charge"));
        await new Promise((resolve) => setTimeout(resolve, 10));
        expect(result.stopReason).toBe("error");
        expect(result.error?.message).toContain(
          `ctx.executeTools()'s ${hook} returned a promise: the batch's hooks run synchronously`,
        );
        expect(runs.length).toBe(hook === "beforeEach" ? 0 : 1);
        expect(unhandled).toEqual([]);
      } finally {
        process.off("unhandledRejection", listen);
      }
    });
});

describe("a service call the orchestrator did not await", () => {
  const unhandled: unknown[] = [];
  const listen = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on("unhandledRejection", listen);
  });
  afterEach(() => {
    process.off("unhandledRejection", listen);
  });
  /** Long enough for a cancelled call to reject and Node to report it when nobody handles it. */
  const later = () => new Promise((resolve) => setTimeout(resolve, 50));

  const forgetful: Record<string, (ctx: RunContext, live?: boolean) => void> = {
    decide: (ctx) => void ctx.decide(),
    generateObject: (ctx) => void ctx.generateObject(z.object({ a: z.number() })),
    executeTools: (ctx, live = true) => {
      // After the run ended, the append would throw (synchronously); executeTools rejects.
      if (live)
        ctx.messages.append({
          role: "assistant",
          content: [{ type: "toolCall", id: "t1", name: "add", args: { a: 1, b: 2 } }],
        });
      void ctx.executeTools([{ id: "t1", name: "add", args: { a: 1, b: 2 } }]);
    },
  };
  for (const [service, forget] of Object.entries(forgetful)) {
    it(`ctx.${service}() is cancelled when the run ends, without an unhandled rejection`, async () => {
      const slowTool = defineTool({
        name: "add",
        description: "Adds slowly",
        inputSchema: z.object({ a: z.number(), b: z.number() }),
        execute: async ({ a, b }) => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          return a + b;
        },
      });
      const agent = new Agent({
        provider: scriptedModel([[script.delay(20), script.text('{"a":1}')], [script.text("next")]]),
        tools: [slowTool],
        orchestrator: plugin((ctx) => forget(ctx)),
      });
      const result = await kept(agent.prompt("hi"));
      expect(result.stopReason).toBe("completed");
      await later();
      expect(unhandled).toEqual([]);
    });

    it(`ctx.${service}() called after the run ended rejects, without an unhandled rejection`, async () => {
      let saved: RunContext | undefined;
      const agent = new Agent({
        orchestrator: plugin((ctx) => {
          saved = ctx;
        }),
      });
      await kept(agent.prompt("hi"));
      forget(saved as RunContext, false);
      await later();
      expect(unhandled).toEqual([]);
    });
  }

  it("an orchestrator that awaits the call still gets its error", async () => {
    let thrown: unknown;
    const agent = new Agent({
      provider: scriptedModel([[script.hang()]]),
      orchestrator: plugin(async (ctx) => {
        try {
          await ctx.decide();
        } catch (error) {
          thrown = error;
          throw error;
        }
      }),
    });
    const run = agent.prompt("hi");
    setTimeout(() => run.abort(), 10);
    expect((await kept(run)).stopReason).toBe("aborted");
    expect(thrown).toMatchObject({ code: "aborted" });
  });
});

/**
 * A run whose orchestrator emits each of `events`, keeping what `ctx.emit` refuses, then one valid
 * custom event; settled and checked as every run here.
 */
async function emitting(events: unknown[]): Promise<{ refused: unknown[]; run: AgentRun }> {
  const refused: unknown[] = [];
  const agent = new Agent({
    orchestrator: plugin(async (ctx) => {
      for (const event of events) {
        try {
          ctx.emit(event as never);
        } catch (error) {
          refused.push(error);
        }
      }
      ctx.emit({ type: "custom", name: "misuse.ok", data: { n: 1 } });
    }),
  });
  const run = agent.prompt("hi");
  await kept(run);
  return { refused, run };
}

describe("ctx.emit", () => {
  it("refuses an event that fails its type's schema, so the stream keeps the protocol", async () => {
    const { refused, run } = await emitting([
      { type: "custom" },
      { type: "custom", name: 5 },
      { type: "text_delta", text: 5 },
      { type: "thinking" },
      { type: "context_truncated" },
    ]);
    expect(refused).toHaveLength(5);
    for (const error of refused) expect(error).toBeInstanceOf(InvalidEventError);
    expect((refused[1] as Error).message).toMatch(/Invalid "custom" event:[\s\S]*name/);
    expect(run.events.map((event) => event.type)).toEqual(["agent_start", "custom", "agent_end"]);
  });

  it("refuses what is not an event, and names inherited property names as unknown types, not reserved ones", async () => {
    const { refused } = await emitting([
      null,
      undefined,
      "custom",
      { type: "toString" },
      { type: "__proto__" },
      { type: "turn_start" },
    ]);
    expect(refused).toHaveLength(6);
    expect(refused.slice(0, 5).every((error) => error instanceof InvalidEventError)).toBe(true);
    expect((refused[3] as Error).message).toMatch(/Unknown event type "toString"/);
    expect(refused[5]).toBeInstanceOf(ReservedEventError);
  });

  it("refuses, with InvalidEventError, an event that cannot be read (a getter or a proxy that throws)", async () => {
    const failure = new Error("getter");
    const { refused, run } = await emitting([
      Object.defineProperty({}, "type", {
        enumerable: true,
        get() {
          throw failure;
        },
      }),
      new Proxy(
        { type: "custom" },
        {
          ownKeys() {
            throw failure;
          },
        },
      ),
    ]);
    expect(refused).toHaveLength(2);
    for (const error of refused) {
      expect(error).toBeInstanceOf(InvalidEventError);
      expect((error as Error).message).toBe("ctx.emit()'s event could not be read: getter.");
      expect((error as Error).cause).toBe(failure);
    }
    expect(run.events.map((event) => event.type)).toEqual(["agent_start", "custom", "agent_end"]);
  });

  it("refuses, with InvalidEventError, an event whose registered schema throws or cannot parse synchronously", async () => {
    registerEventSchema(
      "misuse_throwing",
      defineEventSchema("misuse_throwing", {}).refine(() => {
        throw new Error("the check broke");
      }),
    );
    registerEventSchema(
      "misuse_async",
      defineEventSchema("misuse_async", {}).refine(async () => true),
    );
    const { refused, run } = await emitting([{ type: "misuse_throwing" }, { type: "misuse_async" }]);
    expect(refused).toHaveLength(2);
    for (const error of refused) expect(error).toBeInstanceOf(InvalidEventError);
    expect((refused[0] as Error).message).toBe(
      'The schema registered for "misuse_throwing" failed instead of judging the event: the check broke',
    );
    expect(run.events.map((event) => event.type)).toEqual(["agent_start", "custom", "agent_end"]);
  });

  it("publishes only the fields its type's schema describes: one it does not check cannot break a consumer", async () => {
    const { refused, run } = await emitting([
      { type: "custom", name: "misuse.extra", data: { n: 1 }, total: 10n },
      { type: "thinking", text: "hm", toJSON: () => JSON.parse("not json") },
    ]);
    expect(refused).toEqual([]);
    const [custom, thinking] = run.events.slice(1, 3);
    expect(custom).toEqual({ type: "custom", name: "misuse.extra", data: { n: 1 }, ...envelopeOf(custom) });
    expect(thinking).toEqual({ type: "thinking", text: "hm", ...envelopeOf(thinking) });
    // What was published serializes, as an HTTP stream and the durable log do.
    expect(() => JSON.stringify(run.events)).not.toThrow();
  });
});

describe("an orchestrator that emits from a listener of its own run's events", () => {
  it("has every consumer hear the run's events in seq order: the one it emits waits its turn", async () => {
    let context: RunContext | undefined;
    const agent = new Agent({
      provider: scriptedModel([[script.text("a", "b")]]),
      orchestrator: plugin(async (ctx) => {
        context = ctx;
        ctx.emit({ type: "custom", name: "misuse.first" });
        await ctx.decide();
      }),
    });
    const sink: number[] = [];
    agent.container.register(EVENT_SINK, { useValue: { publish: (event) => sink.push(event.seq) } });
    const first: number[] = [];
    const second: number[] = [];
    agent.on("*", (event) => {
      first.push(event.seq);
      // Progress of its own, told as the run goes: from inside the delivery of another event.
      if (event.type === "custom" && event.name === "misuse.first")
        context?.emit({ type: "custom", name: "misuse.second" });
      if (event.type === "text_delta") context?.emit({ type: "custom", name: "misuse.text" });
    });
    agent.on("*", (event) => second.push(event.seq));
    const run = agent.prompt("hi");
    await kept(run);
    const inOrder = run.events.map((event) => event.seq);
    expect(inOrder).toHaveLength(9);
    expect({ first, second, sink }).toEqual({ first: inOrder, second: inOrder, sink: inOrder });
  });

  it("cannot put an event between the run's error and agent_end: it is dropped", async () => {
    let context: RunContext | undefined;
    const agent = new Agent({
      provider: scriptedModel([[script.text("a")]]),
      orchestrator: plugin(async (ctx) => {
        context = ctx;
        await ctx.decide();
        throw new Error("the plug-in fails");
      }),
    });
    agent.on("error", () => context?.emit({ type: "custom", name: "misuse.farewell" }));
    const run = agent.prompt("hi");
    const result = await kept(run);
    expect(result.error?.code).toBe("orchestrator_error");
    expect(run.events.map((event) => event.type).slice(-2)).toEqual(["error", "agent_end"]);
    expect(eventsOf(run.events, "custom")).toEqual([]);
    expect(run.droppedEvents).toBe(1);
  });
});

const envelopeOf = (event: AgentEvent | undefined) => ({
  runId: event?.runId,
  seq: event?.seq,
  ts: event?.ts,
});

describe("ctx.emit of a custom event: data must be JSON, checked at emit", () => {
  class Money {
    toJSON() {
      return "5 EUR";
    }
  }
  const cyclic: { list: unknown[] } = { list: [] };
  cyclic.list.push(cyclic);
  const refused: [string, () => unknown, string][] = [
    ["a BigInt, deep", () => ({ a: { b: 10n } }), "data.a.b: BigInt is not JSON"],
    ["a BigInt as data", () => 5n, "data: BigInt is not JSON"],
    ["a cycle", () => cyclic, "data.list[0]: a cycle is not JSON (this is data again)"],
    ["a function", () => ({ f() {} }), "data.f: a function is not JSON"],
    ["a symbol", () => ({ s: Symbol("x") }), "data.s: a symbol is not JSON"],
    ["NaN", () => ({ n: Number.NaN }), "data.n: NaN is not JSON (JSON writes null)"],
    ["Infinity", () => [Number.POSITIVE_INFINITY], "data[0]: Infinity is not JSON (JSON writes null)"],
    ["-Infinity", () => ({ n: -Infinity }), "data.n: -Infinity is not JSON (JSON writes null)"],
    [
      "undefined in an array",
      () => [1, undefined],
      "data[1]: undefined in an array is not JSON (JSON writes null)",
    ],
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case
    ["a hole in an array", () => [, 1], "data[0]: undefined in an array is not JSON (JSON writes null)"],
    [
      "a Date",
      () => ({ at: new Date(0) }),
      "data.at: a Date is not JSON (only plain objects and arrays are: convert it first)",
    ],
    [
      "a class instance with toJSON, under a key that is not an identifier",
      () => ({ "total amount": new Money() }),
      'data["total amount"]: a Money is not JSON (only plain objects and arrays are: convert it first)',
    ],
    [
      "a Map",
      () => ({ m: new Map() }),
      "data.m: a Map is not JSON (only plain objects and arrays are: convert it first)",
    ],
    [
      "an Error",
      () => ({ e: new Error("x") }),
      "data.e: an Error is not JSON (only plain objects and arrays are: convert it first)",
    ],
    [
      "a getter that throws",
      () => ({
        a: {
          get x() {
            throw new Error("boom");
          },
        },
      }),
      "data.a.x: could not be read (boom)",
    ],
  ];
  for (const [label, data, why] of refused) {
    it(`refuses ${label} with InvalidEventError naming its path; the run goes on`, async () => {
      const { refused: thrown, run } = await emitting([
        { type: "custom", name: "misuse.data", data: data() },
      ]);
      expect(thrown).toHaveLength(1);
      expect(thrown[0]).toBeInstanceOf(InvalidEventError);
      expect((thrown[0] as Error).message).toBe(`Invalid "custom" event: ${why}.`);
      expect(run.events.map((event) => event.type)).toEqual(["agent_start", "custom", "agent_end"]);
      // What was published serializes, as an HTTP stream and the durable log do.
      expect(() => JSON.stringify(run.events)).not.toThrow();
    });
  }

  it("ends a run that does not catch the refusal with that error, its history valid", async () => {
    const agent = new Agent({
      orchestrator: plugin(async (ctx) => {
        ctx.emit({ type: "custom", name: "misuse.data", data: { a: { b: 10n } } });
      }),
    });
    const run = agent.prompt("hi");
    const result = await kept(run);
    expect(result.stopReason).toBe("error");
    expect(result.error).toBeInstanceOf(InvalidEventError);
    expect(result.error).toMatchObject({
      code: "invalid_event",
      message: 'Invalid "custom" event: data.a.b: BigInt is not JSON.',
    });
    expect(() => JSON.stringify(run.events)).not.toThrow();
  });

  it("publishes JSON data as it was given: plain and null-prototype objects, arrays, undefined properties, a shared object, no data", async () => {
    const shared = { k: "v" };
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { x: 1 });
    const fromAnotherRealm = runInNewContext("({ a: [1, { b: null }] })") as unknown;
    const data = {
      s: "x",
      n: -1.5,
      zero: 0,
      t: true,
      f: false,
      z: null,
      nested: { list: [1, "two", [null], {}] },
      skipped: undefined,
      first: shared,
      second: shared,
      bare,
      fromAnotherRealm,
    };
    const agent = new Agent({
      orchestrator: plugin(async (ctx) => {
        ctx.emit({ type: "custom", name: "ok.data", data });
        ctx.emit({ type: "custom", name: "ok.none" });
        ctx.emit({ type: "custom", name: "ok.string", data: "just text" });
      }),
    });
    const run = agent.prompt("hi");
    await kept(run);
    const custom = run.events.filter((event) => event.type === "custom");
    expect(custom.map((event) => event.name)).toEqual(["ok.data", "ok.none", "ok.string"]);
    // Handed out as given, and read the same after JSON (an undefined property is left out).
    expect(custom[0]?.data).toBe(data);
    expect(JSON.parse(JSON.stringify(custom[0]?.data))).toEqual(data);
    expect(custom[1]?.data).toBeUndefined();
    expect(custom[2]?.data).toBe("just text");
  });
});

describe("messages an orchestrator adds", () => {
  const malformed: Record<string, unknown> = {
    "an assistant message whose content is a string": { role: "assistant", content: "hello" },
    "a tool call without an id": {
      role: "assistant",
      content: [{ type: "toolCall", name: "add", args: {} }],
    },
    "a part of an unknown type": { role: "assistant", content: [{ type: "image", url: "x" }] },
    "a user message whose content is an object": { role: "user", content: { a: 1 } },
    "a tool result whose content is not text": {
      role: "toolResult",
      toolCallId: "t",
      toolName: "add",
      content: { a: 1 },
      isError: false,
      status: "ok",
    },
    "a message without a role": { content: "x" },
    "a number": 5,
    null: null,
  };
  for (const [label, message] of Object.entries(malformed)) {
    it(`refuses ${label}, in ctx.messages.append() and ctx.applySteering(), leaving the history valid`, async () => {
      const refused: unknown[] = [];
      const agent = new Agent({
        orchestrator: plugin(async (ctx) => {
          for (const add of [
            () => ctx.messages.append({ role: "user", content: "fine" }, message as never),
            () => ctx.applySteering(["fine", message as never]),
          ]) {
            try {
              add();
            } catch (error) {
              refused.push(error);
            }
          }
        }),
      });
      const result = await kept(agent.prompt("hi"));
      expect(refused).toHaveLength(2);
      for (const error of refused) expect(error).toBeInstanceOf(InvalidHistoryError);
      // Nothing of a refused call entered the history, and another agent takes it as it is.
      expect(result.messages).toEqual([expect.objectContaining({ role: "user", content: "hi" })]);
      expect(() => new Agent({ messages: result.messages })).not.toThrow();
    });
  }
});

describe("ctx.endTurn", () => {
  it("refuses what is not an assistant message, so turn_end keeps its schema", async () => {
    const refused: unknown[] = [];
    const agent = new Agent({
      orchestrator: plugin(async (ctx) => {
        ctx.startTurn();
        for (const junk of [
          null,
          {},
          { role: "assistant", content: "text" },
          { role: "user", content: "x" },
        ]) {
          try {
            ctx.endTurn(junk as never);
          } catch (error) {
            refused.push(error);
          }
        }
        ctx.endTurn({ role: "assistant", content: [{ type: "text", text: "done" }] });
      }),
    });
    const run = agent.prompt("hi");
    await kept(run);
    expect(refused).toHaveLength(4);
    for (const error of refused) expect(error).toBeInstanceOf(InvalidEventError);
    expect(eventsOf(run.events, "turn_end")).toHaveLength(1);
  });
});

describe("ctx.generateObject options", () => {
  const replies = () => scriptedModel(Array.from({ length: 6 }, () => [script.text('{"a":1}')]));

  it("a toolCallsOf that returns NaN, an infinite count or a numeric string still gives a valid steering_mode", async () => {
    const counts = [Number.NaN, Number.POSITIVE_INFINITY, "3", -2];
    const agent = new Agent({
      provider: replies(),
      orchestrator: plugin(async (ctx) => {
        for (const count of counts)
          await ctx.generateObject(z.object({ a: z.number() }), { toolCallsOf: () => count as number });
      }),
    });
    const run = agent.prompt("hi");
    await kept(run);
    expect(eventsOf(run.events, "steering_mode").map((e) => e.queueSize)).toEqual([0, 0, 3, 0]);
  });

  it("a toolCallsOf that throws fails the run, after the model call's steering_mode", async () => {
    const agent = new Agent({
      provider: replies(),
      orchestrator: plugin(async (ctx) => {
        await ctx.generateObject(z.object({ a: z.number() }), {
          toolCallsOf: () => {
            throw new Error("cannot count");
          },
        });
      }),
    });
    const run = agent.prompt("hi");
    const result = await kept(run);
    expect(result.error?.message).toMatch(/cannot count/);
    expect(eventsOf(run.events, "steering_mode")).toHaveLength(result.metrics.cycles);
  });

  it("maxAttempts: NaN counts as not given (two attempts), never as none", async () => {
    let object: unknown;
    const agent = new Agent({
      provider: scriptedModel([[script.text("not json")], [script.text('{"a":2}')]]),
      orchestrator: plugin(async (ctx) => {
        object = (await ctx.generateObject(z.object({ a: z.number() }), { maxAttempts: Number.NaN })).object;
      }),
    });
    expect((await kept(agent.prompt("hi"))).stopReason).toBe("completed");
    expect(object).toEqual({ a: 2 });
  });
});

describe("ctx.limits", () => {
  it("cannot be raised by the orchestrator: maxCycles holds for this run and the next", async () => {
    let refused: unknown;
    const agent = new Agent({
      provider: scriptedModel(Array.from({ length: 6 }, () => [script.text("again")])),
      limits: { maxCycles: 2 },
      orchestrator: plugin(async (ctx) => {
        try {
          (ctx.limits as { maxCycles: number }).maxCycles = 100;
        } catch (error) {
          refused = error;
        }
        for (;;) await ctx.decide();
      }),
    });
    const result = await kept(agent.prompt("loop"));
    expect(refused).toBeInstanceOf(TypeError);
    expect(result.stopReason).toBe("max_cycles");
    expect(result.metrics.cycles).toBe(2);
    expect((await kept(agent.prompt("again"))).metrics.cycles).toBe(2);
  });
});

describe("an orchestrator that retries whatever a call throws (but an abort)", () => {
  /**
   * The naive retry loop: any error but an `AbortedError` is tried again, up to `attempts` times.
   * A refusal that came back within microtasks made it spin without the event loop ever turning:
   * no timer (the grace period, `totalMs`, the app's own) could fire, and the process froze.
   */
  function retrying(attempts: number) {
    const seen = { retries: 0, refusals: new Set<string>() };
    const orchestrator = plugin(async (ctx) => {
      for (;;) {
        try {
          const decision = await ctx.decide();
          if (decision.mode === "respond") return;
          await ctx.executeTools(decision.toolCalls);
        } catch (error) {
          if (error instanceof AbortedError) throw error;
          seen.refusals.add((error as Error).constructor.name);
          if (++seen.retries >= attempts) throw new Error(`gave up after ${attempts} tries`);
        }
      }
    }, "retrying");
    return { seen, orchestrator };
  }

  it("past maxCycles, the event loop goes on, and the run ends max_cycles within the grace period", async () => {
    const { seen, orchestrator } = retrying(10_000);
    const model = scriptedModel([[script.toolCall("add", { a: 1, b: 2 })], [script.text("never")]]);
    const agent = new Agent({ provider: model, tools: [add], orchestrator, limits: { maxCycles: 1 } });
    let ticked = false;
    setTimeout(() => {
      ticked = true;
    }, 1);
    const result = await kept(agent.prompt("add"));
    expect(result.stopReason).toBe("max_cycles");
    expect(model.doStreamCalls).toHaveLength(1);
    expect(ticked).toBe(true);
    expect([...seen.refusals]).toEqual(["MaxCyclesExceededError"]);
    expect(seen.retries).toBeLessThan(10_000);
  });

  it("when shouldStop says stop, the run ends completed within the grace period", async () => {
    const { seen, orchestrator } = retrying(10_000);
    const model = scriptedModel([[script.toolCall("add", { a: 1, b: 2 })], [script.text("never")]]);
    const agent = new Agent({ provider: model, tools: [add], orchestrator, shouldStop: () => true });
    const result = await kept(agent.prompt("add"));
    expect(result.stopReason).toBe("completed");
    expect(result.error).toBeUndefined();
    expect(model.doStreamCalls).toHaveLength(1);
    expect([...seen.refusals]).toEqual(["StopRequestedError"]);
    expect(seen.retries).toBeLessThan(10_000);
  });

  it("once a batch found the run stalled, the model is not called again: the run ends stalled within the grace period", async () => {
    const { seen, orchestrator } = retrying(10_000);
    const again = [script.toolCall("add", { a: 1, b: 2 })];
    const model = scriptedModel([again, again, again, again, again]);
    const agent = new Agent({ provider: model, tools: [add], orchestrator });
    const result = await kept(agent.prompt("add"));
    expect(result.stopReason).toBe("stalled");
    expect(result.error?.code).toBe("stalled");
    expect(model.doStreamCalls).toHaveLength(3);
    expect([...seen.refusals]).toEqual(["StallError"]);
  });

  it("a refused executeTools() lets timers run too: agent.abort() from a timer ends the run", async () => {
    const looping = plugin(async (ctx) => {
      const decision = await ctx.decide();
      if (decision.mode === "respond") return;
      // Calls the model never made, refused each time (InvalidHistoryError), retried.
      const madeUp = [{ id: "made-up", name: "add", args: { a: 1, b: 1 } }];
      for (let tries = 0; tries < 10_000; tries++)
        try {
          await ctx.executeTools(madeUp);
        } catch (error) {
          if (error instanceof AbortedError) throw error;
        }
      throw new Error("gave up after 10000 tries");
    }, "looping");
    const model = scriptedModel([[script.toolCall("add", { a: 1, b: 2 })], [script.text("never")]]);
    const agent = new Agent({ provider: model, tools: [add], orchestrator: looping });
    const run = agent.prompt("add");
    setTimeout(() => agent.abort(), 5);
    const result = await kept(run);
    expect(result.stopReason).toBe("aborted");
  });
});

describe("turns the plug-in leaves unbalanced (writing-an-orchestrator.md)", () => {
  it("endTurn with no turn open, or a second time, does nothing; a turn left open ends with the run", async () => {
    const model = scriptedModel([[script.text("one")], [script.text("two")]]);
    const agent = new Agent({
      provider: model,
      orchestrator: plugin(async (ctx) => {
        const first = await ctx.decide({ tools: false });
        ctx.endTurn(first.message);
        ctx.startTurn();
        ctx.endTurn(first.message);
        ctx.endTurn(first.message);
        ctx.startTurn();
        await ctx.decide({ tools: false });
      }),
    });
    const run = agent.prompt("hi");
    const result = await kept(run);
    expect(result.stopReason).toBe("completed");
    expect(run.events.map((e) => e.type).filter((type) => type.startsWith("turn_"))).toEqual([
      "turn_start",
      "turn_end",
      "turn_start",
      "turn_end",
    ]);
    expect(eventsOf(run.events, "turn_end").map((e) => e.message.content)).toEqual([
      [{ type: "text", text: "one" }],
      [{ type: "text", text: "two" }],
    ]);
  });
});

/** An assistant message with a call `m1` of the add tool: made up by the orchestrator, as a worked example. */
const madeUpCall: AssistantMessage = {
  role: "assistant",
  content: [{ type: "toolCall", id: "m1", name: "add", args: { a: 1, b: 2 } }],
};
const resultOf = (toolCallId: string): ToolResultMessage => ({
  role: "toolResult",
  toolCallId,
  toolName: "add",
  content: "3",
  isError: false,
  status: "ok",
});

describe("ctx.decide() and ctx.generateObject() options", () => {
  const refusals: [string, unknown, string][] = [
    ["not an object", 42, "expected an object of options, got number"],
    ["null", null, "expected an object of options, got null"],
    ["a system prompt that is no string", { system: 42 }, "system must be a string, got number"],
    ["settings that are no object", { settings: "fast" }, "settings must be an object of model settings"],
    [
      "messages that are no array",
      { messages: "check again" },
      "messages must be an array of messages, got string",
    ],
    ["a message that is no message", { messages: [{ role: "user" }] }, "messages[0] is no message: content:"],
    [
      "a message of the app's own kind",
      { messages: [{ role: "note", text: "x" }] },
      'messages[0] has role "note": the model takes user, assistant and toolResult messages',
    ],
    [
      "a tool call without its result",
      { messages: [madeUpCall] },
      'messages must give each tool call its result, and each result its call: message 0: tool call(s) "m1" have no result before the next message',
    ],
    [
      "a result of no call",
      { messages: [resultOf("m1")] },
      'messages must give each tool call its result, and each result its call: message 0: tool result "m1" answers no pending tool call',
    ],
  ];
  const generateObjectOnly: [string, unknown, string][] = [
    ["a toolCallsOf that is no function", { toolCallsOf: 3 }, "toolCallsOf must be a function, got number"],
    ["a name that is no string", { name: 5 }, "name must be a string, got number"],
    ["a description that is no string", { description: {} }, "description must be a string, got object"],
    ["a maxAttempts that is no number", { maxAttempts: "3" }, "maxAttempts must be a number, got string"],
    [
      "a misspelt option",
      { maxAttempt: 3 },
      "maxAttempt is not an option (known: system, messages, name, description, maxAttempts, settings, toolCallsOf)",
    ],
  ];
  const decideOnly: [string, unknown, string][] = [
    ["an unregistered tool name", { tools: ["add", "nope"] }, "tools names no registered tool: nope"],
    ["tools that are no array", { tools: "add" }, "tools must be false or an array of tool names"],
    [
      "a misspelt option",
      { sytem: "x" },
      "sytem is not an option (known: system, tools, settings, messages)",
    ],
  ];

  for (const [label, options, says] of [...refusals, ...decideOnly]) {
    it(`ctx.decide() refuses ${label} with a TypeError saying so, before any model call`, async () => {
      const model = scriptedModel([[script.text("unused")]]);
      let caught: unknown;
      const agent = new Agent({
        provider: model,
        tools: [add],
        orchestrator: plugin(async (ctx) => {
          try {
            await ctx.decide(options as never);
          } catch (error) {
            caught = error;
          }
        }),
      });
      const result = await kept(agent.prompt("hi"));
      expect(caught).toBeInstanceOf(TypeError);
      expect((caught as Error).message).toContain(`ctx.decide() got invalid options: ${says}`);
      expect(model.doStreamCalls).toHaveLength(0);
      expect(result.stopReason).toBe("completed");
    });
  }

  for (const [label, options, says] of [...refusals, ...generateObjectOnly]) {
    it(`ctx.generateObject() refuses ${label} with a TypeError saying so, before any model call`, async () => {
      const model = scriptedModel([[script.text('{"a":1}')]]);
      const agent = new Agent({
        provider: model,
        orchestrator: plugin(async (ctx) => {
          await ctx.generateObject(z.object({ a: z.number() }), options as never);
        }),
      });
      const result = await kept(agent.prompt("hi"));
      expect(result.stopReason).toBe("error");
      expect(result.error?.message).toContain(`ctx.generateObject() got invalid options: ${says}`);
      expect(model.doStreamCalls).toHaveLength(0);
    });
  }

  for (const [label, schema] of [
    ["a JSON Schema", { type: "object" }],
    ["an empty object", {}],
    ["undefined", undefined],
    ["a string", "object"],
  ] as const)
    it(`ctx.generateObject() refuses ${label} as its schema with a TypeError saying so, before any model call`, async () => {
      const model = scriptedModel([[script.text('{"a":1}')]]);
      const agent = new Agent({
        provider: model,
        orchestrator: plugin(async (ctx) => {
          await ctx.generateObject(schema as never);
        }),
      });
      const result = await kept(agent.prompt("hi"));
      expect(result.stopReason).toBe("error");
      expect(result.error?.message).toContain(
        "ctx.generateObject() takes a zod schema as its first argument",
      );
      expect(model.doStreamCalls).toHaveLength(0);
    });

  it("takes what the contract allows: a tool subset, no tools, a system prompt, settings and messages", async () => {
    const model = scriptedModel([[script.text("one")], [script.text("two")]]);
    const agent = new Agent({
      provider: model,
      tools: [add],
      orchestrator: plugin(async (ctx) => {
        await ctx.decide({
          tools: ["add"],
          system: "Be brief.",
          settings: { temperature: 0 },
          messages: [madeUpCall, resultOf("m1"), { role: "user", content: "Check your answer." }],
        });
        await ctx.decide({ tools: false });
      }),
    });
    const result = await kept(agent.prompt("hi"));
    expect(result.stopReason).toBe("completed");
    expect(model.doStreamCalls.map((call) => call.tools?.map((tool) => tool.name))).toEqual([
      ["add"],
      undefined,
    ]);
    expect(model.doStreamCalls[0]?.temperature).toBe(0);
  });
});

describe("the history moves on only past calls that are not running", () => {
  /** A run whose first reply asks for one charge (`c1`) and whose orchestrator then does `after`. */
  async function chargingRun(
    after: (ctx: RunContext, calls: ToolCall[]) => Promise<void>,
    options: { ms?: number; abortGraceMs?: number } = {},
  ) {
    const { runs, tool } = charging(options.ms ?? 5);
    const model = scriptedModel([
      [script.toolCall("charge", { amount: 5 }, { id: "c1" })],
      [script.text("Charged.")],
      [script.text("Once more.")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [tool],
      limits: { abortGraceMs: options.abortGraceMs ?? 200 },
      orchestrator: plugin(async (ctx) => {
        const decision = await ctx.decide();
        if (decision.mode !== "steer") throw new Error("expected a call");
        await after(ctx, decision.toolCalls);
      }),
    });
    const run = agent.prompt("pay");
    const result = await kept(run);
    return { runs, result, run, model };
  }

  const c1Result = (result: RunResult) =>
    result.messages.find((message) => message.role === "toolResult" && message.toolCallId === "c1");

  const movesOn: Record<string, (ctx: RunContext) => Promise<unknown> | unknown> = {
    "ctx.decide()": (ctx) => ctx.decide(),
    "ctx.generateObject()": (ctx) => ctx.generateObject(z.object({ a: z.number() })),
    "ctx.messages.append() of a user message": (ctx) =>
      ctx.messages.append({ role: "user", content: "And a receipt." }),
    "ctx.applySteering()": (ctx) => ctx.applySteering(["And a receipt."]),
  };
  for (const [service, moveOn] of Object.entries(movesOn))
    it(`${service} while a batch runs the call is refused before anything changes; the call's result lands`, async () => {
      let refused: unknown;
      const { runs, result, model, run } = await chargingRun(async (ctx, calls) => {
        const running = ctx.executeTools(calls);
        try {
          await moveOn(ctx);
        } catch (error) {
          refused = error;
        }
        await running;
      });
      expect(refused).toBeInstanceOf(InvalidHistoryError);
      expect((refused as Error).message).toMatch(
        /tool call "c1" is still running in an executeTools\(\) batch/,
      );
      expect(runs).toEqual(["5"]);
      expect(c1Result(result)).toMatchObject({ status: "ok", content: "charged" });
      expect(result.messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
      expect(model.doStreamCalls).toHaveLength(1);
      expect(eventsOf(run.events, "tool_call")).toHaveLength(1);
    });

  it("a model call answers the calls left without a result first: the model never sees a call without its result", async () => {
    const { runs, result, model } = await chargingRun(async (ctx) => {
      await ctx.decide();
    });
    expect(runs).toEqual([]);
    const prompt = model.prompts[1] ?? [];
    expect(prompt.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    expect(prompt[2]?.content).toMatchObject([
      {
        type: "tool-result",
        toolCallId: "c1",
        output: { type: "error-text", value: "not completed: the run went on without its result" },
      },
    ]);
    expect(c1Result(result)).toMatchObject({ status: "error" });
  });

  it("an orchestrator that returns while its batch runs: the run ends once the batch settled, and a call that finished keeps its result", async () => {
    const { runs, result } = await chargingRun(
      async (ctx, calls) => {
        void ctx.executeTools(calls);
      },
      { ms: 5, abortGraceMs: 200 },
    );
    expect(result.stopReason).toBe("completed");
    expect(runs).toEqual(["5"]);
    expect(c1Result(result)).toMatchObject({ status: "ok", content: "charged" });
  });

  it("... and waits no longer than the grace period for a tool that ignores the abort, whose call is answered aborted as such", async () => {
    const started = Date.now();
    const { runs, result, run } = await chargingRun(
      async (ctx, calls) => {
        void ctx.executeTools(calls);
      },
      { ms: 2000, abortGraceMs: 30 },
    );
    expect(Date.now() - started).toBeLessThan(1500);
    expect(result.stopReason).toBe("completed");
    expect(runs).toEqual(["5"]);
    // It ran: not "the orchestrator ended without running this call".
    const abandoned = "aborted: the tool did not stop within 30 ms of the abort";
    expect(c1Result(result)).toMatchObject({ status: "aborted", content: abandoned });
    expect(eventsOf(run.events, "tool_result")).toMatchObject([{ status: "aborted", error: abandoned }]);
  });

  it("steering that one batch took while another still runs calls of the same reply waits for that batch", async () => {
    const slow = charging(30);
    const fast = charging(1);
    const quick = defineTool({ ...fast.tool, name: "refund" });
    const batches: ToolBatchResult[] = [];
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("charge", { amount: 5 }, { id: "c1" }),
          script.toolCall("refund", { amount: 2 }, { id: "c2" }),
        ],
      ]),
      tools: [slow.tool, quick],
      orchestrator: plugin(async (ctx) => {
        const decision = await ctx.decide();
        if (decision.mode !== "steer") return;
        const [charge, refund] = decision.toolCalls as [ToolCall, ToolCall];
        agent.steer("And a receipt.");
        const first = ctx.executeTools([charge]);
        batches.push(await ctx.executeTools([refund]));
        batches.push(await first);
      }),
    });
    const result = await kept(agent.prompt("pay"));
    expect(result.stopReason).toBe("completed");
    expect(batches.map((batch) => batch.steering.length)).toEqual([0, 1]);
    expect(result.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "user",
    ]);
    expect(c1Result(result)).toMatchObject({ status: "ok", content: "charged" });
    expect(result.messages.at(-1)).toMatchObject({ role: "user", content: "And a receipt." });
  });

  it("a batch that suspends the run while another runs: that one is cancelled, and its calls get their results in this run", async () => {
    const { tool, runs } = charging(5);
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("charge", { amount: 5 }, { id: "c1" }),
          script.toolCall("charge", { amount: 7 }, { id: "c2" }),
        ],
        [script.text("Charged twice.")],
      ]),
      tools: [tool],
      limits: { abortGraceMs: 200 },
      beforeToolCall: ({ call }) => (call.id === "c2" ? { requireApproval: true } : undefined),
      orchestrator: plugin(async (ctx) => {
        const decision = await ctx.decide();
        if (decision.mode !== "steer") return;
        const [first, second] = decision.toolCalls as [ToolCall, ToolCall];
        await Promise.all([ctx.executeTools([first]), ctx.executeTools([second])]);
        await ctx.decide();
      }),
    });
    const run = agent.prompt("pay");
    const waiting = await settled(run);
    // Every call of the run gets its result in the run, except the one it waits on.
    assertEventProtocol(run.events);
    expect(waiting.stopReason).toBe("awaiting_approval");
    expect(waiting.pendingApprovals?.map((call) => call.toolCallId)).toEqual(["c2"]);
    expect(c1Result(waiting)).toMatchObject({ status: "ok", content: "charged" });
    const resumed = await kept(agent.approve("c2") as AgentRun);
    expect(resumed.stopReason).toBe("completed");
    expect(runs).toEqual(["5", "7"]);
    expect(resumed.messages.filter((message) => message.role === "toolResult")).toHaveLength(2);
  });

  it("once the run suspends, an orchestrator that goes on cannot answer the calls it waits on", async () => {
    // The orchestrator swallows AwaitingApprovalError and goes on at each microtask after it.
    for (let yields = 0; yields <= 4; yields++) {
      const { tool, runs } = charging(1);
      const tried: unknown[] = [];
      // A refusal comes a timer tick later (so a retrying loop lets timers run): the run may end first.
      let triedAll!: () => void;
      const allTried = new Promise<void>((resolve) => {
        triedAll = resolve;
      });
      const agent = new Agent({
        provider: scriptedModel([
          [script.toolCall("charge", { amount: 5 }, { id: "c1" })],
          [script.text("Moved on.")],
          [script.text("Charged.")],
        ]),
        tools: [tool],
        beforeToolCall: async () => ({ requireApproval: true }),
        orchestrator: plugin(async (ctx) => {
          const decision = await ctx.decide();
          if (decision.mode !== "steer") return;
          ctx.executeTools(decision.toolCalls).catch(() => {});
          for (let k = 0; k < yields; k++) await Promise.resolve();
          for (const moveOn of Object.values(movesOn))
            try {
              await moveOn(ctx);
            } catch (error) {
              tried.push(error);
            }
          triedAll();
        }),
      });
      const waiting = await settled(agent.prompt("pay"));
      expect(waiting.stopReason).toBe("awaiting_approval");
      expect(waiting.pendingApprovals?.map((call) => call.toolCallId)).toEqual(["c1"]);
      expect(waiting.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
      await allTried;
      expect(tried).toHaveLength(4);
      const resumed = await kept(agent.approve("c1") as AgentRun);
      expect(resumed.stopReason).toBe("completed");
      expect(runs).toEqual(["5"]);
      expect(c1Result(resumed)).toMatchObject({ status: "ok", content: "charged" });
    }
  });
});
