import "@agent-core/agentic";
import {
  Agent,
  type AgentConfig,
  type AgentMessage,
  defineTool,
  type LlmMessage,
  type RunResult,
} from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { unhandledRejectionsOf } from "./unhandled-rejections.js";

// What a hook returns is held to its type (limits-and-safety.md, "Hooks"): a wrong value fails the
// hook with a message naming it, as a throw would, instead of a TypeError from deep inside the run,
// a message silently dropped, or a batch held for an approval nobody asked for.

const add = defineTool({
  name: "add",
  description: "Adds one.",
  inputSchema: z.object({ a: z.number() }),
  execute: ({ a }) => String(a + 1),
});

async function runWith(config: Partial<AgentConfig>) {
  const model = scriptedModel([[script.toolCall("add", { a: 1 }, { id: "c1" })], [script.text("2")]]);
  const agent = new Agent({ provider: model, tools: [add], ...config });
  const run = agent.prompt("add one");
  for await (const _event of run) {
    // drained
  }
  return { agent, result: await run.result(), model };
}

/** The check of the call c1 failed: it was answered with an error, never run, and no approval waits. */
function expectAnsweredNotRun(agent: Agent, result: RunResult, ran: number): void {
  expect(ran).toBe(0);
  expect(agent.pendingApprovals).toEqual([]);
  expect(result.messages.find((message) => message.role === "toolResult")).toMatchObject({
    toolCallId: "c1",
    isError: true,
  });
}

describe("transformContext, convertToLlm and prepareStep's messages", () => {
  const note: AgentMessage = { role: "note", text: "for the app only" };
  for (const [name, config, says] of [
    [
      "transformContext gives no array",
      { transformContext: () => 42 },
      "transformContext returned an invalid result: expected an array of messages, got number.",
    ],
    [
      "transformContext gives null",
      { transformContext: () => null },
      "expected an array of messages, got null",
    ],
    ["transformContext gives [42]", { transformContext: () => [42] }, "element 0 is no message"],
    [
      "transformContext gives a user message without content",
      { transformContext: (messages: AgentMessage[]) => [...messages, { role: "user" }] },
      "element 1 is no message: content:",
    ],
    [
      "convertToLlm gives a promise",
      { convertToLlm: async (messages: AgentMessage[]) => messages },
      "convertToLlm returned an invalid result: expected an array of messages, got a promise",
    ],
    [
      "convertToLlm passes a custom message on",
      {
        transformContext: (messages: AgentMessage[]) => [note, ...messages],
        convertToLlm: (messages: AgentMessage[]) => messages,
      },
      'convertToLlm returned an invalid result: element 0 has role "note"',
    ],
    [
      "prepareStep's messages hold a broken one",
      {
        prepareStep: ({ messages }: { messages: AgentMessage[] }) => ({
          messages: [...messages, { role: "assistant", content: "hi" }],
        }),
      },
      "prepareStep returned an invalid result: messages[1] is no message: content:",
    ],
  ] as const) {
    it(`${name}: the hook fails, naming it; no model call is made and the agent takes the next prompt`, async () => {
      const { agent, result, model } = await runWith(config as unknown as Partial<AgentConfig>);
      expect(result.stopReason).toBe("error");
      expect(result.error?.code).toBe("orchestrator_error");
      expect(result.error?.message).toContain(says);
      expect(model.doStreamCalls).toHaveLength(0);
      expect(result.messages.map((message) => message.role)).toEqual(["user"]);
      expect(agent.busy).toBe(false);
    });
  }

  it("a promise that rejects, from convertToLlm or as prepareStep's messages: the hook fails, and no rejection goes unhandled", async () => {
    const rejected = () => Promise.reject(new Error("the converter is down"));
    for (const [config, says] of [
      [
        { convertToLlm: rejected },
        "convertToLlm returned an invalid result: expected an array of messages, got a promise",
      ],
      [
        { prepareStep: () => ({ messages: rejected() }) },
        "prepareStep returned an invalid result: messages must be an array (of messages, not a promise of them).",
      ],
    ] as const) {
      let result: RunResult | undefined;
      const unhandled = await unhandledRejectionsOf(async () => {
        ({ result } = await runWith(config as unknown as Partial<AgentConfig>));
      });
      expect(unhandled).toEqual([]);
      expect(result?.error?.message).toContain(says);
    }
  });

  it("a stage that keeps, drops and adds messages passes; custom messages stay out of the model's prompt", async () => {
    const summary: AgentMessage = { role: "user", content: "Summary: the user wants a sum." };
    const { result, model } = await runWith({
      transformContext: (messages) => [note, summary, ...messages],
      convertToLlm: (messages) => messages.filter((message) => message.role !== "note") as LlmMessage[],
    });
    expect(result.stopReason).toBe("completed");
    expect(model.doStreamCalls[0]?.prompt.map((message) => message.role)).toEqual(["system", "user", "user"]);
  });
});

