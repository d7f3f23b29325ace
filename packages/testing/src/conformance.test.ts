import { type AssistantMessage, type Orchestrator, type RunContext, runTurns } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { conformanceChecks, describeOrchestratorConformance } from "./conformance.js";
import { conformanceModel } from "./conformance-model.js";

// The suite must fail orchestrators that break a guarantee the core cannot keep for them.

function check(name: string) {
  const found = conformanceChecks.find((c) => c.name.startsWith(name));
  if (!found) throw new Error(`no check named ${name}`);
  return found;
}
const orchestrator =
  (run: (ctx: RunContext) => Promise<void>): (() => Orchestrator) =>
  () => ({ name: "broken", run });

/** The agentic loop: decide, run the tools the model asks for, until it answers. */
function toolLoop(ctx: RunContext): Promise<void> {
  return runTurns(ctx, async (): Promise<AssistantMessage> => {
    for (;;) {
      const decision = await ctx.decide();
      if (decision.mode === "respond") return decision.message;
      await ctx.executeTools(decision.toolCalls);
    }
  });
}

describe("conformance checks catch broken orchestrators", () => {
  it("one that turns a provider failure into an answer", async () => {
    const swallowing = orchestrator(async (ctx) => {
      ctx.startTurn();
      try {
        await ctx.decide();
      } catch {
        const message = {
          role: "assistant" as const,
          content: [{ type: "text" as const, text: "I encountered an error" }],
        };
        ctx.messages.append(message);
        ctx.endTurn(message);
      }
    });
    await expect(check("reports a provider failure").run(swallowing)).rejects.toThrow(
      /expected 'completed' to be 'error'/,
    );
  });

  it("one that never looks at the steering queue", async () => {
    const deaf = orchestrator(async (ctx) => {
      ctx.startTurn();
      const message = { role: "assistant" as const, content: [{ type: "text" as const, text: "done" }] };
      ctx.messages.append(message);
      ctx.endTurn(message);
    });
    await expect(check("honours steering").run(deaf)).rejects.toThrow();
  });

  it("one that calls the tool and does not end promptly when aborted (it holds the thread)", async () => {
    const stubborn = orchestrator(async (ctx) => {
      // A slow synchronous clean-up on abort: the run cannot end until it returns.
      ctx.signal.addEventListener("abort", () => {
        const until = Date.now() + 1000;
        while (Date.now() < until) {
          // busy
        }
      });
      ctx.startTurn();
      const decision = await ctx.decide();
      if (decision.mode === "steer") await ctx.executeTools(decision.toolCalls);
      ctx.endTurn(decision.message);
    });
    await expect(
      check("ends promptly when aborted in a tool").run(stubborn, { abortDeadlineMs: 100 }),
    ).rejects.toThrow(/the run did not end within 630 ms/);
  });

  it("one that calls the tool and completes without waiting for it, before the abort comes", async () => {
    const hasty = orchestrator(async (ctx) => {
      ctx.startTurn();
      const decision = await ctx.decide();
      if (decision.mode !== "steer") return ctx.endTurn(decision.message);
      let started: () => void = () => {};
      const called = new Promise<void>((resolve) => (started = resolve));
      void ctx.executeTools(decision.toolCalls, { beforeEach: () => started() }).catch(() => {});
      await called;
      ctx.endTurn(decision.message);
    });
    await expect(check("ends promptly when aborted in a tool").run(hasty)).rejects.toThrow(
      /expected 'completed' to be 'aborted'/,
    );
  });

  it("one that loops forever is still bounded: maxCycles is kept for it by the core", async () => {
    const looping = orchestrator(async (ctx) => {
      for (;;) {
        const decision = await ctx.decide();
        if (decision.mode === "steer") await ctx.executeTools(decision.toolCalls);
      }
    });
    await expect(check("keeps maxCycles").run(looping)).resolves.toBeUndefined();
  });

  it("one whose resume ignores the approved batch: the approved call never ran", async () => {
    const forgetful = (): Orchestrator => ({
      name: "broken",
      run: toolLoop,
      // Starts over: its first model call answers the approved calls "not completed".
      resume: (ctx) => toolLoop(ctx),
    });
    await expect(check("runs an approved call once when the run resumes").run(forgetful)).rejects.toThrow(
      /times the approved call probe-1 ran: expected \+0 to be 1/,
    );
  });

  it("one whose resume runs the approved batch and stops: the model never reads its result", async () => {
    const stopping = (): Orchestrator => ({
      name: "broken",
      run: toolLoop,
      resume: async (ctx, calls) => {
        await ctx.executeTools(calls);
      },
    });
    await expect(check("runs an approved call once when the run resumes").run(stopping)).rejects.toThrow(
      /a model call after the approved call probe-1 read its result: expected false to be true/,
    );
  });

  it("one that never looks at the follow-up queue: the follow-up waits there, unanswered", async () => {
    const oneTurn = orchestrator(async (ctx) => {
      ctx.startTurn();
      const decision = await ctx.decide({ tools: false });
      ctx.endTurn(decision.message);
    });
    await expect(check("honours follow-ups").run(oneTurn)).rejects.toThrow(
      /the follow-ups in the history: expected \[\] to have a length of 1/,
    );
  });

  it("one that answers a follow-up in the turn it was taken in", async () => {
    const sameTurn = orchestrator(async (ctx) => {
      ctx.startTurn();
      let decision = await ctx.decide({ tools: false });
      ctx.messages.append(...(await ctx.followUps.take()));
      decision = await ctx.decide({ tools: false });
      ctx.endTurn(decision.message);
    });
    await expect(check("honours follow-ups").run(sameTurn)).rejects.toThrow(
      /turns opened: expected 1 to be greater than or equal to 2/,
    );
  });

  it("one that throws: the failed check says what it threw", async () => {
    const throwing = orchestrator(async () => {
      throw new Error("the plan is empty");
    });
    await expect(check("answers a prompt without tools").run(throwing)).rejects.toThrow(
      'the run ended error (orchestrator_error: Orchestrator "broken" failed: the plan is empty)',
    );
  });

  it("one that runs the tools itself, past ctx.executeTools(): no tool_call, and no approval asked", async () => {
    // It answers each call with what the tool returned: the transcript is valid, the events quiet.
    const bypassing = orchestrator((ctx) =>
      runTurns(ctx, async (): Promise<AssistantMessage> => {
        for (;;) {
          const decision = await ctx.decide();
          if (decision.mode === "respond") return decision.message;
          for (const call of decision.toolCalls) {
            const tool = ctx.tools.get(call.name) as { execute(args: unknown, options: unknown): unknown };
            const output = await tool.execute(call.args, { toolCallId: call.id, signal: ctx.signal });
            ctx.messages.append({
              role: "toolResult",
              toolCallId: call.id,
              toolName: call.name,
              content: JSON.stringify(output),
              status: "ok",
              isError: false,
              timestamp: 1,
            });
          }
        }
      }),
    );
    await expect(check("uses tools").run(bypassing)).rejects.toThrow(
      /the calls the probe ran, each announced by tool_call: expected \[ 'probe-1' \] to deeply equal \[\]/,
    );
    await expect(check("runs an approved call once when the run resumes").run(bypassing)).rejects.toThrow(
      /the calls the probe ran without an approval: expected \[ 'probe-1' \] to deeply equal \[\]/,
    );
  });

  it("one that never ends, even when nobody reads the events: the result() check says so", async () => {
    const endless = orchestrator(() => new Promise(() => {}));
    await expect(check("resolves result() when nobody reads the events").run(endless)).rejects.toThrow(
      "the run did not end within 5000 ms",
    );
  });
});

