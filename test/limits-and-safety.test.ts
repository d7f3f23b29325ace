import "@agent-core/agentic";
import {
  Agent,
  type AgentConfig,
  type AgentMessage,
  type AgentRun,
  defineTool,
  estimateTokens,
  FatalToolError,
  InvalidConfigError,
  InvalidEventError,
  InvalidHistoryError,
  OrchestratorError,
} from "@agent-core/core";
import { eventsOf, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { echo, finished, sleep, toolResults, wait } from "./fixtures.js";

/** A tool that ignores its signal: only a time limit (and the abort grace after it) ends its call. */
const stubbornTool = (name = "stubborn") =>
  defineTool({
    name,
    description: "ignores its signal",
    inputSchema: z.object({}),
    execute: () => new Promise(() => {}),
  });

describe("timeouts", () => {
  it("totalMs ends a run that takes too long as timeout, with a timeout error event", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.text("thinking…"), script.hang()]]),
      timeouts: { totalMs: 40 },
    });
    const run = agent.prompt("x");
    const started = Date.now();
    const result = await finished(run);
    expect(Date.now() - started).toBeLessThan(500);
    expect(result.stopReason).toBe("timeout");
    expect(eventsOf(run.events, "error")[0]).toMatchObject({
      code: "timeout",
      message: "The run took longer than 40 ms (timeouts.totalMs).",
    });
  });

  it("totalMs gives the calls it stopped `aborted` results, as abort() does, even a tool that ignores its signal", async () => {
    const deaf = defineTool({
      name: "deaf",
      description: "Ignores its signal",
      inputSchema: z.object({}),
      execute: () => sleep(300).then(() => "late"),
    });
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("deaf", {}, { id: "c1" }), script.toolCall("deaf", {}, { id: "c2" })],
      ]),
      tools: [deaf],
      limits: { abortGraceMs: 20 },
      timeouts: { totalMs: 40 },
    });
    const run = agent.prompt("x");
    const result = await finished(run);
    expect(result.stopReason).toBe("timeout");
    const closed = "not completed: The run took longer than 40 ms (timeouts.totalMs).";
    expect(toolResults(result.messages).map((m) => [m.toolCallId, m.status, m.content])).toEqual([
      ["c1", "aborted", closed],
      ["c2", "aborted", closed],
    ]);
    expect(eventsOf(run.events, "tool_result").map((e) => e.status)).toEqual(["aborted", "aborted"]);
  });

  it("totalMs: a queued call it kept from running says the run timed out, not that it was aborted", async () => {
    const polite = defineTool({
      name: "polite",
      description: "Stops when its signal aborts",
      inputSchema: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("polite", {}, { id: "c1" }), script.toolCall("polite", {}, { id: "c2" })],
      ]),
      tools: [polite],
      timeouts: { totalMs: 40 },
    });
    const result = await finished(agent.prompt("x"));
    expect(result.stopReason).toBe("timeout");
    expect(toolResults(result.messages).map((m) => [m.toolCallId, m.status, m.content])).toEqual([
      ["c1", "aborted", "The run took longer than 40 ms (timeouts.totalMs)."],
      ["c2", "aborted", "not run: The run took longer than 40 ms (timeouts.totalMs)."],
    ]);
  });

  it("stepMs, firstChunkMs and chunkMs each end a slow model call", async () => {
    const chunksEvery = (ms: number, count: number) =>
      Array.from({ length: count }, () => [script.delay(ms), script.text("b")]).flat();
    const cases: [AgentConfig["timeouts"], ReturnType<typeof script.text>[], string][] = [
      // Chunks every 10 ms: no gap is long, but the whole call is.
      [{ stepMs: 40, chunkMs: 30 }, chunksEvery(10, 8), "stepMs"],
      [{ firstChunkMs: 30 }, [script.delay(80), script.text("late")], "firstChunkMs"],
      [
        { chunkMs: 30 },
        [script.text("a"), script.delay(5), script.text("b"), script.delay(80), script.text("c")],
        "chunkMs",
      ],
    ];
    for (const [timeouts, parts, name] of cases) {
      const result = await finished(new Agent({ provider: scriptedModel([parts]), timeouts }).prompt("x"));
      expect(result.stopReason, name).toBe("timeout");
      expect(result.error?.message, name).toContain(`(timeouts.${name})`);
    }
  });

  it("a prompt's timeouts override the agent's; a fast call is not cut", async () => {
    const model = scriptedModel([
      [script.delay(60), script.text("slow")],
      [script.delay(60), script.text("slow")],
    ]);
    const agent = new Agent({ provider: model, timeouts: { stepMs: 30 } });
    expect((await finished(agent.prompt("x", { timeouts: { stepMs: 500 } }))).stopReason).toBe("completed");
    expect((await finished(agent.prompt("y"))).stopReason).toBe("timeout");
  });

  it("a prompt's timeouts.tools override the agent's tool by tool: the agent's limit of another tool holds", async () => {
    const model = scriptedModel([
      [script.toolCall("first"), script.toolCall("second")],
      [script.text("both stopped")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [stubbornTool("first"), stubbornTool("second")],
      // totalMs: without the agent's limit of "first", the run would wait for it until then.
      timeouts: { tools: { first: 20 }, totalMs: 1_000 },
      limits: { abortGraceMs: 10 },
    });
    const result = await finished(agent.prompt("x", { timeouts: { tools: { second: 20 } } }));
    expect(result.stopReason).toBe("completed");
    expect(toolResults(result.messages).map((r) => r.status)).toEqual(["timeout", "timeout"]);
  });

  it("a setting given as undefined is one left out: it keeps the default, or the agent's value in a prompt", async () => {
    // A model that never stops calling tools: only maxCycles ends its run.
    const looping = scriptedModel(
      Array.from({ length: 12 }, (_, i) => [script.toolCall("echo", { text: `${i}` })]),
    );
    const unbounded = new Agent({ provider: looping, tools: [echo], limits: { maxCycles: undefined } });
    const cycles = await finished(unbounded.prompt("loop"));
    expect(cycles.stopReason).toBe("max_cycles");
    expect(cycles.metrics.cycles).toBe(10);

    const agent = new Agent({ provider: scriptedModel([[script.hang()]]), timeouts: { totalMs: 20 } });
    // The signal ends the run only if the agent's totalMs no longer does.
    const run = agent.prompt("x", { timeouts: { totalMs: undefined }, signal: AbortSignal.timeout(2_000) });
    expect((await finished(run)).stopReason).toBe("timeout");
  });

  it("a queued prompt runs with the timeouts checked when it was made, whatever its options object becomes", async () => {
    const model = scriptedModel([
      [script.text("first"), script.delay(20)],
      [script.toolCall("stubborn")],
      [script.text("went on")],
    ]);
    const agent = new Agent({ provider: model, tools: [stubbornTool()], limits: { abortGraceMs: 10 } });
    const first = agent.prompt("one");
    const options = { timeouts: { tools: { stubborn: 20 }, totalMs: 1_000 } };
    const queued = agent.prompt("two", options);
    options.timeouts.tools.stubborn = 3e9;
    await finished(first);
    const result = await finished(queued);
    expect(result.stopReason).toBe("completed");
    expect(toolResults(result.messages).map((r) => r.content)).toEqual([
      'The tool "stubborn" timed out after 20 ms and was stopped.',
    ]);
  });

  it("retries a timed-out model call when retryTimeouts is set", async () => {
    const model = scriptedModel([[script.delay(100), script.text("late")], [script.text("fast")]]);
    const agent = new Agent({
      provider: model,
      timeouts: { firstChunkMs: 30 },
      retry: { retryTimeouts: true, initialDelayMs: 1 },
    });
    expect(await finished(agent.prompt("x"))).toMatchObject({ stopReason: "completed", text: "fast" });
  });

  it("does not retry a call that timed out after it streamed text, even with retryTimeouts: the text was shown", async () => {
    const model = scriptedModel([[script.text("Once upon"), script.hang()], [script.text("fast")]]);
    const agent = new Agent({
      provider: model,
      timeouts: { chunkMs: 30 },
      retry: { retryTimeouts: true, initialDelayMs: 1 },
    });
    const result = await finished(agent.prompt("x"));
    expect(result.stopReason).toBe("timeout");
    expect(result.error?.message).toContain("(timeouts.chunkMs)");
    expect(model.prompts).toHaveLength(1);
  });

  it("a tool past toolMs gets status timeout, the model sees it and the run goes on", async () => {
    const model = scriptedModel([
      [script.toolCall("stubborn"), script.toolCall("wait", { id: "quick", ms: 1 })],
      [script.text("the tool timed out")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [stubbornTool(), wait],
      timeouts: { toolMs: 30 },
      limits: { abortGraceMs: 10 },
    });
    const run = agent.prompt("x");
    const result = await finished(run);
    expect(result.stopReason).toBe("completed");
    expect(toolResults(result.messages).map((r) => [r.status, r.content])).toEqual([
      ["timeout", 'The tool "stubborn" timed out after 30 ms and was stopped.'],
      ["ok", "quick"],
    ]);
    expect(JSON.stringify(model.prompts[1])).toContain("timed out after 30 ms");
  });

  it("timeouts.tools sets a limit per tool, over toolMs", async () => {
    const model = scriptedModel([[script.toolCall("wait", { id: "a", ms: 50 })], [script.text("ok")]]);
    const agent = new Agent({
      provider: model,
      tools: [wait],
      timeouts: { toolMs: 10, tools: { wait: 500 } },
    });
    expect(toolResults((await finished(agent.prompt("x"))).messages)[0]?.status).toBe("ok");
  });

  it("timeouts.tools reads only its own keys: a tool named like an Object method gets toolMs", async () => {
    for (const name of ["constructor", "toString", "__proto__"]) {
      const tool = defineTool({
        name,
        description: "d",
        inputSchema: z.object({}),
        execute: () => sleep(20).then(() => "done"),
      });
      const model = scriptedModel([[script.toolCall(name)], [script.text("ok")]]);
      const agent = new Agent({ provider: model, tools: [tool], timeouts: { toolMs: 1000, tools: {} } });
      const [result] = toolResults((await finished(agent.prompt("x"))).messages);
      expect([result?.status, result?.content], name).toEqual(["ok", "done"]);
    }
  });
});