describe("hooks that change the messages they are given in place", () => {
  it("change a copy: convertToLlm's and shouldStop's pushes reach neither the history nor the next call", async () => {
    const reminder = (text: string): LlmMessage => ({ role: "user", content: text, timestamp: 1 });
    const { agent, result, model } = await runWith({
      // Adds a reminder to what the model gets, by pushing it onto its argument.
      convertToLlm: (messages) => {
        const llm = messages as LlmMessage[];
        llm.push(reminder("Be brief."));
        return llm;
      },
      shouldStop: ({ messages }) => {
        (messages as AgentMessage[]).push(reminder("from shouldStop"));
        return false;
      },
    });
    expect(result.stopReason).toBe("completed");
    expect(agent.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
    // Each call got its one reminder, last.
    expect(model.doStreamCalls.map((call) => call.prompt.map((message) => message.role))).toEqual([
      ["system", "user", "user"],
      ["system", "user", "assistant", "tool", "user"],
    ]);
  });
});

describe("beforeToolCall", () => {
  for (const [name, verdict, says] of [
    ["a number", 42, "expected an object or undefined, got number"],
    ["an empty object", {}, "expected { block: string } or { requireApproval: true }"],
    ["{ allow: true }", { allow: true }, "expected { block: string } or { requireApproval: true }"],
    ["a block that is no string", { block: 42 }, "block must be a string (the reason), got number"],
    [
      "requireApproval that is not true",
      { requireApproval: "yes" },
      "expected { block: string } or { requireApproval: true }",
    ],
    [
      "a reason that is no string",
      { requireApproval: true, reason: 5 },
      "reason must be a string, got number",
    ],
  ] as const) {
    it(`returns ${name}: the hook fails, naming it; the call is answered, not run, and no approval waits`, async () => {
      let ran = 0;
      const counted = defineTool({ ...add, execute: ({ a }) => String(a + ++ran) });
      const { agent, result } = await runWith({ tools: [counted], beforeToolCall: () => verdict as never });
      expect(result.stopReason).toBe("error");
      expect(result.error?.message).toContain(`beforeToolCall returned an invalid result: ${says}`);
      expectAnsweredNotRun(agent, result, ran);
    });
  }

  it("returns null or undefined: the call runs", async () => {
    for (const verdict of [null, undefined]) {
      const { result } = await runWith({ beforeToolCall: () => verdict as never });
      expect(result.stopReason).toBe("completed");
      expect(result.messages.find((message) => message.role === "toolResult")).toMatchObject({
        content: "2",
      });
    }
  });
});

describe("shouldStop", () => {
  for (const [name, verdict, says] of [
    ["a string", () => "no", '"no"'],
    ["a number", () => 1, "1"],
    ["an object", () => ({ stop: false }), "{"],
    ["null", () => null, "null"],
    ["a promise of a string", async () => "yes", '"yes"'],
  ] as const) {
    it(`returns ${name}: the hook fails, naming it and the value; no further model call is made`, async () => {
      const { result, model } = await runWith({ shouldStop: verdict as never });
      expect(result.stopReason).toBe("error");
      expect(result.error?.code).toBe("orchestrator_error");
      expect(result.error?.message).toContain(
        `shouldStop returned an invalid result: expected a boolean, got ${says}`,
      );
      expect(model.doStreamCalls).toHaveLength(1);
    });
  }

  it("returns true or a promise of true: the run ends as completed; false, a promise of false or nothing: it goes on", async () => {
    for (const verdict of [() => true, async () => true]) {
      const { result, model } = await runWith({ shouldStop: verdict });
      expect(result.stopReason).toBe("completed");
      expect(model.doStreamCalls).toHaveLength(1);
    }
    for (const verdict of [() => false, async () => false, () => undefined as never]) {
      const { result, model } = await runWith({ shouldStop: verdict });
      expect(result.stopReason).toBe("completed");
      expect(result.text).toBe("2");
      expect(model.doStreamCalls).toHaveLength(2);
    }
  });
});

describe("a tool's needsApproval function", () => {
  for (const [name, verdict, says] of [
    ["a string", "yes", '"yes"'],
    ["a number", 1, "1"],
    ["null", null, "null"],
  ] as const) {
    it(`returns ${name}: the check fails, naming the tool and the value; the call is answered, not run, and no approval waits`, async () => {
      let ran = 0;
      const counted = defineTool({
        ...add,
        execute: ({ a }) => String(a + ++ran),
        needsApproval: () => verdict as never,
      });
      const { agent, result } = await runWith({ tools: [counted] });
      expect(result.stopReason).toBe("error");
      expect(result.error?.code).toBe("orchestrator_error");
      expect(result.error?.message).toContain(
        `Tool "add": needsApproval returned an invalid result: expected a boolean, got ${says}.`,
      );
      expectAnsweredNotRun(agent, result, ran);
    });
  }

  it("returns nothing (a forgotten return, read as the AI SDK reads it): no approval is needed, the call runs", async () => {
    let ran = 0;
    const counted = defineTool({
      ...add,
      execute: ({ a }) => String(a + ++ran),
      needsApproval: () => undefined as never,
    });
    const { agent, result } = await runWith({ tools: [counted] });
    expect(result.stopReason).toBe("completed");
    expect(ran).toBe(1);
    expect(agent.pendingApprovals).toEqual([]);
  });
});
