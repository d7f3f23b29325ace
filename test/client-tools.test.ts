import "@agent-core/agentic";
import {
  Agent,
  type AgentEvent,
  ClientToolError,
  defineTool,
  InvalidConfigError,
  type ToolResultMessage,
  validateTranscript,
} from "@agent-core/core";
import { planExecute } from "@agent-core/plan-execute";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { calculator } from "./fixtures.js";

// Client-executed tools in process: the run announces the call and waits for
// `agent.submitToolResult()`; its deadline, the run's abort and bad arguments end the wait.

const readPage = defineTool({
  name: "read_page",
  description: "Reads the text of the user's page",
  inputSchema: z.object({ selector: z.string() }),
  execution: "client",
});

/** Answers every client call of the agent with `answer(toolName, args)` when its `tool_call` arrives. */
function answerClientCalls(agent: Agent, answer: (toolName: string, args: unknown) => unknown): AgentEvent[] {
  const heard: AgentEvent[] = [];
  agent.on("*", (event) => {
    heard.push(event);
    if (event.type === "tool_call" && event.execution === "client")
      queueMicrotask(() =>
        agent.submitToolResult(event.toolCallId, { result: answer(event.toolName, event.args) }),
      );
  });
  return heard;
}

describe("defineTool with execution: client", () => {
  it("has no execute, and refuses one", () => {
    expect(readPage.execution).toBe("client");
    expect(readPage.execute).toBeUndefined();
    expect(() =>
      defineTool({
        name: "x",
        description: "x",
        inputSchema: z.object({}),
        execution: "client",
        execute: () => 1,
      } as never),
    ).toThrow(InvalidConfigError);
    expect(() =>
      defineTool({ name: "x", description: "x", inputSchema: z.object({}), execution: "browser" } as never),
    ).toThrow(/execution must be "server" or "client", got "browser"/);
  });
});