describe("parallel tool execution", () => {
  it("runs calls at once: events in completion order, history in the model's order", async () => {
    const model = scriptedModel([
      [
        script.toolCall("wait", { id: "slow", ms: 60 }, { id: "c1" }),
        script.toolCall("wait", { id: "fast", ms: 5 }, { id: "c2" }),
      ],
      [script.text("done")],
    ]);
    const agent = new Agent({ provider: model, tools: [wait], toolExecution: "parallel" });
    const run = agent.prompt("x");
    const result = await finished(run);
    // Both started before either ended: one at a time, c1's result would come before c2's call.
    expect(
      run.events
        .filter((e) => e.type === "tool_call" || e.type === "tool_result")
        .map((e) => `${e.type} ${"toolCallId" in e ? e.toolCallId : ""}`),
    ).toEqual(["tool_call c1", "tool_call c2", "tool_result c2", "tool_result c1"]);
    expect(toolResults(result.messages).map((r) => r.toolCallId)).toEqual(["c1", "c2"]);
  });

  it("a sequential tool runs alone without serializing the others", async () => {
    const log: string[] = [];
    const tracked = (name: string, sequential: boolean) =>
      defineTool({
        name,
        description: name,
        inputSchema: z.object({ id: z.string() }),
        sequential,
        execute: async ({ id }) => {
          log.push(`start ${id}`);
          await sleep(20);
          log.push(`end ${id}`);
          return id;
        },
      });
    const model = scriptedModel([
      [
        script.toolCall("free", { id: "a" }),
        script.toolCall("free", { id: "b" }),
        script.toolCall("alone", { id: "c" }),
        script.toolCall("free", { id: "d" }),
      ],
      [script.text("ok")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [tracked("free", false), tracked("alone", true)],
      toolExecution: "parallel",
    });
    await finished(agent.prompt("x"));
    expect(log.slice(0, 2).sort()).toEqual(["start a", "start b"]);
    const c = log.indexOf("start c");
    expect(log.slice(0, c)).toEqual(expect.arrayContaining(["end a", "end b"]));
    expect(log[c + 1]).toBe("end c");
    expect(log.slice(c + 2)).toEqual(["start d", "end d"]);
  });

  it("a FatalToolError aborts the running siblings and skips the queued ones", async () => {
    let siblingSignal: AbortSignal | undefined;
    const tools = [
      defineTool({
        name: "boom",
        description: "fails fatally",
        inputSchema: z.object({}),
        execute: async () => {
          await sleep(10);
          throw new FatalToolError("credentials revoked");
        },
      }),
      defineTool({
        name: "long",
        description: "waits for its signal",
        inputSchema: z.object({}),
        execute: (_args, { signal }) => {
          siblingSignal = signal;
          return new Promise((_resolve, reject) =>
            signal.addEventListener("abort", () => reject(new Error("stopped"))),
          );
        },
      }),
    ];
    const model = scriptedModel([
      [
        script.toolCall("boom", {}, { id: "b" }),
        script.toolCall("long", {}, { id: "l" }),
        script.toolCall("long", {}, { id: "q" }),
      ],
      [script.text("failed")],
    ]);
    const agent = new Agent({ provider: model, tools, toolExecution: "parallel", maxConcurrency: 2 });
    const result = await finished(agent.prompt("x"));
    expect(siblingSignal?.aborted).toBe(true);
    expect(toolResults(result.messages).map((r) => [r.toolCallId, r.status])).toEqual([
      ["b", "error"],
      ["l", "aborted"],
      ["q", "skipped"],
    ]);
    expect(toolResults(result.messages)[2]?.content).toBe('not run: "boom" failed fatally');
  });
});

describe("stall detection", () => {
  it("nudges on a repeated call, then stops the run as stalled, with a valid history", async () => {
    const same = [script.toolCall("echo", { text: "hi" })];
    const model = scriptedModel([same, same, same, [script.text("never")]]);
    const run = new Agent({ provider: model, tools: [echo] }).prompt("x");
    const result = await finished(run);
    expect(result.stopReason).toBe("stalled");
    expect(eventsOf(run.events, "error")[0]).toMatchObject({ code: "stalled" });
    expect(toolResults(result.messages).map((r) => r.status)).toEqual(["ok", "skipped", "error"]);
    expect(toolResults(result.messages)[1]?.content).toMatch(
      /^You already called "echo" with these same arguments/,
    );
    expect(JSON.stringify(model.prompts[2])).toContain("You already called");
  });

  it("runs a repeat beside a call never made before, whichever of the two the reply makes first", async () => {
    const lookup = defineTool({
      name: "lookup",
      description: "d",
      inputSchema: z.object({ id: z.number() }),
      execute: ({ id }) => `record ${id}`,
    });
    for (const order of [
      [8, 7],
      [7, 8],
    ])
      for (const toolExecution of ["sequential", "parallel"] as const) {
        const model = scriptedModel([
          [script.toolCall("lookup", { id: 7 })],
          order.map((id) => script.toolCall("lookup", { id })),
          [script.text("done")],
        ]);
        const result = await finished(
          new Agent({ provider: model, tools: [lookup], toolExecution }).prompt("x"),
        );
        expect(result.stopReason).toBe("completed");
        expect(toolResults(result.messages).map((r) => `${r.content} ${r.status}`)).toEqual([
          "record 7 ok",
          ...order.map((id) => `record ${id} ok`),
        ]);
      }
  });

  it("ends the run on a call whose arguments nest 5,000 levels deep, instead of crashing it; the next prompt runs", async () => {
    // Too deep to be compared, and to be written out again in the next request: the model's
    // call is refused as a malformed part (see the guards), so it never reaches the history.
    const deep = `{"text":"a","more":${"[".repeat(5000)}${"]".repeat(5000)}}`;
    const model = scriptedModel([[script.toolCall("echo", deep)], [script.text("done")]]);
    const agent = new Agent({ provider: model, tools: [echo] });
    const result = await finished(agent.prompt("x"));
    expect(result.stopReason).toBe("error");
    expect(result.error).toMatchObject({ code: "provider_error" });
    expect(toolResults(result.messages)).toEqual([]);
    expect(await finished(agent.prompt("again"))).toMatchObject({ stopReason: "completed", text: "done" });
  });

  it("nudges when the same result keeps coming back, then stops", async () => {
    const poll = defineTool({
      name: "status",
      description: "s",
      inputSchema: z.object({ n: z.number() }),
      execute: () => "pending",
    });
    // A new call before each poll keeps the calls from counting as repeats: only the result does.
    const steps = Array.from({ length: 6 }, (_, n) => [
      script.toolCall("echo", { text: `wait ${n}` }),
      script.toolCall("status", { n: 1 }),
    ]);
    const result = await finished(
      new Agent({ provider: scriptedModel(steps), tools: [echo, poll] }).prompt("x"),
    );
    expect(result.stopReason).toBe("stalled");
    expect(toolResults(result.messages)[5]?.content).toMatch(
      /^pending\n\n\[note\] "status" returned the same result 3 times in a row/,
    );
  });

  it("leaves tools that allowRepeats alone, and can be configured or turned off", async () => {
    const poller = defineTool({
      name: "poll",
      description: "p",
      inputSchema: z.object({}),
      allowRepeats: true,
      execute: () => "pending",
    });
    const steps = [...Array.from({ length: 5 }, () => [script.toolCall("poll")]), [script.text("done")]];
    expect(
      (await finished(new Agent({ provider: scriptedModel(steps), tools: [poller] }).prompt("x"))).stopReason,
    ).toBe("completed");
    const same = [script.toolCall("echo", { text: "hi" })];
    const off = new Agent({
      provider: scriptedModel([same, same, same, [script.text("ok")]]),
      tools: [echo],
      stall: false,
    });
    expect((await finished(off.prompt("x"))).stopReason).toBe("completed");
    const lenient = new Agent({
      provider: scriptedModel([same, same, [script.text("ok")]]),
      tools: [echo],
      stall: { repeatedCalls: 3 },
    });
    expect(toolResults((await finished(lenient.prompt("x"))).messages).map((r) => r.status)).toEqual([
      "ok",
      "ok",
    ]);
  });
});

describe("context budget", () => {
  it("keeps the request under budget, emits context_truncated, and leaves the stored history whole", async () => {
    const big = defineTool({
      name: "fetch",
      description: "f",
      inputSchema: z.object({ n: z.number() }),
      execute: ({ n }) => `${n}:${"x".repeat(4000)}`,
    });
    const model = scriptedModel([
      [script.toolCall("fetch", { n: 1 })],
      [script.toolCall("fetch", { n: 2 })],
      [script.toolCall("fetch", { n: 3 })],
      [script.text("done")],
    ]);
    const agent = new Agent({ provider: model, tools: [big], contextBudget: { maxTokens: 2500 } });
    const run = agent.prompt("fetch three pages");
    const result = await finished(run);
    const truncated = eventsOf(run.events, "context_truncated");
    expect(truncated.length).toBeGreaterThan(0);
    expect(truncated.at(-1)?.estimatedTokens).toBeLessThanOrEqual(2500);
    const lastPrompt = JSON.stringify(model.prompts[3]);
    expect(lastPrompt).toContain("[result dropped to fit the context budget]");
    expect(lastPrompt).toContain(`3:${"x".repeat(100)}`);
    expect(toolResults(result.messages).every((r) => r.content.length > 4000)).toBe(true);
  });

  it("sends the latest reply's results whole, over the budget, when they alone do not fit it", async () => {
    const page = defineTool({
      name: "page",
      description: "d",
      inputSchema: z.object({ n: z.number() }),
      execute: ({ n }) => `${n} ${"text ".repeat(2000)}`,
    });
    const model = scriptedModel([
      [script.toolCall("page", { n: 1 }), script.toolCall("page", { n: 2 })],
      [script.text("done")],
    ]);
    const agent = new Agent({ provider: model, tools: [page], contextBudget: { maxTokens: 3000 } });
    const run = agent.prompt("Read two pages");
    await finished(run);
    expect(eventsOf(run.events, "context_truncated")).toEqual([]);
    const sent = JSON.stringify(model.prompts[1]);
    expect(sent).toContain(`1 ${"text ".repeat(2000)}`);
    expect(sent).toContain(`2 ${"text ".repeat(2000)}`);
  });
});

describe("context budget defaults", () => {
  it("defaults to 75% of the model's known context window, and says so when it is not known", () => {
    const known = scriptedModel([], { modelId: "gpt-4o-mini" });
    expect(() => new Agent({ provider: known, contextBudget: {} })).not.toThrow();
    const unknown = scriptedModel([], { modelId: "my-finetune" });
    expect(() => new Agent({ provider: unknown, contextBudget: {} })).toThrow(
      'contextBudget needs contextWindow or maxTokens: the context window of model "my-finetune" is not known.',
    );
    expect(() => new Agent({ provider: unknown, contextBudget: { contextWindow: 8000 } })).not.toThrow();
  });

  it("counts the system prompt against the budget", async () => {
    const model = scriptedModel([[script.text("ok")]]);
    const agent = new Agent({
      provider: model,
      systemPrompt: "x".repeat(4000),
      contextBudget: { maxTokens: 1200 },
    });
    const run = agent.prompt([{ role: "note", text: "y".repeat(2000) }, "hi"]);
    await finished(run);
    expect(eventsOf(run.events, "context_truncated")).toHaveLength(1);
  });

  /** A `page` tool whose page `n` is `text(n)`, and a model that reads pages 1 and 2, then answers. */
  function twoPages(text: (n: number) => string) {
    const page = defineTool({
      name: "page",
      description: "d",
      inputSchema: z.object({ n: z.number() }),
      execute: ({ n }) => text(n),
    });
    const model = scriptedModel([
      [script.toolCall("page", { n: 1 })],
      [script.toolCall("page", { n: 2 })],
      [script.text("done")],
    ]);
    return { page, model };
  }

  it("counts the system prompt each call sends, the orchestrator's instructions included", async () => {
    const { page, model } = twoPages((n) => `${n}${"x".repeat(1400)}`);
    const requests: number[] = [];
    const agent = new Agent({
      provider: model,
      tools: [page],
      systemPrompt: "Be brief.",
      contextBudget: { maxTokens: 1000 },
      // What each call sends, as the budget estimates it: its system prompt (with the tool
      // instructions agentic adds, some 90 tokens) and its messages (some 950 after two pages).
      prepareStep: ({ system, messages }) => {
        const sent = messages.reduce((sum, message) => sum + estimateTokens(message), 0);
        requests.push(estimateTokens({ role: "user", content: system ?? "" }) + sent);
        return undefined;
      },
    });
    const run = agent.prompt("Read the page");
    await finished(run);
    expect(requests).toHaveLength(3);
    for (const tokens of requests) expect(tokens).toBeLessThanOrEqual(1000);
    expect(eventsOf(run.events, "context_truncated")).toHaveLength(1);
  });

  it("context_truncated estimates the messages the request sends, the system prompt apart", async () => {
    const { page, model } = twoPages((n) => `${n}${"x".repeat(1400)}`);
    const sent: number[] = [];
    const agent = new Agent({
      provider: model,
      tools: [page],
      systemPrompt: "s".repeat(2000),
      contextBudget: { maxTokens: 1200 },
      prepareStep: ({ messages }) => {
        sent.push(messages.reduce((sum, message) => sum + estimateTokens(message), 0));
        return undefined;
      },
    });
    const run = agent.prompt("Read the page");
    await finished(run);
    expect(eventsOf(run.events, "context_truncated").map((e) => e.estimatedTokens)).toEqual([sent[2]]);
  });

  it("refuses at new Agent() a budget the system prompt fills, instead of wedging the agent at its first prompt", async () => {
    const model = scriptedModel([[script.text("ok")]]);
    const filled = { provider: model, systemPrompt: "x".repeat(4000), contextBudget: { maxTokens: 1000 } };
    expect(() => new Agent(filled)).toThrow(InvalidConfigError);
    expect(() => new Agent(filled)).toThrow(
      "Invalid agent config: contextBudget must leave tokens for the messages beside the 1011 estimated for the system prompt (its text, with a message's framing and overhead), got a budget of 1000.",
    );
    // An empty system prompt still costs a message's framing and overhead, and the refusal says
    // so; a given `systemTokens` counts as given.
    expect(() => new Agent({ provider: model, contextBudget: { maxTokens: 10 } })).toThrow(
      "Invalid agent config: contextBudget must leave tokens for the messages beside the 11 estimated for the system prompt (a message's framing and overhead, counted with no system prompt too), got a budget of 10.",
    );
    const explicit = { maxTokens: 900, contextWindow: 8000, systemTokens: 900 };
    expect(() => new Agent({ provider: model, contextBudget: explicit })).toThrow(
      "contextBudget must leave tokens for the messages beside the system prompt's 900 (its systemTokens), got a budget of 900.",
    );
    const agent = new Agent({
      provider: model,
      systemPrompt: "x".repeat(4000),
      contextBudget: { maxTokens: 1100 },
    });
    expect((await finished(agent.prompt("hi"))).stopReason).toBe("completed");
  });

  it("a budget the orchestrator's instructions fill ends the run with an InvalidConfigError saying so, before any model call", async () => {
    // The agent's own prompt (some 990 tokens) fits the budget, so new Agent() takes it; agentic
    // adds its tool instructions to every call, and the prompt it sends does not fit.
    const model = scriptedModel([[script.text("ok")]]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      systemPrompt: "x".repeat(3900),
      contextBudget: { maxTokens: 1000 },
    });
    const result = await finished(agent.prompt("hi"));
    expect(result.stopReason).toBe("error");
    expect(result.error).toBeInstanceOf(InvalidConfigError);
    expect(result.error?.message).toBe(
      "contextBudget must leave tokens for the messages beside the system prompt this call sends (1046 tokens, with what the orchestrator adds to the agent's), got a budget of 1000.",
    );
    expect(model.prompts).toHaveLength(0);
  });

  it("fails the model call when a custom estimate returns no token count, never publishing an invalid context_truncated", async () => {
    for (const [count, shown] of [
      [Number.NaN, "NaN"],
      [-5, "-5"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      ["7", '"7"'],
      [undefined, "undefined"],
    ] as const) {
      const { page, model } = twoPages((n) => `${n} ${"text ".repeat(2000)}`);
      const estimate = (() => count) as unknown as (message: AgentMessage) => number;
      const agent = new Agent({
        provider: model,
        tools: [page],
        contextBudget: { maxTokens: 100, estimate },
      });
      const run = agent.prompt("Read two pages");
      const result = await finished(run);
      expect(eventsOf(run.events, "context_truncated")).toEqual([]);
      expect(result.error).toBeInstanceOf(OrchestratorError);
      expect(result.error?.message).toBe(
        `Orchestrator "agentic" failed: contextBudget's estimate returned an invalid result: expected a finite number of tokens >= 0, got ${shown}.`,
      );
    }
  });
});

describe("guards", () => {
  it("does not run the calls of a reply cut off by the length limit", async () => {
    let ran = false;
    const tool = defineTool({
      name: "write",
      description: "w",
      inputSchema: z.object({ text: z.string() }),
      execute: () => {
        ran = true;
      },
    });
    const model = scriptedModel([
      [script.toolCall("write", { text: "half" }), script.finish("length")],
      [script.text("I'll be shorter.")],
    ]);
    const result = await finished(new Agent({ provider: model, tools: [tool] }).prompt("x"));
    expect(ran).toBe(false);
    expect(toolResults(result.messages)[0]).toMatchObject({
      status: "error",
      content: expect.stringContaining("cut off (finish reason: length)"),
    });
  });

  it("repairToolCall fixes arguments that are not valid JSON", async () => {
    const model = scriptedModel([[script.toolCall("echo", "{text: 'hi'}")], [script.text("ok")]]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      repairToolCall: ({ call, error }) => {
        expect(error).toContain("not valid JSON");
        return { text: String(call.args).match(/'(.*)'/)?.[1] };
      },
    });
    const run = agent.prompt("x");
    const result = await finished(run);
    expect(toolResults(result.messages)[0]).toMatchObject({ status: "ok", content: "hi" });
  });

  it("repairToolCall returning arguments that are not JSON fails the hook, naming the value; the tool does not run", async () => {
    const ran: unknown[] = [];
    const anyArgs = defineTool({
      name: "any_args",
      description: "takes anything",
      inputSchema: z.object({}).passthrough(),
      execute: (args) => {
        ran.push(args);
        return "ran";
      },
    });
    for (const [fixed, problem] of [
      [new Map([["text", "hi"]]), "arguments: a Map is not JSON"],
      [{ text: 1n }, "arguments.text: BigInt is not JSON"],
      [{ at: new Date(0) }, "arguments.at: a Date is not JSON"],
    ] as const) {
      const model = scriptedModel([[script.toolCall("any_args", "{text: 'hi'}")], [script.text("ok")]]);
      const agent = new Agent({ provider: model, tools: [anyArgs], repairToolCall: () => fixed });
      const result = await finished(agent.prompt("x"));
      expect(result.stopReason).toBe("error");
      expect(result.error).toBeInstanceOf(OrchestratorError);
      expect(result.error?.message).toContain(`repairToolCall returned invalid arguments: ${problem}`);
      expect(toolResults(result.messages)).toHaveLength(1);
    }
    expect(ran).toEqual([]);
  });

  it("a model that returns nothing is a clear error", async () => {
    const result = await finished(new Agent({ provider: scriptedModel([[]]) }).prompt("x"));
    expect(result.error).toMatchObject({
      code: "empty_response",
      message: "The model returned nothing (finish reason: stop).",
    });
  });
});