// The AnswerOnly example of docs/writing-an-orchestrator.md.
const answerOnly = orchestrator((ctx) =>
  runTurns(ctx, async () => (await ctx.decide({ tools: false })).message),
);

describe("the suite's vitest tests", () => {
  describeOrchestratorConformance("answer-only", answerOnly);

  it("give each check 60 s, so a run that never ends fails with the check's message, not vitest's", ({
    task,
  }) => {
    const suite = task.suite?.tasks.find((t) => t.name === "orchestrator conformance: answer-only");
    const tests = suite?.type === "suite" ? suite.tasks : [];
    expect(tests).toHaveLength(conformanceChecks.length);
    for (const test of tests)
      expect(test.type === "test" && test.timeout, test.name).toBeGreaterThanOrEqual(60_000);
  });
});

describe("conformance checks pass orchestrators that keep the guarantees", () => {
  it("one that never calls a tool: the abort-in-a-tool check asks it to complete instead", async () => {
    await expect(check("ends promptly when aborted in a tool").run(answerOnly)).resolves.toBeUndefined();
  });

  it("one that runs the approved batch in its resume, then goes on", async () => {
    const resuming = (): Orchestrator => ({
      name: "resuming",
      run: toolLoop,
      resume: async (ctx, calls) => {
        await ctx.executeTools(calls);
        await toolLoop(ctx);
      },
    });
    await expect(
      check("runs an approved call once when the run resumes").run(resuming),
    ).resolves.toBeUndefined();
  });

  it("one that never calls a tool nor ends: the check aborts it all the same", async () => {
    const idle = orchestrator(() => new Promise(() => {}));
    await expect(check("ends promptly when aborted in a tool").run(idle)).resolves.toBeUndefined();
  });
});

describe("conformanceModel", () => {
  it("refuses options that are not an object of known call numbers, naming itself and the option", () => {
    expect(() => conformanceModel(null as never)).toThrow(
      new TypeError("conformanceModel: the options must be an object, got null."),
    );
    expect(() => conformanceModel({ hangOnCal: 1 } as never)).toThrow(
      new TypeError(
        'conformanceModel: the options have no option "hangOnCal" (known: hangOnCall, failOnCall).',
      ),
    );
    expect(() => conformanceModel({ hangOnCall: "1" } as never)).toThrow(
      new TypeError("conformanceModel: hangOnCall must be a call number (an integer >= 1), got string 1."),
    );
    expect(() => conformanceModel({ failOnCall: 0 })).toThrow(
      new TypeError("conformanceModel: failOnCall must be a call number (an integer >= 1), got number 0."),
    );
    expect(conformanceModel({ hangOnCall: undefined, failOnCall: 2 }).modelId).toBe("conformance-model");
  });
});