describe("a run that reaches a client tool", () => {
  it("waits for the submitted result, then goes on with it", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
        [script.text("The title is Hello.")],
      ]),
      tools: [readPage],
    });
    const heard = answerClientCalls(
      agent,
      (_name, args) => `text of ${(args as { selector: string }).selector}`,
    );
    const result = await agent.prompt("What is the title?").result();
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("The title is Hello.");
    const call = heard.find((event) => event.type === "tool_call");
    expect(call).toMatchObject({ toolCallId: "c1", toolName: "read_page", execution: "client" });
    expect(heard.find((event) => event.type === "tool_result")).toMatchObject({
      toolCallId: "c1",
      status: "ok",
      result: "text of h1",
    });
    expect(result.messages.find((m) => m.role === "toolResult")).toMatchObject({
      content: "text of h1",
      isError: false,
    });
    assertEventProtocol(heard);
    // Answered in time: no tool-timeout.
    expect(heard.filter((event) => event.type === "error")).toEqual([]);
    expect(agent.pendingClientTools).toEqual([]);
  });

  it("lists the calls it waits for, and an error outcome becomes an error result", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "p" }, { id: "c1" })],
        [script.text("ok")],
      ]),
      tools: [readPage],
    });
    agent.on("tool_call", () =>
      queueMicrotask(() => {
        expect(agent.pendingClientTools).toEqual([
          { toolCallId: "c1", toolName: "read_page", args: { selector: "p" } },
        ]);
        agent.submitToolResult("c1", { error: "no element matches p" });
      }),
    );
    const result = await agent.prompt("go").result();
    expect(result.messages.find((m) => m.role === "toolResult")).toMatchObject({
      status: "error",
      isError: true,
      content: "no element matches p",
    });
  });

  it("gives the model a text that says so for an error outcome without a message", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "p" }, { id: "c1" })],
        [script.text("ok")],
      ]),
      tools: [readPage],
    });
    agent.on("tool_call", () => queueMicrotask(() => agent.submitToolResult("c1", { error: " " })));
    const result = await agent.prompt("go").result();
    expect(result.messages.find((m) => m.role === "toolResult")).toMatchObject({
      status: "error",
      content: "The client tool failed without a message.",
    });
  });

  it("refuses a result for a call that does not wait: unknown, answered twice, or after the run", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "p" }, { id: "c1" })],
        [script.text("ok")],
      ]),
      tools: [readPage],
    });
    expect(() => agent.submitToolResult("nope", { result: 1 })).toThrow(ClientToolError);
    const second: unknown[] = [];
    agent.on("tool_call", (event) =>
      queueMicrotask(() => {
        agent.submitToolResult(event.toolCallId, { result: "first" });
        try {
          agent.submitToolResult(event.toolCallId, { result: "second" });
        } catch (error) {
          second.push(error);
        }
      }),
    );
    const result = await agent.prompt("go").result();
    expect(second).toHaveLength(1);
    expect(second[0]).toBeInstanceOf(ClientToolError);
    expect(result.messages.find((m) => m.role === "toolResult")).toMatchObject({ content: "first" });
    expect(() => agent.submitToolResult("c1", { result: "late" })).toThrow(
      /No client tool call "c1" is waiting/,
    );
  });

  it("ends the call as timeout with a tool-timeout error event when nobody answers, and the run goes on", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "p" }, { id: "c1" })],
        [script.text("gave up")],
      ]),
      tools: [readPage],
      timeouts: { clientToolMs: 30 },
    });
    const heard: AgentEvent[] = [];
    agent.on("*", (event) => heard.push(event));
    const result = await agent.prompt("go").result();
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("gave up");
    const types = heard.map((event) => event.type);
    const resultAt = heard.findIndex((event) => event.type === "tool_result");
    expect(heard[resultAt]).toMatchObject({ status: "timeout" });
    expect(heard[resultAt + 1]).toMatchObject({ type: "error", code: "tool-timeout", toolCallId: "c1" });
    expect(types.at(-1)).toBe("agent_end");
    assertEventProtocol(heard);
    expect(validateTranscript(result.messages)).toEqual([]);
    expect(agent.pendingClientTools).toEqual([]);
    expect(() => agent.submitToolResult("c1", { result: "too late" })).toThrow(ClientToolError);
  });

  it("stops waiting when the run is aborted: the call ends aborted and takes no result", async () => {
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("read_page", { selector: "p" }, { id: "c1" })]]),
      tools: [readPage],
    });
    agent.on("tool_call", () => queueMicrotask(() => agent.abort()));
    const result = await agent.prompt("go").result();
    expect(result.stopReason).toBe("aborted");
    expect(result.messages.find((m) => m.role === "toolResult")).toMatchObject({ status: "aborted" });
    expect(agent.pendingClientTools).toEqual([]);
  });

  it("never asks the client with arguments that fail the schema", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: 5 }, { id: "c1" })],
        [script.text("ok")],
      ]),
      tools: [readPage],
    });
    let asked = 0;
    const announced: unknown[] = [];
    agent.on("tool_call", (event) => {
      announced.push(event.execution);
      queueMicrotask(() => {
        asked += agent.pendingClientTools.length;
      });
    });
    const result = await agent.prompt("go").result();
    // Not announced as a client call either: no client may run it.
    expect(announced).toEqual([undefined]);
    expect(asked).toBe(0);
    expect(result.messages.find((m) => m.role === "toolResult")).toMatchObject({ status: "error" });
  });

  it("announces a call it will not wait for (skipped by steering) without execution: client", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("read_page", { selector: "a" }, { id: "c1" }),
          script.toolCall("read_page", { selector: "b" }, { id: "c2" }),
        ],
        [script.text("ok")],
      ]),
      tools: [readPage],
    });
    const calls: { id: string; execution: unknown }[] = [];
    agent.on("tool_call", (event) => {
      calls.push({ id: event.toolCallId, execution: event.execution });
      if (event.toolCallId === "c1")
        queueMicrotask(() => {
          agent.steer("never mind");
          agent.submitToolResult("c1", { result: "A" });
        });
    });
    const result = await agent.prompt("go").result();
    expect(calls).toEqual([
      { id: "c1", execution: "client" },
      { id: "c2", execution: undefined },
    ]);
    expect(
      result.messages.filter((m) => m.role === "toolResult").map((m) => (m as ToolResultMessage).status),
    ).toEqual(["ok", "skipped"]);
  });

  it("waits for several client calls at once in parallel execution, mixed with a server tool", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("read_page", { selector: "a" }, { id: "c1" }),
          script.toolCall("calculator", { a: 1, b: 2 }, { id: "s1" }),
          script.toolCall("read_page", { selector: "b" }, { id: "c2" }),
        ],
        [script.text("done")],
      ]),
      tools: [readPage, calculator],
      toolExecution: "parallel",
    });
    const waitingTogether: number[] = [];
    agent.on("tool_call", (event) => {
      if (event.toolCallId !== "c2") return;
      queueMicrotask(() => {
        waitingTogether.push(agent.pendingClientTools.length);
        // Answered out of order: the history keeps call order.
        agent.submitToolResult("c2", { result: "B" });
        agent.submitToolResult("c1", { result: "A" });
      });
    });
    const result = await agent.prompt("go").result();
    expect(waitingTogether).toEqual([2]);
    const results = result.messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.content])).toEqual([
      ["c1", "A"],
      ["s1", '{"result":3}'],
      ["c2", "B"],
    ]);
  });

  it("works the same inside a plan-execute wave", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.text(
            JSON.stringify({
              steps: [
                { tool: "read_page", args: { selector: "h1" } },
                { tool: "calculator", args: { a: 2, b: 3 } },
              ],
            }),
          ),
        ],
        [script.text("Read it and summed it.")],
      ]),
      tools: [readPage, calculator],
      orchestrator: planExecute(),
    });
    const heard = answerClientCalls(agent, () => "Hello");
    const result = await agent.prompt("go").result();
    expect(result.stopReason).toBe("completed");
    expect(heard.filter((event) => event.type === "plan_step_end").map((event) => event.result)).toContain(
      "Hello",
    );
    assertEventProtocol(heard);
  });
});