describe("hooks", () => {
  it("beforeToolCall can block a call with a reason the model sees", async () => {
    const model = scriptedModel([[script.toolCall("echo", { text: "rm -rf /" })], [script.text("blocked")]]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      beforeToolCall: ({ call }) =>
        (call.args as { text: string }).text.includes("rm") ? { block: "destructive command" } : undefined,
    });
    const result = await finished(agent.prompt("x"));
    expect(toolResults(result.messages)[0]).toMatchObject({
      status: "denied",
      content: "blocked: destructive command",
    });
  });

  it("a call needing approval ends the run as awaiting_approval; approve() continues it", async () => {
    const model = scriptedModel([
      [
        script.toolCall("echo", { text: "pay $10" }, { id: "pay" }),
        script.toolCall("echo", { text: "log" }, { id: "log" }),
      ],
      [script.text("Paid.")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      beforeToolCall: ({ call }) =>
        call.id === "pay" ? { requireApproval: true, reason: "spends money" } : undefined,
    });
    const first = agent.prompt("pay");
    const suspended = await finished(first, { valid: false });
    expect(suspended.stopReason).toBe("awaiting_approval");
    expect(suspended.error).toBeUndefined();
    expect(eventsOf(first.events, "error")).toEqual([]);
    expect(eventsOf(first.events, "tool_call")).toEqual([]);
    expect(suspended.pendingApprovals).toEqual([
      { toolCallId: "pay", toolName: "echo", args: { text: "pay $10" }, reason: "spends money" },
    ]);
    expect(agent.pendingApprovals).toEqual(suspended.pendingApprovals);

    const continued = agent.approve("pay");
    expect(continued).toBeDefined();
    const result = await finished(continued as AgentRun);
    expect(result).toMatchObject({ stopReason: "completed", text: "Paid." });
    expect(toolResults(result.messages).map((r) => [r.toolCallId, r.status])).toEqual([
      ["pay", "ok"],
      ["log", "ok"],
    ]);
    // The suspended run closed its turn; the resumed batch comes before the new run's own turn.
    expect(first.events.map((e) => e.type).slice(-2)).toEqual(["turn_end", "agent_end"]);
    expect((continued as AgentRun).events.map((e) => e.type).slice(0, 6)).toEqual([
      "agent_start",
      "tool_call",
      "tool_result",
      "tool_call",
      "tool_result",
      "turn_start",
    ]);
    expect(() => agent.approve("pay")).toThrow('No tool call "pay" is waiting for approval.');
  });

  // An approval screen that lets a person edit what it shows, in place: the model asked for
  // "pay $10", and that is what the history keeps and the tool runs with.
  it("the calls listed for approval are copies: changing their args changes neither the history nor the call", async () => {
    const model = scriptedModel([
      [script.toolCall("echo", { text: "pay $10" }, { id: "pay" })],
      [script.text("Paid.")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      beforeToolCall: () => ({ requireApproval: true }),
    });
    const suspended = await finished(agent.prompt("pay"), { valid: false });
    for (const listed of [suspended.pendingApprovals?.[0], agent.pendingApprovals[0]])
      (listed?.args as { text: string }).text = "pay $10,000";
    const result = await finished(agent.approve("pay") as AgentRun);
    expect(toolResults(result.messages)[0]?.content).toBe("pay $10");
    expect(JSON.stringify(result.messages)).not.toContain("10,000");
    expect(agent.pendingApprovals).toEqual([]);
  });

  it("approve() and deny() throw an InvalidConfigError for a call not waiting or decided already", async () => {
    const model = scriptedModel([
      [
        script.toolCall("echo", { text: "a" }, { id: "a" }),
        script.toolCall("echo", { text: "b" }, { id: "b" }),
      ],
      [script.text("done")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      beforeToolCall: () => ({ requireApproval: true }),
    });
    expect((await agent.prompt("x").result()).stopReason).toBe("awaiting_approval");
    expect(() => agent.approve("nope")).toThrow(InvalidConfigError);
    expect(() => agent.deny("nope")).toThrow('No tool call "nope" is waiting for approval.');
    expect(agent.approve("a")).toBeUndefined();
    expect(() => agent.approve("a")).toThrow(new InvalidConfigError('Tool call "a" was already approved.'));
    expect(() => agent.deny("a", "changed my mind")).toThrow('Tool call "a" was already approved.');
    const result = await finished(agent.deny("b", "no") as AgentRun);
    expect(toolResults(result.messages).map((r) => [r.toolCallId, r.status])).toEqual([
      ["a", "ok"],
      ["b", "denied"],
    ]);
  });

  it("deny() gives the model the reason; a new prompt denies what is still pending", async () => {
    const model = scriptedModel([
      [script.toolCall("echo", { text: "a" }, { id: "a" })],
      [script.text("ok, not doing it")],
      [script.toolCall("echo", { text: "b" }, { id: "b" })],
      [script.text("moving on")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      beforeToolCall: () => ({ requireApproval: true }),
    });
    await finished(agent.prompt("one"), { valid: false });
    const denied = await finished(agent.deny("a", "too risky") as AgentRun);
    expect(toolResults(denied.messages)[0]).toMatchObject({ status: "denied", content: "denied: too risky" });
    await finished(agent.prompt("two"), { valid: false });
    const moved = await finished(agent.prompt("never mind"));
    expect(toolResults(moved.messages).at(-1)).toMatchObject({ toolCallId: "b", status: "denied" });
    expect(moved.messages.at(-2)).toMatchObject({ role: "user", content: "never mind" });
  });

  it("afterToolCall rewrites what the model sees", async () => {
    const model = scriptedModel([
      [script.toolCall("echo", { text: "secret-token-123" })],
      [script.text("ok")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      afterToolCall: ({ result }) => ({ content: result.content.replace(/secret-token-\d+/, "[redacted]") }),
    });
    await finished(agent.prompt("x"));
    const toolMessage = model.prompts[1]?.find((m) => m.role === "tool");
    expect(toolMessage?.content).toEqual([
      {
        type: "tool-result",
        toolCallId: "call-1-1",
        toolName: "echo",
        output: { type: "text", value: "[redacted]" },
      },
    ]);
  });

  it("afterToolCall turning a result into an error: the event, the history and the model all say so", async () => {
    const model = scriptedModel([[script.toolCall("echo", { text: "hi" })], [script.text("ok")]]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      afterToolCall: () => ({ content: "policy: result withheld", status: "error" }),
    });
    const run = agent.prompt("x");
    const { messages } = await finished(run);
    expect(eventsOf(run.events, "tool_result")[0]).toMatchObject({
      status: "error",
      error: "policy: result withheld",
    });
    expect(eventsOf(run.events, "tool_result")[0]).not.toHaveProperty("result");
    expect(toolResults(messages)[0]).toMatchObject({
      status: "error",
      isError: true,
      content: "policy: result withheld",
    });
  });

  it("afterToolCall returning an invalid override fails like a hook that throws, the history valid", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("echo", { text: "hi" })], [script.text("ok")]]),
      tools: [echo],
      afterToolCall: () => ({ status: "bogus" }) as never,
    });
    const result = await agent.prompt("x").result();
    expect(result.stopReason).toBe("error");
    expect(result.error?.message).toMatch(
      /afterToolCall returned an invalid override: status must be one of/,
    );
    expect(() => new Agent({ messages: result.messages })).not.toThrow();
  });

  it("prepareStep changes the tools, the system prompt and the model of a call", async () => {
    const first = scriptedModel([[script.text("unused")]]);
    const second = scriptedModel([[script.text("from the second model")]]);
    const agent = new Agent({
      provider: first,
      tools: [echo, wait],
      prepareStep: ({ step, tools }) =>
        step === 1
          ? { tools: tools.filter((t) => t === "echo"), system: "Be brief.", model: second }
          : undefined,
    });
    const result = await finished(agent.prompt("x"));
    expect(result.text).toBe("from the second model");
    expect(first.doStreamCalls).toHaveLength(0);
    expect(second.offeredTools[0]).toEqual(["echo"]);
    expect(second.prompts[0]?.[0]).toEqual({ role: "system", content: "Be brief." });
  });

  it.each([
    [{ system: 42 }, "system must be a string, got number"],
    [{ tools: ["echo", "nope"] }, "tools names no registered tool: nope"],
    [{ model: {} }, "model must be an AI SDK LanguageModel (an object with a doStream method)"],
    [{ messages: "hi" }, "messages must be an array"],
    ["skip", "expected an object, got string"],
  ])(
    "prepareStep returning %j fails the run saying what is wrong, the model never called",
    async (prepared, problem) => {
      const model = scriptedModel([[script.text("never")]]);
      const agent = new Agent({ provider: model, tools: [echo], prepareStep: () => prepared as never });
      const result = await agent.prompt("x").result();
      expect(result.stopReason).toBe("error");
      expect(result.error?.message).toContain(`prepareStep returned an invalid result: ${problem}.`);
      expect(model.doStreamCalls).toHaveLength(0);
    },
  );

  it("a transform that parts a tool call from its result fails the model call, never reaching the provider", async () => {
    const model = scriptedModel([[script.toolCall("echo", { text: "a" })], [script.text("never")]]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      transformContext: (messages) => messages.filter((m) => m.role !== "toolResult"),
    });
    const result = await agent.prompt("x").result();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("invalid_history");
    expect(result.error?.message).toMatch(/after transformContext, convertToLlm and prepareStep.*"call-1-1"/);
    expect(model.doStreamCalls).toHaveLength(1);
    // The stored history is whole: only what the model was to be sent was wrong.
    expect(() => new Agent({ messages: result.messages })).not.toThrow();
  });

  it("shouldStop ends the run as completed, without an error", async () => {
    const model = scriptedModel([[script.toolCall("echo", { text: "a" })], [script.text("never")]]);
    const agent = new Agent({
      provider: model,
      tools: [echo],
      shouldStop: ({ messages }) => messages.some((m) => m.role === "toolResult"),
    });
    const run = agent.prompt("x");
    const result = await finished(run);
    expect(result.stopReason).toBe("completed");
    expect(result.error).toBeUndefined();
    expect(model.doStreamCalls).toHaveLength(1);
  });
});

