import "@agent-core/agentic";
import {
  Agent,
  type AgentConfig,
  defineTool,
  InvalidConfigError,
  noTracing,
  openTelemetryTracing,
  rootContainer,
  TRACING,
} from "@agent-core/core";
import { planExecute } from "@agent-core/plan-execute";
import { script, scriptedModel } from "@agent-core/testing";
import { APICallError } from "@ai-sdk/provider";
import { context, SpanStatusCode, type Tracer, type TracerProvider, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";

// The span tree of runs of each orchestrator, read back from the SDK's in-memory exporter. The
// agents get the provider through the TRACING service of their container (no global state); one
// test registers it globally, as an app would.

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => {
  // Without a context manager spans still nest (the trace passes its parents explicitly); with one,
  // what a tool or provider traces itself nests under the tool's or model call's span.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterAll(() => context.disable());
beforeEach(() => exporter.reset());

function tracedAgent(config: AgentConfig): Agent {
  const container = rootContainer.createChildContainer();
  container.registerInstance(TRACING, openTelemetryTracing({ tracerProvider: provider }));
  return new Agent({ ...config, container });
}

const add = defineTool({
  name: "add",
  description: "Adds two numbers.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

const slowAdd = defineTool({
  name: "slow_add",
  description: "Adds two numbers, slowly.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return a + b;
  },
});

const failing = defineTool({
  name: "failing",
  description: "Always fails.",
  inputSchema: z.object({}),
  execute: () => {
    throw new Error("the disk is full");
  },
});

/** A span and its children, ordered by start time: `name` and the children's trees. */
interface Node {
  span: ReadableSpan;
  children: Node[];
}

function spanTree(spans: readonly ReadableSpan[] = exporter.getFinishedSpans()): Node[] {
  const nodes = new Map(spans.map((span) => [span.spanContext().spanId, { span, children: [] as Node[] }]));
  const roots: Node[] = [];
  for (const node of nodes.values()) {
    const parent = node.span.parentSpanContext && nodes.get(node.span.parentSpanContext.spanId);
    (parent ? parent.children : roots).push(node);
  }
  const byStart = (a: Node, b: Node) => hrNanos(a.span.startTime) - hrNanos(b.span.startTime);
  for (const node of nodes.values()) node.children.sort(byStart);
  return roots.sort(byStart);
}

const hrNanos = ([seconds, nanos]: [number, number]) => seconds * 1e9 + nanos;

/** The tree as indented span names, to compare whole. */
function outline(nodes: Node[], depth = 0): string[] {
  return nodes.flatMap((node) => [
    `${"  ".repeat(depth)}${node.span.name}`,
    ...outline(node.children, depth + 1),
  ]);
}

function spansNamed(prefix: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.name.startsWith(prefix));
}

function eventNames(span: ReadableSpan): string[] {
  return span.events.map((event) => event.name);
}

describe("the span tree", () => {
  it("agentic, two sequential tool calls: run → turn → model calls and tool calls, GenAI attributes on each", async () => {
    const agent = tracedAgent({
      provider: scriptedModel([
        [script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })],
        [script.toolCall("add", { a: 3, b: 4 }, { id: "c2" })],
        [script.text("3 and 7")],
      ]),
      tools: [add],
    });
    const { runId } = await agent.prompt("add them").result();

    expect(outline(spanTree())).toEqual([
      "invoke_agent",
      "  agent_core.turn",
      "    chat scripted-model",
      "    execute_tool add",
      "    chat scripted-model",
      "    execute_tool add",
      "    chat scripted-model",
    ]);
    for (const span of exporter.getFinishedSpans()) expect(span.attributes["agent_core.run.id"]).toBe(runId);

    const [run] = spansNamed("invoke_agent");
    expect(run?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "agent_core.orchestrator": "agentic",
      "agent_core.stop_reason": "completed",
      "agent_core.cycles": 3,
      "gen_ai.usage.input_tokens": 30,
      "gen_ai.usage.output_tokens": 15,
    });
    expect(run?.status.code).toBe(SpanStatusCode.UNSET);

    const chats = spansNamed("chat");
    expect(chats[0]?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "scripted-model",
      "gen_ai.response.model": "scripted-model",
      "gen_ai.response.finish_reasons": ["tool-calls"],
      "gen_ai.usage.input_tokens": 10,
      "gen_ai.usage.output_tokens": 5,
    });
    expect(chats[2]?.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);

    const tools = spansNamed("execute_tool");
    expect(tools.map((span) => span.attributes)).toEqual([
      expect.objectContaining({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "agent_core.tool.status": "ok",
      }),
      expect.objectContaining({ "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "c2" }),
    ]);
  });

  it("a parallel batch: one span per call under the turn, running at the same time", async () => {
    const agent = tracedAgent({
      provider: scriptedModel([
        [
          script.toolCall("slow_add", { a: 1, b: 1 }, { id: "p1" }),
          script.toolCall("slow_add", { a: 2, b: 2 }, { id: "p2" }),
          script.toolCall("slow_add", { a: 3, b: 3 }, { id: "p3" }),
        ],
        [script.text("2, 4, 6")],
      ]),
      tools: [slowAdd],
      toolExecution: "parallel",
    });
    await agent.prompt("add them all").result();

    const [run] = spanTree();
    const turn = run?.children[0];
    expect(turn?.span.name).toBe("agent_core.turn");
    const tools = turn?.children.filter((node) => node.span.name === "execute_tool slow_add") ?? [];
    expect(tools.map((node) => node.span.attributes["gen_ai.tool.call.id"]).sort()).toEqual([
      "p1",
      "p2",
      "p3",
    ]);
    // Each started before any of them ended.
    const firstEnd = Math.min(...tools.map((node) => hrNanos(node.span.endTime)));
    for (const node of tools) expect(hrNanos(node.span.startTime)).toBeLessThan(firstEnd);
  });

  it("plan-execute: the planner's call, the steps' tool calls and the synthesis under one turn", async () => {
    const agent = tracedAgent({
      provider: scriptedModel([
        [
          script.text(
            JSON.stringify({
              steps: [
                { tool: "add", args: { a: 1, b: 2 } },
                { tool: "add", args: { a: 3, b: 4 } },
              ],
            }),
          ),
        ],
        [script.text("3 and 7")],
      ]),
      tools: [add],
      orchestrator: planExecute(),
    });
    const { runId, stopReason } = await agent.prompt("add them").result();
    expect(stopReason).toBe("completed");

    expect(outline(spanTree())).toEqual([
      "invoke_agent",
      "  agent_core.turn",
      "    chat scripted-model",
      "    execute_tool add",
      "    execute_tool add",
      "    chat scripted-model",
    ]);
    expect(spansNamed("invoke_agent")[0]?.attributes["agent_core.orchestrator"]).toBe("plan-execute");
    for (const span of exporter.getFinishedSpans()) expect(span.attributes["agent_core.run.id"]).toBe(runId);
  });

  it("an aborted run: the abort as a span event, error status on the run and on the call it cut short", async () => {
    let agent: Agent | undefined;
    const waiting = defineTool({
      name: "wait",
      description: "Waits until aborted.",
      inputSchema: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason));
          agent?.abort();
        }),
    });
    agent = tracedAgent({
      provider: scriptedModel([[script.toolCall("wait", {}, { id: "w1" })]]),
      tools: [waiting],
    });
    const { stopReason, error } = await agent.prompt("wait").result();
    expect(stopReason).toBe("aborted");
    expect(error?.message).toBe("The run was aborted.");

    const [run] = spansNamed("invoke_agent");
    const abort = run?.events.find((event) => event.name === "agent_core.abort");
    expect(abort?.attributes).toEqual({
      "agent_core.reason": "The run was aborted.",
      "error.type": "aborted",
    });
    expect(run?.status).toMatchObject({ code: SpanStatusCode.ERROR });
    expect(run?.attributes).toMatchObject({ "agent_core.stop_reason": "aborted", "error.type": "aborted" });
    const [tool] = spansNamed("execute_tool");
    expect(tool?.status.code).toBe(SpanStatusCode.ERROR);
    expect(tool?.attributes["agent_core.tool.status"]).toBe("aborted");
  });

  it("an abort's reason: the run's error and the span event say it alike, an AbortError's own text included", async () => {
    for (const [reason, message] of [
      ["too slow", "The run was aborted: too slow"],
      [new DOMException("dom", "AbortError"), "The run was aborted: dom"],
    ] as const) {
      exporter.reset();
      const agent = tracedAgent({ provider: scriptedModel([[script.text("Once"), script.hang()]]) });
      const run = agent.prompt("story");
      agent.on("text_delta", () => run.abort(reason));
      const { error } = await run.result();
      expect(error?.message).toBe(message);
      const abort = spansNamed("invoke_agent")[0]?.events.find((event) => event.name === "agent_core.abort");
      expect(abort?.attributes?.["agent_core.reason"]).toBe(message);
    }
  });

  it("a model call aborted mid-stream ends its span with the error", async () => {
    const agent = tracedAgent({ provider: scriptedModel([[script.text("Thinking…"), script.hang()]]) });
    const run = agent.prompt("hang");
    setTimeout(() => agent.abort(), 10);
    await run.result();

    const [chat] = spansNamed("chat");
    expect(chat?.status.code).toBe(SpanStatusCode.ERROR);
    expect(chat?.attributes["error.type"]).toBe("aborted");
    expect(eventNames(chat as ReadableSpan)).toContain("exception");
  });

  it("steering is a span event of the turn", async () => {
    let agent: Agent | undefined;
    const steeredAdd = defineTool({
      name: "add",
      description: "Adds two numbers.",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => {
        if (a === 1) agent?.steer("Actually, use 16 instead of 15");
        return a + b;
      },
    });
    agent = tracedAgent({
      provider: scriptedModel([
        [
          script.toolCall("add", { a: 1, b: 2 }, { id: "c1" }),
          script.toolCall("add", { a: 3, b: 4 }, { id: "c2" }),
        ],
        [script.text("ok")],
      ]),
      tools: [steeredAdd],
    });
    await agent.prompt("add").result();

    const [turn] = spansNamed("agent_core.turn");
    const steering = turn?.events.find((event) => event.name === "agent_core.steering_applied");
    expect(steering?.attributes).toEqual({ "agent_core.messages": 1 });
    // The skipped call never ran: it has no span.
    expect(spansNamed("execute_tool").map((span) => span.attributes["gen_ai.tool.call.id"])).toEqual(["c1"]);
  });

  it("a retried model call is one chat span with an event per retry, and a logger that throws loses only its line", async () => {
    const busy = new APICallError({
      message: "HTTP 503",
      url: "http://127.0.0.1/v1/chat/completions",
      requestBodyValues: {},
      statusCode: 503,
      isRetryable: true,
    });
    const fails = () => {
      throw new Error("the log is down");
    };
    const agent = tracedAgent({
      provider: scriptedModel([[script.error(busy)], [script.error(busy)], [script.text("at last")]]),
      retry: { initialDelayMs: 1, maxDelayMs: 2 },
      logger: { error: fails, warn: fails, info: fails, debug: fails },
    });
    expect(await agent.prompt("hi").result()).toMatchObject({ stopReason: "completed", text: "at last" });

    const chats = spansNamed("chat");
    expect(chats).toHaveLength(1);
    const retries = chats[0]?.events.filter((event) => event.name === "agent_core.retry");
    expect(retries?.map((event) => event.attributes)).toEqual([
      {
        "agent_core.retry.number": 1,
        "agent_core.retry.delay_ms": 1,
        "error.type": "AI_APICallError",
        "agent_core.message": "HTTP 503",
      },
      {
        "agent_core.retry.number": 2,
        "agent_core.retry.delay_ms": 2,
        "error.type": "AI_APICallError",
        "agent_core.message": "HTTP 503",
      },
    ]);
    expect(chats[0]?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("a traced run streams its text and reasoning as an untraced one does", async () => {
    const reply = () => scriptedModel([[script.reasoning("Adding."), script.text("3")]]);
    const streamed = async (agent: Agent) => {
      const run = agent.prompt("1+2?");
      await run.result();
      const events = run.events;
      return events
        .filter((event) => event.type === "text_delta" || event.type === "thinking")
        .map((event) => event.type);
    };
    const untraced = await streamed(new Agent({ provider: reply() }));
    expect(untraced).toEqual(["thinking", "text_delta"]);
    expect(await streamed(tracedAgent({ provider: reply() }))).toEqual(untraced);
    expect(spansNamed("chat")).toHaveLength(1);
  });

  it("a tool error sets the tool span's status; the run goes on", async () => {
    const agent = tracedAgent({
      provider: scriptedModel([[script.toolCall("failing", {}, { id: "f1" })], [script.text("It failed.")]]),
      tools: [failing],
    });
    await agent.prompt("try").result();

    const [tool] = spansNamed("execute_tool");
    expect(tool?.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: expect.stringContaining("the disk is full"),
    });
    expect(tool?.attributes).toMatchObject({ "agent_core.tool.status": "error", "error.type": "error" });
    expect(spansNamed("invoke_agent")[0]?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("a tool span ends with the result the model sees, after afterToolCall changed it", async () => {
    const agent = tracedAgent({
      provider: scriptedModel([
        [script.toolCall("failing", {}, { id: "f1" }), script.toolCall("add", { a: 1, b: 2 }, { id: "a1" })],
        [script.text("done")],
      ]),
      tools: [failing, add],
      afterToolCall: ({ call }) =>
        call.name === "failing"
          ? { status: "ok", content: "recovered" }
          : { status: "error", content: "refused by policy" },
    });
    await agent.prompt("try").result();

    const [failed] = spansNamed("execute_tool failing");
    expect(failed?.status.code).toBe(SpanStatusCode.UNSET);
    expect(failed?.attributes["agent_core.tool.status"]).toBe("ok");
    const [added] = spansNamed("execute_tool add");
    expect(added?.status).toEqual({ code: SpanStatusCode.ERROR, message: "refused by policy" });
    expect(added?.attributes).toMatchObject({ "agent_core.tool.status": "error", "error.type": "error" });
  });

  it("a tool past its time limit: status error and a timeout span event", async () => {
    const agent = tracedAgent({
      provider: scriptedModel([
        [script.toolCall("slow_add", { a: 1, b: 2 }, { id: "t1" })],
        [script.text("slow")],
      ]),
      tools: [slowAdd],
      timeouts: { toolMs: 1 },
    });
    await agent.prompt("add").result();

    const [tool] = spansNamed("execute_tool");
    expect(tool?.attributes["agent_core.tool.status"]).toBe("timeout");
    expect(eventNames(tool as ReadableSpan)).toContain("agent_core.timeout");
    expect(tool?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("a tool cut short by the run's time limit: a timeout on its span, as a model call's", async () => {
    const untilAborted = defineTool({
      name: "until_aborted",
      description: "Runs until it is aborted.",
      inputSchema: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    const agent = tracedAgent({
      provider: scriptedModel([[script.toolCall("until_aborted", {}, { id: "u1" })], [script.text("never")]]),
      tools: [untilAborted],
      timeouts: { totalMs: 20 },
    });
    expect((await agent.prompt("wait").result()).stopReason).toBe("timeout");

    const [tool] = spansNamed("execute_tool");
    expect(eventNames(tool as ReadableSpan)).toEqual(["agent_core.timeout"]);
    expect(tool?.attributes).toMatchObject({ "agent_core.tool.status": "aborted", "error.type": "timeout" });
    expect(tool?.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: "The run took longer than 20 ms (timeouts.totalMs).",
    });
  });

  it("a tool that ignores the abort: its span ends, abandoned, before the run's", async () => {
    const deaf = defineTool({
      name: "deaf",
      description: "Never stops.",
      inputSchema: z.object({}),
      execute: () => {
        queueMicrotask(() => agent.abort("stop"));
        return new Promise(() => {});
      },
    });
    const agent = tracedAgent({
      provider: scriptedModel([[script.toolCall("deaf", {}, { id: "d1" })], [script.text("never")]]),
      tools: [deaf],
      limits: { abortGraceMs: 10 },
    });
    expect((await agent.prompt("go").result()).stopReason).toBe("aborted");
    await vi.waitFor(() => expect(spansNamed("execute_tool")).toHaveLength(1));

    // The exporter has the spans in the order they ended.
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual([
      "chat scripted-model",
      "execute_tool deaf",
      "agent_core.turn",
      "invoke_agent",
    ]);
    const [tool] = spansNamed("execute_tool");
    expect(eventNames(tool as ReadableSpan)).toEqual(["agent_core.abandoned"]);
    expect(tool?.attributes).toMatchObject({ "agent_core.tool.status": "aborted", "error.type": "aborted" });
    expect(tool?.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: "not completed: The run was aborted: stop",
    });
  });

  it("a client tool call that got no result: a timeout event on the turn; the run that goes on is no error", async () => {
    const readPage = defineTool({
      name: "read_page",
      description: "Reads the page.",
      inputSchema: z.object({}),
      execution: "client",
    });
    const agent = tracedAgent({
      provider: scriptedModel([[script.toolCall("read_page", {}, { id: "r1" })], [script.text("No page.")]]),
      tools: [readPage],
      timeouts: { clientToolMs: 1 },
    });
    expect((await agent.prompt("read").result()).stopReason).toBe("completed");

    const [turn] = spansNamed("agent_core.turn");
    expect(turn?.events.map((event) => [event.name, event.attributes?.["gen_ai.tool.call.id"]])).toEqual([
      ["agent_core.timeout", "r1"],
    ]);
    const [run] = spansNamed("invoke_agent");
    expect(run?.status).toEqual({ code: SpanStatusCode.UNSET });
    expect(eventNames(run as ReadableSpan)).toEqual([]);
    expect(run?.attributes["error.type"]).toBeUndefined();
    expect(run?.attributes["agent_core.stop_reason"]).toBe("completed");
  });

  it("a follow-up opens a second turn span, with a follow-up event", async () => {
    const agent = tracedAgent({ provider: scriptedModel([[script.text("one")], [script.text("two")]]) });
    agent.followUp("and then?");
    await agent.prompt("first").result();

    const turns = spansNamed("agent_core.turn");
    expect(turns.map((span) => span.attributes["agent_core.turn"])).toEqual([1, 2]);
    expect(eventNames(turns[1] as ReadableSpan)).toEqual(["agent_core.follow_up"]);
  });

  it("a stall nudge is a span event of the turn", async () => {
    const agent = tracedAgent({
      provider: scriptedModel([
        [script.toolCall("add", { a: 1, b: 2 }, { id: "n1" })],
        [script.toolCall("add", { a: 1, b: 2 }, { id: "n2" })],
        [script.text("3")],
      ]),
      tools: [add],
    });
    await agent.prompt("add").result();

    const [turn] = spansNamed("agent_core.turn");
    const nudge = turn?.events.find((event) => event.name === "agent_core.nudge");
    expect(nudge?.attributes).toMatchObject({ "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "n2" });
  });

  it("context truncation is a span event of the turn", async () => {
    const big = defineTool({
      name: "fetch",
      description: "Fetches a page.",
      inputSchema: z.object({ n: z.number() }),
      execute: ({ n }) => `${n}:${"x".repeat(4000)}`,
    });
    const agent = tracedAgent({
      provider: scriptedModel([
        [script.toolCall("fetch", { n: 1 })],
        [script.toolCall("fetch", { n: 2 })],
        [script.toolCall("fetch", { n: 3 })],
        [script.text("done")],
      ]),
      tools: [big],
      contextBudget: { maxTokens: 2500 },
    });
    await agent.prompt("fetch three pages").result();

    const [turn] = spansNamed("agent_core.turn");
    const truncated = turn?.events.filter((event) => event.name === "agent_core.context_truncated") ?? [];
    expect(truncated.length).toBeGreaterThan(0);
    expect(truncated[0]?.attributes).toEqual({
      "agent_core.dropped_messages": expect.any(Number),
      "agent_core.estimated_tokens": expect.any(Number),
    });
  });

  it("a model without a provider id runs traced as untraced, its call without gen_ai.provider.name", async () => {
    const model = scriptedModel([[script.text("hi")]]);
    // The AI SDK's models have one; a model of the app's own may not, and runs all the same.
    Object.defineProperty(model, "provider", { value: undefined });
    expect(await tracedAgent({ provider: model }).prompt("hi").result()).toMatchObject({
      stopReason: "completed",
      text: "hi",
    });
    const [chat] = spansNamed("chat");
    expect(chat?.attributes).toMatchObject({ "gen_ai.request.model": "scripted-model" });
    expect(chat?.attributes).not.toHaveProperty("gen_ai.provider.name");
  });

  it("a model whose modelId or provider getter throws ends the run as it would untraced", async () => {
    const throwingGetter = (field: string) => {
      const model = scriptedModel([[script.text("hi")]]);
      Object.defineProperty(model, field, {
        get: () => {
          throw new Error(`no ${field}`);
        },
      });
      // prepareStep hands the model over for one call: nothing read its fields before.
      return tracedAgent({ provider: scriptedModel([]), prepareStep: () => ({ model }) });
    };
    // The call reads the modelId: its failure is the provider's, as without tracing.
    expect(await throwingGetter("modelId").prompt("hi").result()).toMatchObject({
      stopReason: "error",
      error: { code: "provider_error", message: "The model call failed: no modelId" },
    });
    const [failed] = spansNamed("chat");
    expect(failed?.name).toBe("chat");
    expect(failed?.attributes).not.toHaveProperty("gen_ai.request.model");
    expect(failed?.status.code).toBe(SpanStatusCode.ERROR);
    // Nothing but the trace reads the provider: the call goes on, its span without the attribute.
    exporter.reset();
    expect(await throwingGetter("provider").prompt("hi").result()).toMatchObject({
      stopReason: "completed",
      text: "hi",
    });
    const [chat] = spansNamed("chat");
    expect(chat?.attributes).toMatchObject({ "gen_ai.request.model": "scripted-model" });
    expect(chat?.attributes).not.toHaveProperty("gen_ai.provider.name");
  });

  it("what a tool traces itself nests under the tool's span", async () => {
    const tracer = provider.getTracer("app");
    const traced = defineTool({
      name: "lookup",
      description: "Looks something up.",
      inputSchema: z.object({}),
      execute: () =>
        tracer.startActiveSpan("db.query", (span) => {
          span.end();
          return "found";
        }),
    });
    const agent = tracedAgent({
      provider: scriptedModel([[script.toolCall("lookup", {}, { id: "l1" })], [script.text("found")]]),
      tools: [traced],
    });
    await agent.prompt("look").result();

    const [query] = spansNamed("db.query");
    const [tool] = spansNamed("execute_tool");
    expect(query?.parentSpanContext?.spanId).toBe(tool?.spanContext().spanId);
  });
});

describe("enabling tracing", () => {
  it("by default the runs trace to the global tracer provider, once one is registered", async () => {
    const agent = () => new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    await agent().prompt("before").result();
    expect(exporter.getFinishedSpans()).toEqual([]);

    trace.setGlobalTracerProvider(provider);
    try {
      await agent().prompt("during").result();
      expect(outline(spanTree())).toEqual(["invoke_agent", "  agent_core.turn", "    chat scripted-model"]);
    } finally {
      trace.disable();
    }
    exporter.reset();
    await agent().prompt("after").result();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("noTracing turns it off for an agent", async () => {
    const container = rootContainer.createChildContainer();
    container.registerInstance(TRACING, noTracing);
    trace.setGlobalTracerProvider(provider);
    try {
      await new Agent({ provider: scriptedModel([[script.text("hi")]]), container }).prompt("hi").result();
    } finally {
      trace.disable();
    }
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("openTelemetryTracing refuses options, or a tracerProvider, of the wrong kind at once", () => {
    for (const options of [null, "global", { tracerProvider: null }, { tracerProvider: {} }]) {
      expect(() => openTelemetryTracing(options as never)).toThrow(InvalidConfigError);
    }
    expect(() => openTelemetryTracing({ tracerProvider: {} as never })).toThrow(
      "openTelemetryTracing(): tracerProvider must be an OpenTelemetry TracerProvider (with a getTracer method), or left out for the global one.",
    );
  });

  it("openTelemetryTracing refuses a key it does not know, and a tracerProvider that cannot be read, at once", () => {
    // A misspelt key would otherwise trace to the global provider, the one it was meant to avoid.
    expect(() => openTelemetryTracing({ tracerprovider: provider } as never)).toThrow(
      "Invalid openTelemetryTracing() options: tracerprovider is not an option (known: tracerProvider).",
    );
    const unreadable = {
      get tracerProvider(): never {
        throw new Error("no access");
      },
    };
    expect(() => openTelemetryTracing(unreadable)).toThrow(
      "Invalid openTelemetryTracing() options: tracerProvider could not be read: no access.",
    );
  });

  it("openTelemetryTracing refuses, at once, a tracerProvider whose getTracer throws or gives no tracer", () => {
    const throwing = {
      getTracer: () => {
        throw new Error("the SDK is shut down");
      },
    };
    const noTracer = { getTracer: () => undefined };
    const noStartSpan = { getTracer: () => ({}) };
    for (const tracerProvider of [throwing, noTracer, noStartSpan]) {
      expect(() => openTelemetryTracing({ tracerProvider } as never)).toThrow(InvalidConfigError);
    }
    expect(() => openTelemetryTracing({ tracerProvider: throwing } as never)).toThrow(
      "openTelemetryTracing(): tracerProvider.getTracer() threw: the SDK is shut down",
    );
  });

  it("a tracer whose startRun throws: the runs go on untraced, and the agent takes the next prompt", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.text("one")], [script.text("two")], [script.text("three")]]),
    });
    agent.container.registerInstance(TRACING, {
      startRun: () => {
        throw new Error("the tracer is broken");
      },
    });
    // The second prompt queues behind the first, the third comes after both ended.
    const [first, second] = [agent.prompt("a"), agent.prompt("b")];
    expect((await first.result()).text).toBe("one");
    expect((await second.result()).text).toBe("two");
    expect(agent.busy).toBe(false);
    expect((await agent.prompt("c").result()).stopReason).toBe("completed");
  });

  it("a span processor that throws as spans start or end: the runs end as they would untraced", async () => {
    // onStart throws for every span but the run's, so that the run is traced at all.
    const broken: SpanProcessor = {
      onStart(span) {
        if (failOn === "start" && (span as ReadableSpan).name !== "invoke_agent")
          throw new Error("processor down");
      },
      onEnd() {
        if (failOn === "end") throw new Error("processor down");
      },
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    let failOn: "start" | "end" = "end";
    // After the exporter, which still gets each span before the broken processor throws.
    const brokenProvider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter), broken],
    });
    let runs = 0;
    const counted = defineTool({
      name: "add",
      description: "Adds two numbers.",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => {
        runs += 1;
        return a + b;
      },
    });
    for (const failing of ["end", "start"] as const) {
      failOn = failing;
      const container = rootContainer.createChildContainer();
      container.registerInstance(TRACING, openTelemetryTracing({ tracerProvider: brokenProvider }));
      const agent = new Agent({
        provider: scriptedModel([[script.toolCall("add", { a: 1, b: 2 })], [script.text("3")]]),
        tools: [counted],
        container,
      });
      expect(await agent.prompt("add").result()).toMatchObject({ stopReason: "completed", text: "3" });
    }
    expect(runs).toBe(2);
    // What ended is exported, each once (the run's span too, after its turn's end threw); what
    // could not start (the second run's turn and calls) is left out.
    expect(outline(spanTree())).toEqual([
      "invoke_agent",
      "  agent_core.turn",
      "    chat scripted-model",
      "    execute_tool add",
      "    chat scripted-model",
      "invoke_agent",
    ]);
  });

  it("a span that throws as the abort is recorded: the run ends aborted, and the process goes on", async () => {
    // Node rethrows what an abort listener throws as an uncaught exception.
    const tracer = provider.getTracer("hostile");
    const hostile: TracerProvider = {
      getTracer: () => ({
        startSpan: (name, options, parent) =>
          Object.assign(tracer.startSpan(name, options, parent), {
            addEvent(): never {
              throw new Error("span down");
            },
          }),
        startActiveSpan: tracer.startActiveSpan.bind(tracer) as Tracer["startActiveSpan"],
      }),
    };
    const container = rootContainer.createChildContainer();
    container.registerInstance(TRACING, openTelemetryTracing({ tracerProvider: hostile }));
    const agent = new Agent({ provider: scriptedModel([[script.hang()]]), container });
    const run = agent.prompt("hang");
    setTimeout(() => agent.abort(), 5);
    expect((await run.result()).stopReason).toBe("aborted");
    expect(spansNamed("invoke_agent")[0]?.attributes["agent_core.stop_reason"]).toBe("aborted");
  });

  /** A tracer provider whose spans' `methods` throw, over the test's own provider. */
  function throwingSpans(...methods: string[]): TracerProvider {
    const tracer = provider.getTracer("hostile");
    const throwing = Object.fromEntries(
      methods.map((method) => [
        method,
        (): never => {
          throw new Error("span down");
        },
      ]),
    );
    return {
      getTracer: () => ({
        startSpan: (name, options, parent) =>
          Object.assign(tracer.startSpan(name, options, parent), throwing),
        startActiveSpan: tracer.startActiveSpan.bind(tracer) as Tracer["startActiveSpan"],
      }),
    };
  }

  it("a run span whose setAttributes throws as the run starts is ended: the run goes on untraced", async () => {
    const container = rootContainer.createChildContainer();
    container.registerInstance(
      TRACING,
      openTelemetryTracing({ tracerProvider: throwingSpans("setAttributes") }),
    );
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]), container });
    expect((await agent.prompt("hi").result()).stopReason).toBe("completed");
    expect(outline(spanTree())).toEqual(["invoke_agent"]);
  });

  it("a run span whose recordException throws still gets the failure's error.type and status", async () => {
    const container = rootContainer.createChildContainer();
    container.registerInstance(
      TRACING,
      openTelemetryTracing({ tracerProvider: throwingSpans("recordException") }),
    );
    const agent = new Agent({ provider: scriptedModel([[script.error("boom")]]), container });
    expect((await agent.prompt("hi").result()).stopReason).toBe("error");
    const [run] = spansNamed("invoke_agent");
    expect(run?.attributes["error.type"]).toBe("provider_error");
    expect(run?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("a run under an active span (an HTTP request's) is its child", async () => {
    const agent = tracedAgent({ provider: scriptedModel([[script.text("hi")]]) });
    const request = provider.getTracer("app").startSpan("POST /runs");
    await context.with(trace.setSpan(context.active(), request), () => agent.prompt("hi").result());
    request.end();
    expect(outline(spanTree())).toEqual([
      "POST /runs",
      "  invoke_agent",
      "    agent_core.turn",
      "      chat scripted-model",
    ]);
  });
});