describe('clientTools: "suspend"', () => {
  const twoReads = () =>
    scriptedModel([
      [
        script.toolCall("read_page", { selector: "a" }, { id: "c1" }),
        script.toolCall("calculator", { a: 1, b: 2 }, { id: "s1" }),
        script.toolCall("read_page", { selector: "b" }, { id: "c2" }),
      ],
      [script.text("done")],
    ]);

  it("ends the run as awaiting_client_tool with the calls open, and resumes once every call has its result", async () => {
    const model = twoReads();
    const agent = new Agent({ provider: model, tools: [readPage, calculator], clientTools: "suspend" });
    const heard: AgentEvent[] = [];
    agent.on("*", (event) => heard.push(event));
    const first = await agent.prompt("go").result();
    expect(first.stopReason).toBe("awaiting_client_tool");
    expect(first.pendingClientTools).toEqual([
      { toolCallId: "c1", toolName: "read_page", args: { selector: "a" } },
      { toolCallId: "c2", toolName: "read_page", args: { selector: "b" } },
    ]);
    expect(heard.at(-1)).toMatchObject({
      type: "agent_end",
      stopReason: "awaiting_client_tool",
      pendingClientTools: first.pendingClientTools,
    });
    // A run that waits has not failed: no error event, no error.
    expect(heard.filter((event) => event.type === "error")).toEqual([]);
    expect(first.error).toBeUndefined();
    // Nothing ran: the server tool waits with the batch, so no result gets ahead of an open call.
    expect(heard.filter((event) => event.type === "tool_call")).toEqual([]);
    // The calls stay open in the history until their results arrive.
    expect(validateTranscript(first.messages)).toEqual([expect.stringContaining("c1")]);
    expect(agent.pendingClientTools.map((call) => call.toolCallId)).toEqual(["c1", "c2"]);

    expect(agent.submitToolResult("c2", { result: "B" })).toBeUndefined();
    expect(() => agent.submitToolResult("c2", { result: "again" })).toThrow(ClientToolError);
    expect(agent.pendingClientTools.map((call) => call.toolCallId)).toEqual(["c1"]);
    const resumed = agent.submitToolResult("c1", { error: "no such element" });
    expect(resumed).toBeDefined();
    const second = await resumed?.result();
    expect(second?.stopReason).toBe("completed");
    const results = (second?.messages ?? []).filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.status, m.content])).toEqual([
      ["c1", "error", "no such element"],
      ["s1", "ok", '{"result":3}'],
      ["c2", "ok", "B"],
    ]);
    // The resumed run announces the client calls as answered already: none says execution: client.
    const resumedCalls = (resumed?.events ?? []).filter((event) => event.type === "tool_call");
    expect(resumedCalls.map((event) => event.execution)).toEqual([undefined, undefined, undefined]);
    expect(validateTranscript(second?.messages ?? [])).toEqual([]);
    expect(model.doStreamCalls).toHaveLength(2);
  });

  it("fails the unanswered calls when a new prompt goes on, as approvals are denied", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "a" }, { id: "c1" })],
        [script.text("moving on")],
      ]),
      tools: [readPage],
    });
    const first = await agent.prompt("go", { clientTools: "suspend" }).result();
    expect(first.stopReason).toBe("awaiting_client_tool");
    const second = await agent.prompt("something else").result();
    expect(second.stopReason).toBe("completed");
    expect(second.messages.find((m) => m.role === "toolResult")).toMatchObject({
      status: "error",
      content: "no result arrived before the conversation went on",
    });
    expect(validateTranscript(second.messages)).toEqual([]);
  });

  it("keeps the prompt's mode and time limits in the run that resumes the batch", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "a" }, { id: "c1" })],
        [script.toolCall("read_page", { selector: "b" }, { id: "c2" })],
        [script.delay(200), script.text("never")],
      ]),
      tools: [readPage],
    });
    const first = await agent.prompt("go", { clientTools: "suspend", timeouts: { totalMs: 100 } }).result();
    expect(first.stopReason).toBe("awaiting_client_tool");
    // Suspends again at the next client call, where the agent's own mode ("wait") would wait.
    const second = await agent.submitToolResult("c1", { result: "A" })?.result();
    expect(second?.stopReason).toBe("awaiting_client_tool");
    expect(second?.pendingClientTools?.map((call) => call.toolCallId)).toEqual(["c2"]);
    const third = await agent.submitToolResult("c2", { result: "B" })?.result();
    expect(third?.stopReason).toBe("timeout");
  });

  it("is refused as a setting unless it is wait or suspend", () => {
    expect(() => new Agent({ clientTools: "later" as never })).toThrow(/clientTools/);
    const agent = new Agent({ provider: scriptedModel([[script.text("x")]]) });
    expect(() => agent.prompt("x", { clientTools: "never" as never })).toThrow(/clientTools/);
  });

  it("does not suspend for a client call beforeToolCall blocked or a person denied: it gets its result", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("read_page", { selector: "a" }, { id: "c1" }),
          script.toolCall("read_page", { selector: "b" }, { id: "c2" }),
        ],
        [script.text("done")],
      ]),
      tools: [readPage],
      clientTools: "suspend",
      beforeToolCall: ({ call }) =>
        call.id === "c1" ? { block: "not this one" } : { requireApproval: true, reason: "reads the page" },
    });
    const first = await agent.prompt("go").result();
    expect(first.stopReason).toBe("awaiting_approval");
    const resumed = await agent.deny("c2", "no")?.result();
    // Both refused: nothing left to wait for, so the batch ends without suspending for the client.
    expect(resumed?.stopReason).toBe("completed");
    const results = (resumed?.messages ?? []).filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.status])).toEqual([
      ["c1", "denied"],
      ["c2", "denied"],
    ]);
  });

  it("suspends for an approved client call once approvals are decided", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [script.toolCall("read_page", { selector: "a" }, { id: "c1" })],
        [script.text("ok")],
      ]),
      tools: [readPage],
      clientTools: "suspend",
      beforeToolCall: () => ({ requireApproval: true }),
    });
    expect((await agent.prompt("go").result()).stopReason).toBe("awaiting_approval");
    const approved = await agent.approve("c1")?.result();
    expect(approved?.stopReason).toBe("awaiting_client_tool");
    expect(approved?.pendingClientTools?.map((call) => call.toolCallId)).toEqual(["c1"]);
    // The approval holds when the client's result resumes the batch: nobody is asked twice.
    const resumed = await agent.submitToolResult("c1", { result: "A" })?.result();
    expect(resumed?.stopReason).toBe("completed");
    expect(resumed?.text).toBe("ok");
  });

  it("keeps a batch's approvals when it suspends again for a client call beside them", async () => {
    const asked: string[] = [];
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("calculator", { a: 1, b: 2 }, { id: "s1" }),
          script.toolCall("read_page", { selector: "a" }, { id: "c1" }),
        ],
        [script.text("done")],
      ]),
      tools: [readPage, calculator],
      clientTools: "suspend",
      beforeToolCall: ({ call }) => {
        asked.push(call.id);
        return call.id === "s1" ? { requireApproval: true } : undefined;
      },
    });
    expect((await agent.prompt("go").result()).stopReason).toBe("awaiting_approval");
    // Decided: the batch now waits for the client call (which the approval does not decide).
    expect(await agent.approve("s1")?.result()).toMatchObject({ stopReason: "awaiting_client_tool" });
    const resumed = await agent.submitToolResult("c1", { result: "A" })?.result();
    expect(resumed?.stopReason).toBe("completed");
    const results = (resumed?.messages ?? []).filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.status])).toEqual([
      ["s1", "ok"],
      ["c1", "ok"],
    ]);
    expect(asked.filter((id) => id === "s1")).toHaveLength(1);
  });
});