describe("hooks that fail", () => {
  const down = () => {
    throw new Error("hook down");
  };
  const hooks: Partial<AgentConfig>[] = [
    { beforeToolCall: down },
    { beforeToolCall: async () => down() },
    { afterToolCall: down },
    { prepareStep: down },
    { shouldStop: down },
    { transformContext: down },
    { convertToLlm: down },
  ];
  it("a hook that throws or rejects ends the run with an orchestrator_error carrying its message; every call gets a result", async () => {
    for (const hook of hooks) {
      const name = Object.keys(hook)[0];
      const model = scriptedModel([[script.toolCall("echo", { text: "a" })], [script.text("done")]]);
      const run = new Agent({ provider: model, tools: [echo], ...hook }).prompt("x");
      const result = await finished(run);
      expect(result.stopReason, name).toBe("error");
      expect(result.error, name).toBeInstanceOf(OrchestratorError);
      expect(result.error?.message, name).toBe('Orchestrator "agentic" failed: hook down');
      expect(eventsOf(run.events, "error"), name).toMatchObject([
        { code: "orchestrator_error", message: 'Orchestrator "agentic" failed: hook down' },
      ]);
    }
  });
});

describe("errors and stop reasons", () => {
  it("a run that fails on a broken history, event or callback reports the class and code of the table", async () => {
    const breaksPairs: Partial<AgentConfig> = {
      tools: [echo],
      transformContext: (messages) => messages.filter((m) => m.role !== "assistant"),
    };
    const emitsUnknown: Partial<AgentConfig> = {
      orchestrator: { name: "unknown-event", run: async (ctx) => ctx.emit({ type: "nope" } as never) },
    };
    const badCallback: Partial<AgentConfig> = { getSteeringMessages: () => [42] as never };
    const cases = [
      [breaksPairs, InvalidHistoryError, "invalid_history"],
      [emitsUnknown, InvalidEventError, "invalid_event"],
      [badCallback, InvalidConfigError, "invalid_config"],
    ] as const;
    for (const [config, errorClass, code] of cases) {
      const model = scriptedModel([[script.toolCall("echo", { text: "a" })], [script.text("done")]]);
      const run = new Agent({ provider: model, ...config }).prompt("x");
      const result = await finished(run);
      expect(result.stopReason, code).toBe("error");
      expect(result.error, code).toBeInstanceOf(errorClass);
      expect(result.error?.code, code).toBe(code);
      expect(
        eventsOf(run.events, "error").map((e) => e.code),
        code,
      ).toEqual([code]);
    }
  });
});

