import "@agent-core/agentic";
import { Agent, defineTool } from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import { jsonSchema, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";

// The history's message objects are shared with the app (getting-started.md, "History"):
// `agent.messages`, events, hooks and results hand out the history's own objects, to read. What
// the run itself hands to code that may change things (a tool's arguments) is a copy, and an app
// that changes a message anyway cannot crash the process or leave the agent busy.

const add = defineTool({
  name: "add",
  description: "Adds one.",
  inputSchema: z.object({ a: z.number() }),
  execute: ({ a }) => String(a + 1),
});

describe("the history's objects, shared", () => {
  it("agent.messages is a new array each time: growing it changes nothing", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")], [script.text("again")]]) });
    await agent.prompt("hello").result();
    agent.messages.push({ role: "user", content: "not kept" });
    agent.messages.length = 0;
    expect(agent.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect((await agent.prompt("once more").result()).stopReason).toBe("completed");
  });

  it("each read is a new array of the same objects: those of events and result.messages", async () => {
    const agent = new Agent({ provider: scriptedModel([[script.text("hi")]]) });
    let ended: unknown;
    agent.on("turn_end", (event) => {
      ended = event.message;
    });
    const result = await agent.prompt("hello").result();
    const [first, second] = [agent.messages, agent.messages];
    expect(first).not.toBe(second);
    expect(first[1]).toBe(second[1]);
    expect(first[1]).toBe(ended);
    expect(result.messages.at(-1)).toBe(first[1]);
  });

  it("a listener that replaces turn_end's content cannot crash the process or leave the agent busy", async () => {
    const listenerErrors: unknown[] = [];
    const agent = new Agent({
      provider: scriptedModel([[script.text("hi")]]),
      onListenerError: (error) => listenerErrors.push(error),
    });
    agent.on("turn_end", (event) => {
      (event.message as { content: unknown }).content = 42;
    });
    const result = await agent.prompt("hello").result();
    expect(result.stopReason).toBe("completed");
    expect(listenerErrors).toEqual([]);
    expect(agent.busy).toBe(false);
  });
});

describe("a tool's arguments are its own", () => {
  it("a tool whose schema passes the arguments through may change them: the history keeps what the model sent", async () => {
    const normalize = tool({
      description: "Sorts the list in place.",
      inputSchema: jsonSchema<{ items: string[] }>({
        type: "object",
        properties: { items: { type: "array", items: { type: "string" } } },
        required: ["items"],
      }),
      execute: async ({ items }) => items.sort().join(","),
    });
    const model = scriptedModel([
      [script.toolCall("normalize", { items: ["b", "a"] }, { id: "n1" })],
      [script.text("sorted")],
    ]);
    const agent = new Agent({ provider: model, tools: { normalize } });
    const run = agent.prompt("sort");
    const announced: unknown[] = [];
    for await (const event of run) if (event.type === "tool_call") announced.push(event.args);
    expect((await run.result()).stopReason).toBe("completed");
    const [, reply, answer] = agent.messages as [
      unknown,
      { content: { args: unknown }[] },
      { content: string },
    ];
    expect(answer.content).toBe("a,b");
    expect(reply.content[0]?.args).toEqual({ items: ["b", "a"] });
    expect(announced).toEqual([{ items: ["b", "a"] }]);
    // What the model reads next is the call as it made it.
    expect(JSON.stringify(model.prompts[1])).toContain('"items":["b","a"]');
  });

  it("a zod schema that passes a nested value through (z.any, z.unknown, a loose object) still gives the tool its own copy", async () => {
    const schemas = {
      any: z.object({ list: z.any() }),
      unknown: z.object({ list: z.array(z.unknown()) }),
      loose: z.looseObject({}),
    };
    for (const [name, inputSchema] of Object.entries(schemas)) {
      const sorter = defineTool({
        name: "sorter",
        description: "Sorts the list in place.",
        inputSchema,
        execute: (args) => {
          const { list } = args as { list: { n: number }[] };
          list.sort((a, b) => a.n - b.n);
          (list[0] as { n: number }).n = 0;
          return "sorted";
        },
      });
      const model = scriptedModel([
        [script.toolCall("sorter", { list: [{ n: 3 }, { n: 1 }] }, { id: "s1" })],
        [script.text("done")],
      ]);
      const agent = new Agent({ provider: model, tools: [sorter] });
      const announced: unknown[] = [];
      agent.on("tool_call", (event) => announced.push(event.args));
      expect((await agent.prompt("sort").result()).stopReason, name).toBe("completed");
      const [, reply] = agent.messages as [unknown, { content: { args: unknown }[] }];
      expect(reply.content[0]?.args, name).toEqual({ list: [{ n: 3 }, { n: 1 }] });
      expect(announced, name).toEqual([{ list: [{ n: 3 }, { n: 1 }] }]);
      expect(JSON.stringify(model.prompts[1]), name).toContain('"list":[{"n":3},{"n":1}]');
    }
  });

  it("a zod-checked tool gets zod's copy, and its result's details stay the tool's own object", async () => {
    const record = { visits: 0 };
    const lookup = defineTool({
      name: "lookup",
      description: "Returns the cached record.",
      inputSchema: z.object({ key: z.string() }),
      execute: (args) => {
        (args as { key: string }).key = "changed";
        record.visits += 1;
        return record;
      },
    });
    const model = scriptedModel([
      [script.toolCall("lookup", { key: "a" }, { id: "l1" })],
      [script.text("done")],
    ]);
    const agent = new Agent({ provider: model, tools: [lookup, add] });
    expect((await agent.prompt("look").result()).stopReason).toBe("completed");
    const [, reply, answer] = agent.messages as [
      unknown,
      { content: { args: unknown }[] },
      { details: unknown },
    ];
    expect(reply.content[0]?.args).toEqual({ key: "a" });
    expect(answer.details).toBe(record);
  });
});