describe("a new prompt while a batch waits for an approval, with a client call in it", () => {
  // Found by the race suite (client tools in its timelines): the resumed batch suspended again for
  // the client call the approval had held back, and the new prompt never reached the history.
  it("fails the held-back client call and goes on with the prompt", async () => {
    const model = scriptedModel([
      [
        script.toolCall("calculator", { a: 1, b: 2 }, { id: "s1" }),
        script.toolCall("read_page", { selector: "h1" }, { id: "c1" }),
      ],
      [script.text("Noted.")],
    ]);
    const agent = new Agent({
      provider: model,
      tools: [readPage, calculator],
      clientTools: "suspend",
      beforeToolCall: ({ call }) => (call.name === "calculator" ? { requireApproval: true } : undefined),
    });
    const first = await agent.prompt("add, then read").result();
    expect(first.stopReason).toBe("awaiting_approval");
    const next = await agent.prompt("never mind").result();
    expect(next.stopReason).toBe("completed");
    expect(next.text).toBe("Noted.");
    const results = next.messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.status, m.content])).toEqual([
      ["s1", "denied", expect.stringContaining("not approved before the conversation went on")],
      ["c1", "error", expect.stringContaining("no result arrived before the conversation went on")],
    ]);
    expect(next.messages.some((m) => m.role === "user" && m.content === "never mind")).toBe(true);
    expect(validateTranscript(next.messages)).toEqual([]);
  });
});