describe("metrics", () => {
  it("reports cycles, tool calls by status, time split and tokens on agent_end and each turn_end", async () => {
    const model = scriptedModel([
      [script.delay(20), script.toolCall("wait", { id: "a", ms: 30 }), script.toolCall("nope")],
      [script.text("done")],
      [script.text("again")],
    ]);
    const agent = new Agent({ provider: model, tools: [wait] });
    agent.followUp("and again");
    const run = agent.prompt("x");
    await finished(run);
    const end = eventsOf(run.events, "agent_end")[0];
    expect(end?.metrics).toMatchObject({
      cycles: 3,
      toolCalls: { ok: 1, error: 1 },
      usage: { totalTokens: 45 },
    });
    expect(end?.metrics?.modelMs).toBeGreaterThanOrEqual(15);
    expect(end?.metrics?.toolMs).toBeGreaterThanOrEqual(25);
    expect(end?.metrics?.frameworkMs).toBeGreaterThanOrEqual(0);
    const turns = eventsOf(run.events, "turn_end").map((e) => e.metrics);
    expect(turns.map((m) => [m?.cycles, m?.toolCalls, m?.usage.totalTokens])).toEqual([
      [2, { ok: 1, error: 1 }, 30],
      [1, {}, 15],
    ]);
  });
});