describe("what stays as it was for server tools", () => {
  it("a server tool that times out gets its timeout result and no error event", async () => {
    const slow = defineTool({
      name: "slow",
      description: "s",
      inputSchema: z.object({}),
      execute: () => new Promise((resolve) => setTimeout(resolve, 200)),
    });
    const agent = new Agent({
      provider: scriptedModel([[script.toolCall("slow", {}, { id: "s1" })], [script.text("ok")]]),
      tools: [slow],
      timeouts: { toolMs: 20 },
    });
    const heard: AgentEvent[] = [];
    agent.on("*", (event) => heard.push(event));
    const result = await agent.prompt("go").result();
    expect(result.stopReason).toBe("completed");
    expect(heard.find((event) => event.type === "tool_result")).toMatchObject({ status: "timeout" });
    expect(heard.filter((event) => event.type === "error")).toEqual([]);
  });

  it("a server call whose id was renamed says so, and never says execution: client", async () => {
    const agent = new Agent({
      provider: scriptedModel([
        [
          script.toolCall("calculator", { a: 1, b: 1 }, { id: "dup" }),
          script.toolCall("calculator", { a: 2, b: 2 }, { id: "dup" }),
        ],
        [script.text("ok")],
      ]),
      tools: [calculator],
    });
    const calls: AgentEvent[] = [];
    agent.on("tool_call", (event) => calls.push(event));
    await agent.prompt("go").result();
    expect(calls).toHaveLength(2);
    expect(calls[1]).toMatchObject({ originalToolCallId: "dup" });
    for (const call of calls) expect(call).not.toHaveProperty("execution");
  });
});
