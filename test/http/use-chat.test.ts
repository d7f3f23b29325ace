import "@agent-core/agentic";
import { Agent, type AgentConfig, defineTool } from "@agent-core/core";
import {
  createUseChatHandler,
  serveNode,
  type UseChatHandler,
  type UseChatHandlerOptions,
} from "@agent-core/http";
import { type ScriptedModel, script, scriptedModel } from "@agent-core/testing";
import {
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from "ai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { addNumbers } from "./harness.js";

// useChat against agent-core, in Node: the handler is driven with the requests DefaultChatTransport
// makes, and its answers are read with the AI SDK's own readUIMessageStream, as useChat reads them.

const getLocation = defineTool({
  name: "get_location",
  description: "Where the user is, from their browser",
  inputSchema: z.object({}),
  execution: "client",
});

const bookTable = defineTool({
  name: "book_table",
  description: "Books a table",
  inputSchema: z.object({ city: z.string(), people: z.number() }),
  needsApproval: true,
  execute: ({ city, people }) => `table for ${people} in ${city}`,
});

const handlers: UseChatHandler[] = [];
const refusedChunks: unknown[] = [];
afterEach(() => {
  for (const handler of handlers.splice(0)) handler.close();
  expect(refusedChunks.splice(0), "chunks the AI SDK's uiMessageChunkSchema refuses").toEqual([]);
});

function chatHandler(
  config: () => AgentConfig,
  options: Partial<UseChatHandlerOptions> = {},
): UseChatHandler {
  const handler = createUseChatHandler({
    agent: () => new Agent(config()),
    authorize: (request) => {
      const user = request.headers.get("x-user");
      return user === null ? undefined : { userId: user };
    },
    ...options,
  });
  handlers.push(handler);
  return handler;
}

/** The request DefaultChatTransport makes for a chat's messages. */
function chatRequest(
  body: Record<string, unknown>,
  { user = "alice", signal }: { user?: string; signal?: AbortSignal } = {},
): Request {
  return new Request("http://chat.test/api/chat", {
    method: "POST",
    headers: { "content-type": "application/json", "x-user": user },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });
}

/** The SSE body of a UI message stream, as DefaultChatTransport parses it, to chunks. */
function uiChunks(response: Response): ReadableStream<UIMessageChunk> {
  if (response.body === null) throw new Error(`no body (status ${response.status})`);
  let buffer = "";
  return response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new TransformStream<string, UIMessageChunk>({
      async transform(text, controller) {
        buffer += text;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const data = buffer.slice(0, end).replace(/^data: /, "");
          buffer = buffer.slice(end + 2);
          if (data !== "[DONE]") controller.enqueue(await checkedChunk(JSON.parse(data)));
        }
      },
    }),
  );
}

const chunkSchema = uiMessageChunkSchema();

/**
 * A chunk as DefaultChatTransport takes it: checked against the AI SDK's own chunk schema. One it
 * would refuse is kept for afterEach to fail the test with (a stream that errors leaves
 * readUIMessageStream waiting).
 */
async function checkedChunk(chunk: unknown): Promise<UIMessageChunk> {
  const checked = await chunkSchema.validate?.(chunk);
  if (checked === undefined || !checked.success) refusedChunks.push(chunk);
  return chunk as UIMessageChunk;
}

/** The assistant message a response streams (continuing `message` when given), once it ended. */
async function readAnswer(response: Response, message?: UIMessage): Promise<UIMessage> {
  expect(response.status).toBe(200);
  let last: UIMessage | undefined;
  for await (const snapshot of readUIMessageStream({
    stream: uiChunks(response),
    message,
    terminateOnError: true,
  }))
    last = snapshot;
  return last as UIMessage;
}

/** A page's chat as useChat keeps it: its messages, posted whole every time. */
class Page {
  readonly messages: UIMessage[] = [];
  #ids = 0;

  constructor(
    readonly handler: UseChatHandler,
    readonly id = "chat-1",
    readonly user = "alice",
  ) {}

  /** `sendMessage({ text })`: the new user message, then the answer. */
  async send(text: string): Promise<UIMessage> {
    this.messages.push({ id: `user-${++this.#ids}`, role: "user", parts: [{ type: "text", text }] });
    const answer = await readAnswer(await this.post());
    this.messages.push(answer);
    return answer;
  }

  /** What `sendAutomaticallyWhen` does once the last answer is complete: the answer goes on. */
  async resend(): Promise<UIMessage> {
    const answer = await readAnswer(await this.post(), this.messages.at(-1));
    this.messages[this.messages.length - 1] = answer;
    return answer;
  }

  post(signal?: AbortSignal): Promise<Response> {
    const body = { id: this.id, messages: this.messages, trigger: "submit-message" };
    return this.handler.fetch(chatRequest(body, { user: this.user, ...(signal ? { signal } : {}) }));
  }

  /** `addToolOutput`: the call's part gets its output. */
  addToolOutput(toolCallId: string, output: unknown): void {
    this.#updatePart(toolCallId, (part) => ({
      ...part,
      state: "output-available",
      output,
      errorText: undefined,
    }));
  }

  /** `addToolApprovalResponse`: the part's approval gets its answer. */
  addToolApprovalResponse(toolCallId: string, approved: boolean, reason?: string): void {
    this.#updatePart(toolCallId, (part) => ({
      ...part,
      state: "approval-responded",
      approval: { ...part.approval, approved, reason },
    }));
  }

  // biome-ignore lint/suspicious/noExplicitAny: a tool part of any tool, edited as useChat edits it
  #updatePart(toolCallId: string, update: (part: any) => any): void {
    const message = this.messages.at(-1) as UIMessage;
    message.parts = message.parts.map((part) =>
      isToolUIPart(part) && part.toolCallId === toolCallId ? update(part) : part,
    );
  }
}

/** The error a refused post answers with: `[status, code]`. */
async function refusal(response: Response): Promise<[number, string]> {
  return [response.status, (await response.json()).error.code];
}

const toolParts = (message: UIMessage) => message.parts.filter(isToolUIPart);
const textOf = (message: UIMessage) =>
  message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");

/** What the model read as tool results on its last call. */
function lastToolResults(model: ScriptedModel): unknown[] {
  const prompt = model.prompts.at(-1) ?? [];
  return prompt.flatMap((message) =>
    message.role === "tool" ? message.content.map((part) => (part as { output: unknown }).output) : [],
  );
}

describe("useChat against createUseChatHandler", () => {
  it("streams reasoning and text as a UI message stream, and keeps the conversation on the server", async () => {
    const model = scriptedModel([
      [script.reasoning("The user ", "greets."), script.text("Hello", ", Ada!")],
      [script.text("You said hi.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model })));
    page.messages.push({ id: "u1", role: "user", parts: [{ type: "text", text: "hi, I am Ada" }] });
    const response = await page.post();
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect((await response.clone().text()).endsWith("data: [DONE]\n\n")).toBe(true);
    const answer = await readAnswer(response);
    page.messages.push(answer);
    expect(answer.role).toBe("assistant");
    expect(answer.id).toMatch(/^msg-/);
    expect(answer.parts).toMatchObject([
      { type: "step-start" },
      { type: "reasoning", text: "The user greets.", state: "done" },
      { type: "text", text: "Hello, Ada!", state: "done" },
    ]);

    // The second post resends the whole chat; the model reads the server's history.
    const second = await page.send("what did I say?");
    expect(textOf(second)).toBe("You said hi.");
    const userTexts = (model.prompts.at(-1) ?? [])
      .filter((message) => message.role === "user")
      .map((message) => (message.content as { text: string }[])[0]?.text);
    expect(userTexts).toEqual(["hi, I am Ada", "what did I say?"]);
  });

  it("streams a server tool's input and output, each model call a step", async () => {
    const model = scriptedModel([
      [script.text("Adding."), script.toolCall("add", { a: 2, b: 3 }, { id: "a1" })],
      [script.text("2+3 = 5")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [addNumbers] })));
    const answer = await page.send("2+3?");
    expect(answer.parts.map((part) => part.type)).toEqual([
      "step-start",
      "text",
      "tool-add",
      "step-start",
      "text",
    ]);
    expect(toolParts(answer)[0]).toMatchObject({
      toolCallId: "a1",
      state: "output-available",
      input: { a: 2, b: 3 },
      output: 5,
    });
    expect(textOf(answer)).toBe("Adding.2+3 = 5");
  });

  it("a server tool's result that JSON rewrites (a Date) is checked as the page read it", async () => {
    const clock = defineTool({
      name: "clock",
      description: "The time",
      inputSchema: z.object({}),
      execute: () => ({ at: new Date(0), zone: undefined }),
    });
    const model = scriptedModel([
      [script.toolCall("clock", {}, { id: "c1" })],
      [script.text("Midnight.")],
      [script.text("Still midnight.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [clock] })));
    const answer = await page.send("what time is it?");
    expect(toolParts(answer)[0]).toMatchObject({
      state: "output-available",
      output: { at: "1970-01-01T00:00:00.000Z" },
    });
    // The page resends the output it read: the same as the server's, so the chat goes on.
    expect(textOf(await page.send("and now?"))).toBe("Still midnight.");
  });

  it("takes back the tool-call ids it streamed, whatever the provider made them: empty, or long", async () => {
    for (const id of ["", "c".repeat(300)]) {
      const model = scriptedModel([
        [script.toolCall("add", { a: 2, b: 3 }, { id })],
        [script.text("5")],
        [script.text("Still 5.")],
      ]);
      const page = new Page(chatHandler(() => ({ provider: model, tools: [addNumbers] })));
      const answer = await page.send("2+3?");
      expect(toolParts(answer)[0]).toMatchObject({ state: "output-available", output: 5 });
      expect(textOf(await page.send("and now?"))).toBe("Still 5.");
    }
  });

  it("a server tool that returns nothing gives its part the output null, which the AI SDK accepts", async () => {
    const ring = defineTool({
      name: "ring",
      description: "Rings a bell",
      inputSchema: z.object({}),
      execute: () => undefined,
    });
    const model = scriptedModel([
      [script.toolCall("ring", {}, { id: "r1" })],
      [script.text("Rung.")],
      [script.text("Rung again.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [ring] })));
    const answer = await page.send("ring the bell");
    expect(toolParts(answer)[0]).toMatchObject({ state: "output-available", output: null });
    expect(textOf(answer)).toBe("Rung.");
    expect(textOf(await page.send("again"))).toBe("Rung again.");
  });
  it("runs a client tool in the page: its output, posted with the chat, resumes the run", async () => {
    const model = scriptedModel([
      [script.text("Let me look."), script.toolCall("get_location", {}, { id: "loc1" })],
      [script.text("You are in Oslo.")],
    ]);
    const handler = chatHandler(() => ({ provider: model, tools: [getLocation] }));
    const page = new Page(handler);
    const first = await page.send("where am I?");
    expect(toolParts(first)).toEqual([
      expect.objectContaining({
        type: "tool-get_location",
        toolCallId: "loc1",
        state: "input-available",
        input: {},
      }),
    ]);
    // The server's run ended, suspended: nothing holds it while the page runs the tool.
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: page.messages })).toBe(false);
    page.addToolOutput("loc1", { city: "Oslo" });
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: page.messages })).toBe(true);

    const resumed = await page.resend();
    expect(resumed.id).toBe(first.id);
    expect(toolParts(resumed)[0]).toMatchObject({ state: "output-available", output: { city: "Oslo" } });
    expect(textOf(resumed)).toBe("Let me look.You are in Oslo.");
    expect(lastToolResults(model)).toEqual([{ type: "text", value: '{"city":"Oslo"}' }]);
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: page.messages })).toBe(false);
  });

  it("a client tool's error output reaches the model as the call's error", async () => {
    const model = scriptedModel([
      [script.toolCall("get_location", {}, { id: "loc1" })],
      [script.text("No luck.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [getLocation] })));
    await page.send("where am I?");
    const message = page.messages.at(-1) as UIMessage;
    message.parts = message.parts.map((part) =>
      isToolUIPart(part)
        ? { ...part, state: "output-error", errorText: "permission denied", output: undefined }
        : part,
    ) as UIMessage["parts"];
    const resumed = await page.resend();
    expect(toolParts(resumed)[0]).toMatchObject({ state: "output-error", errorText: "permission denied" });
    expect(JSON.stringify(lastToolResults(model))).toContain("permission denied");
  });

  it("an error output with an empty errorText reaches the model as a failure without a message, and the chat goes on", async () => {
    const model = scriptedModel([
      [script.toolCall("get_location", {}, { id: "loc1" })],
      [script.text("No luck.")],
      [script.text("Sure.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [getLocation] })));
    await page.send("where am I?");
    const message = page.messages.at(-1) as UIMessage;
    message.parts = message.parts.map((part) =>
      isToolUIPart(part) ? { ...part, state: "output-error", errorText: "", output: undefined } : part,
    ) as UIMessage["parts"];
    await page.resend();
    expect(lastToolResults(model)).toEqual([
      { type: "error-text", value: "The client tool failed without a message." },
    ]);
    expect(textOf(await page.send("thanks"))).toBe("Sure.");
  });

  describe("a tool that needs approval", () => {
    const booking = () =>
      scriptedModel([
        [script.toolCall("book_table", { city: "Oslo", people: 8 }, { id: "b1" })],
        [script.text("Done.")],
        [script.text("Anything else?")],
      ]);

    it("asks with an approval request; approved, the tool runs and the answer goes on", async () => {
      const model = booking();
      const page = new Page(chatHandler(() => ({ provider: model, tools: [bookTable] })));
      const first = await page.send("a table for 8 in Oslo");
      const [part] = toolParts(first);
      expect(part).toMatchObject({
        type: "tool-book_table",
        state: "approval-requested",
        input: { city: "Oslo", people: 8 },
        approval: { id: expect.any(String) },
      });
      expect(model.doStreamCalls).toHaveLength(1);
      page.addToolApprovalResponse("b1", true);
      expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: page.messages })).toBe(true);

      const resumed = await page.resend();
      expect(toolParts(resumed)[0]).toMatchObject({
        state: "output-available",
        output: "table for 8 in Oslo",
      });
      expect(textOf(resumed)).toBe("Done.");
      expect(textOf(await page.send("thanks"))).toBe("Anything else?");
    });

    it("denied, the tool does not run and the model reads the denial with its reason", async () => {
      const model = booking();
      const page = new Page(chatHandler(() => ({ provider: model, tools: [bookTable] })));
      await page.send("a table for 8 in Oslo");
      page.addToolApprovalResponse("b1", false, "too many people");
      const resumed = await page.resend();
      expect(toolParts(resumed)[0]).toMatchObject({
        state: "output-denied",
        approval: { approved: false, reason: "too many people" },
      });
      expect(JSON.stringify(lastToolResults(model))).toContain("too many people");
      // The whole chat, resent with the denied call, checks out: the conversation goes on.
      expect(textOf(await page.send("fine"))).toBe("Anything else?");
    });

    it("asked by beforeToolCall with a reason, the page's part holds it as approval.requestReason", async () => {
      const model = booking();
      const page = new Page(
        chatHandler(() => ({
          provider: model,
          tools: [bookTable],
          beforeToolCall: () => ({ requireApproval: true, reason: "a large party" }),
        })),
      );
      const first = await page.send("a table for 8 in Oslo");
      expect(toolParts(first)[0]).toMatchObject({
        state: "approval-requested",
        approval: { requestReason: "a large party" },
      });
    });

    it("approved, the batch's results stream before the next model call's step", async () => {
      const page = new Page(chatHandler(() => ({ provider: booking(), tools: [bookTable] })));
      await page.send("a table for 8 in Oslo");
      page.addToolApprovalResponse("b1", true);
      const types: string[] = [];
      for await (const chunk of uiChunks(await page.post())) types.push(chunk.type);
      expect(types).toEqual([
        "start",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
      ]);
    });

    it("denied without a reason, the model reads that the user denied it", async () => {
      const model = booking();
      const page = new Page(chatHandler(() => ({ provider: model, tools: [bookTable] })));
      const first = await page.send("a table for 8 in Oslo");
      expect(toolParts(first)[0]?.approval).not.toHaveProperty("requestReason");
      page.addToolApprovalResponse("b1", false);
      await page.resend();
      expect(lastToolResults(model)).toEqual([{ type: "error-text", value: "denied by the user" }]);
    });
  });
});

describe("a reply that waits on several calls", () => {
  it("answers posted one at a time: the run resumes with the last", async () => {
    const model = scriptedModel([
      [
        script.toolCall("get_location", {}, { id: "loc1" }),
        script.toolCall("get_location", {}, { id: "loc2" }),
      ],
      [script.text("Both known.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [getLocation] })));
    await page.send("where are we?");
    page.addToolOutput("loc1", "Oslo");
    const waiting = await page.resend();
    expect(toolParts(waiting).map((part) => part.state)).toEqual(["output-available", "input-available"]);
    expect(model.doStreamCalls).toHaveLength(1);
    page.addToolOutput("loc2", "Bergen");
    expect(textOf(await page.resend())).toBe("Both known.");
    expect(lastToolResults(model)).toEqual([
      { type: "text", value: "Oslo" },
      { type: "text", value: "Bergen" },
    ]);
  });

  it("a client call beside a call that needs approval: approval first, then the page's tool, then the batch", async () => {
    const model = scriptedModel([
      [
        script.toolCall("get_location", {}, { id: "loc1" }),
        script.toolCall("book_table", { city: "Oslo", people: 2 }, { id: "b1" }),
      ],
      [script.text("Booked where you are.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [getLocation, bookTable] })));
    const first = await page.send("book near me");
    // Nothing of the batch runs before it is decided: not even the page's tool.
    expect(toolParts(first).map((part) => [part.toolCallId, part.state])).toEqual([
      ["b1", "approval-requested"],
    ]);
    page.addToolApprovalResponse("b1", true);
    const decided = await page.resend();
    expect(toolParts(decided).map((part) => [part.toolCallId, part.state])).toEqual([
      ["b1", "approval-responded"],
      ["loc1", "input-available"],
    ]);
    page.addToolOutput("loc1", "Oslo");
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: page.messages })).toBe(true);
    const resumed = await page.resend();
    expect(toolParts(resumed).map((part) => [part.toolCallId, part.state])).toEqual([
      ["b1", "output-available"],
      ["loc1", "output-available"],
    ]);
    expect(textOf(resumed)).toBe("Booked where you are.");
  });

  it("a client tool that needs approval: approved, it is announced again for the page to run", async () => {
    const model = scriptedModel([
      [script.toolCall("get_location", {}, { id: "loc1" })],
      [script.text("Oslo it is.")],
    ]);
    const page = new Page(
      chatHandler(() => ({
        provider: model,
        tools: [getLocation],
        beforeToolCall: () => ({ requireApproval: true }),
      })),
    );
    await page.send("where am I?");
    page.addToolApprovalResponse("loc1", true);
    const approved = await page.resend();
    expect(toolParts(approved)[0]).toMatchObject({ state: "input-available", approval: { approved: true } });
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: page.messages })).toBe(false);
    page.addToolOutput("loc1", "Oslo");
    expect(textOf(await page.resend())).toBe("Oslo it is.");
  });
});

describe("a new message while calls wait", () => {
  it("settles them as a new prompt does: the page's old parts stay as they were, the model reads why", async () => {
    const model = scriptedModel([
      [script.toolCall("get_location", {}, { id: "loc1" })],
      [script.toolCall("book_table", { city: "Oslo", people: 2 }, { id: "b1" })],
      [script.text("Never mind the booking.")],
      [script.text("Bye.")],
    ]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [getLocation, bookTable] })));
    await page.send("where am I?");
    const moved = await page.send("forget it, book in Oslo");
    // The unanswered call failed on the server; the new answer does not announce it again.
    expect(toolParts(moved).map((part) => [part.toolCallId, part.state])).toEqual([
      ["b1", "approval-requested"],
    ]);
    expect(JSON.stringify(model.prompts.at(-1))).toContain(
      "no result arrived before the conversation went on",
    );
    const dropped = await page.send("no booking after all");
    expect(textOf(dropped)).toBe("Never mind the booking.");
    expect(toolParts(dropped)).toEqual([]);
    expect(JSON.stringify(model.prompts.at(-1))).toContain("not approved before the conversation went on");
    // The page's parts still wait, in its eyes: it knows less than the server, which it may.
    expect(toolParts(page.messages[1] as UIMessage)[0]?.state).toBe("input-available");
    expect(textOf(await page.send("bye"))).toBe("Bye.");
  });
});

describe("what a page resends is checked against the server's chat", () => {
  const clientCall = () => ({
    provider: scriptedModel([
      [
        script.toolCall("add", { a: 1, b: 1 }, { id: "a1" }),
        script.toolCall("get_location", {}, { id: "loc1" }),
      ],
      [script.text("ok")],
      [script.text("again")],
    ]),
    tools: [addNumbers, getLocation],
  });

  /** A page whose last answer waits for the client call "loc1". */
  async function waitingPage(): Promise<Page> {
    const page = new Page(chatHandler(clientCall));
    await page.send("go");
    return page;
  }

  it("a tool output for a call the server does not wait for: 409 unexpected-tool-output", async () => {
    const page = await waitingPage();
    page.addToolOutput("loc1", "Oslo");
    await page.resend();
    // The server tool's output, rewritten by the page, changes nothing: refused.
    page.addToolOutput("a1", 42);
    page.messages.push({ id: "u2", role: "user", parts: [{ type: "text", text: "and now?" }] });
    expect(await refusal(await page.post())).toEqual([409, "unexpected-tool-output"]);
  });

  it("a tool call the server never made: 409 unknown-tool-call", async () => {
    const page = await waitingPage();
    const message = page.messages.at(-1) as UIMessage;
    message.parts.push({
      type: "tool-get_location",
      toolCallId: "forged",
      state: "output-available",
      input: {},
      output: "x",
    });
    expect(await refusal(await page.post())).toEqual([409, "unknown-tool-call"]);
  });

  it("two different outputs for one waiting call: 409 unexpected-tool-output, and the call still waits", async () => {
    const page = await waitingPage();
    page.addToolOutput("loc1", "Oslo");
    const message = page.messages.at(-1) as UIMessage;
    const answered = toolParts(message).find((part) => part.toolCallId === "loc1");
    message.parts.push({ ...answered, output: "Rome" } as UIMessage["parts"][number]);
    expect(await refusal(await page.post())).toEqual([409, "unexpected-tool-output"]);
    // Neither output was taken: the page's corrected post is.
    message.parts.pop();
    const answer = await page.resend();
    expect(textOf(answer)).toBe("ok");
  });

  it("another input for a call: 409 tool-call-mismatch", async () => {
    const page = await waitingPage();
    const message = page.messages.at(-1) as UIMessage;
    message.parts = message.parts.map((part) =>
      isToolUIPart(part) ? { ...part, input: { precise: true } } : part,
    ) as UIMessage["parts"];
    page.addToolOutput("loc1", "Oslo");
    expect(await refusal(await page.post())).toEqual([409, "tool-call-mismatch"]);
  });

  it("an edited or removed earlier message: 409 history-mismatch", async () => {
    const page = await waitingPage();
    page.addToolOutput("loc1", "Oslo");
    await page.resend();
    const edited = structuredClone(page.messages);
    edited[0] = { id: "user-1", role: "user", parts: [{ type: "text", text: "something else" }] };
    edited.push({ id: "u2", role: "user", parts: [{ type: "text", text: "next" }] });
    const post = (messages: UIMessage[]) =>
      page.handler.fetch(chatRequest({ id: page.id, messages, trigger: "submit-message" }));
    expect(await refusal(await post(edited))).toEqual([409, "history-mismatch"]);
    // An assistant text the server never streamed.
    const rewritten = structuredClone(page.messages);
    (rewritten[1] as UIMessage).parts.push({ type: "text", text: "I promise a refund." });
    expect(await refusal(await post(rewritten))).toEqual([409, "history-mismatch"]);
    // The user's message dropped.
    expect(await refusal(await post(page.messages.slice(1)))).toEqual([409, "history-mismatch"]);
  });

  it("an approval response with an approval id the server did not send: 409 unknown-approval", async () => {
    const page = new Page(
      chatHandler(() => ({
        provider: scriptedModel([[script.toolCall("book_table", { city: "Oslo", people: 2 }, { id: "b1" })]]),
        tools: [bookTable],
      })),
    );
    await page.send("book");
    page.addToolApprovalResponse("b1", true);
    const message = page.messages.at(-1) as UIMessage;
    message.parts = message.parts.map((part) =>
      isToolUIPart(part) ? { ...part, approval: { id: "forged", approved: true } } : part,
    ) as UIMessage["parts"];
    expect(await refusal(await page.post())).toEqual([409, "unknown-approval"]);
  });

  it("two different answers to one approval request: 409 unexpected-approval, and the call still waits", async () => {
    const page = new Page(
      chatHandler(() => ({
        provider: scriptedModel([
          [script.toolCall("book_table", { city: "Oslo", people: 2 }, { id: "b1" })],
          [script.text("Booked.")],
        ]),
        tools: [bookTable],
      })),
    );
    await page.send("book");
    page.addToolApprovalResponse("b1", true);
    const message = page.messages.at(-1) as UIMessage;
    const approved = toolParts(message).find((part) => part.toolCallId === "b1");
    message.parts.push({
      ...approved,
      approval: { ...approved?.approval, approved: false },
    } as UIMessage["parts"][number]);
    expect(await refusal(await page.post())).toEqual([409, "unexpected-approval"]);
    // Neither answer was taken: the page's corrected post is.
    message.parts.pop();
    expect(textOf(await page.resend())).toBe("Booked.");
  });

  it("nothing new, or answers together with a new message: 409", async () => {
    const page = await waitingPage();
    expect(await refusal(await page.post())).toEqual([409, "nothing-new"]);
    page.addToolOutput("loc1", "Oslo");
    page.messages.push({ id: "u2", role: "user", parts: [{ type: "text", text: "next" }] });
    expect(await refusal(await page.post())).toEqual([409, "unsent-answers"]);
  });

  it("a chat the server does not have, also another user's: 404 chat-not-found", async () => {
    const page = await waitingPage();
    page.addToolOutput("loc1", "Oslo");
    const mallory = new Page(page.handler, page.id, "mallory");
    mallory.messages.push(...page.messages);
    expect(await refusal(await mallory.post())).toEqual([404, "chat-not-found"]);
    // The same chat id for another user is another chat.
    const fresh = new Page(page.handler, page.id, "mallory");
    expect(textOf(await fresh.send("hello"))).toBe("");
  });

  it("refuses what it does not do, and bad requests, with typed errors", async () => {
    const handler = chatHandler(clientCall, { maxBodyBytes: 2_000 });
    const message = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
    const post = (body: unknown, user?: string) =>
      handler.fetch(chatRequest(body as Record<string, unknown>, user === undefined ? {} : { user }));
    expect(
      await refusal(await post({ id: "c", messages: [message], trigger: "regenerate-message" })),
    ).toEqual([422, "unsupported-trigger"]);
    const file = { ...message, parts: [{ type: "file", mediaType: "image/png", url: "data:," }] };
    expect(await refusal(await post({ id: "c", messages: [file], trigger: "submit-message" }))).toEqual([
      422,
      "unsupported-part",
    ]);
    const system = { ...message, role: "system" };
    expect(await refusal(await post({ id: "c", messages: [system], trigger: "submit-message" }))).toEqual([
      400,
      "invalid-body",
    ]);
    expect(await refusal(await post({ id: "c", messages: [], trigger: "submit-message" }))).toEqual([
      400,
      "invalid-body",
    ]);
    let deep: unknown = [];
    for (let depth = 0; depth < 100; depth++) deep = [deep];
    const nested = { ...message, parts: [{ type: "data-x", data: deep }] };
    expect(await refusal(await post({ id: "c", messages: [nested], trigger: "submit-message" }))).toEqual([
      400,
      "invalid-body",
    ]);
    const big = { ...message, parts: [{ type: "text", text: "x".repeat(3_000) }] };
    expect(await refusal(await post({ id: "c", messages: [big], trigger: "submit-message" }))).toEqual([
      413,
      "body-too-large",
    ]);
    const anonymous = new Request("http://chat.test/api/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(await refusal(await handler.fetch(anonymous))).toEqual([401, "unauthorized"]);
    const get = new Request("http://chat.test/api/chat", { headers: { "x-user": "alice" } });
    expect(await refusal(await handler.fetch(get))).toEqual([405, "method-not-allowed"]);
  });
});

describe("the other refusals the docs name", () => {
  it("names the field that is wrong in a malformed part, not its type", async () => {
    const handler = chatHandler(() => ({ provider: scriptedModel([[script.text("one")]]) }));
    const issuesOf = async (part: Record<string, unknown>) => {
      const messages = [{ id: "u1", role: "user", parts: [part] }];
      const response = await handler.fetch(chatRequest({ id: "c", messages, trigger: "submit-message" }));
      expect(response.status).toBe(400);
      return ((await response.json()).error.issues as { path: string }[]).map((issue) => issue.path);
    };
    expect(await issuesOf({ type: "text", text: 5 })).toEqual(["messages.0.parts.0.text"]);
    expect(await issuesOf({ type: "text" })).toEqual(["messages.0.parts.0.text"]);
    const call = { type: "tool-get_location", toolCallId: "c1", state: "output-error", input: {} };
    expect(await issuesOf({ ...call, errorText: 5 })).toEqual(["messages.0.parts.0.errorText"]);
    expect(await issuesOf({ ...call, state: "done" })).toEqual(["messages.0.parts.0.state"]);
    expect(await issuesOf({ type: "" })).toEqual(["messages.0.parts.0.type"]);
  });

  it("empty-message, invalid-approval, invalid-json, unsupported-media-type, rate-limited", async () => {
    const handler = chatHandler(
      () => ({
        provider: scriptedModel([[script.toolCall("book_table", { city: "Oslo", people: 8 }, { id: "b1" })]]),
        tools: [bookTable],
      }),
      { rateLimit: { points: 5, durationSec: 60 } },
    );
    const blank = { id: "u0", role: "user", parts: [{ type: "text", text: "  " }] };
    const post = (body: unknown) => handler.fetch(chatRequest(body as Record<string, unknown>));
    expect(await refusal(await post({ id: "c", messages: [blank], trigger: "submit-message" }))).toEqual([
      422,
      "empty-message",
    ]);
    // A page whose approval response says neither yes nor no.
    const page = new Page(handler);
    await page.send("a table for 8");
    const last = page.messages.at(-1) as UIMessage;
    last.parts = last.parts.map((part) =>
      isToolUIPart(part) ? ({ ...part, state: "approval-responded" } as typeof part) : part,
    );
    expect(await refusal(await page.post())).toEqual([422, "invalid-approval"]);
    const raw = (body: string, type: string) =>
      handler.fetch(
        new Request("http://chat.test/api/chat", {
          method: "POST",
          headers: { "content-type": type, "x-user": "alice" },
          body,
        }),
      );
    expect(await refusal(await raw("{", "application/json"))).toEqual([400, "invalid-json"]);
    expect(await refusal(await raw("{}", "text/plain"))).toEqual([415, "unsupported-media-type"]);
    // Five posts so far: the sixth within the minute is one too many.
    const limited = await raw("{}", "application/json");
    expect(await refusal(limited)).toEqual([429, "rate-limited"]);
  });
});

describe("a post the server refused", () => {
  /** A post of the page's messages from a page whose user is signed out: 401, nothing taken. */
  const signedOut = (page: Page) =>
    page.handler.fetch(
      new Request("http://chat.test/api/chat", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: page.id, messages: page.messages, trigger: "submit-message" }),
      }),
    );
  const userTexts = (model: ScriptedModel) =>
    (model.prompts.at(-1) ?? []).flatMap((message) =>
      message.role === "user" ? message.content.map((part) => (part as { text: string }).text) : [],
    );

  it("keeps the chat going: useChat keeps the refused message, and the next post brings both", async () => {
    const model = scriptedModel([[script.text("one")], [script.text("two")], [script.text("three")]]);
    const page = new Page(chatHandler(() => ({ provider: model })));
    expect(textOf(await page.send("hi"))).toBe("one");
    page.messages.push({ id: "user-refused", role: "user", parts: [{ type: "text", text: "book for 4" }] });
    expect(await refusal(await signedOut(page))).toEqual([401, "unauthorized"]);
    // Signed in again, the user writes on: the page posts its refused message with the new one.
    expect(textOf(await page.send("are you there?"))).toBe("two");
    expect(userTexts(model)).toEqual(["hi", "book for 4", "are you there?"]);
    expect(textOf(await page.send("thanks"))).toBe("three");
  });

  it("starts a new chat whose first post was refused", async () => {
    const model = scriptedModel([[script.text("one")]]);
    const page = new Page(chatHandler(() => ({ provider: model })));
    page.messages.push({ id: "user-refused", role: "user", parts: [{ type: "text", text: "hello" }] });
    expect(await refusal(await signedOut(page))).toEqual([401, "unauthorized"]);
    expect(textOf(await page.send("hello?"))).toBe("one");
    expect(userTexts(model)).toEqual(["hello", "hello?"]);
  });
});

describe("posts at once", () => {
  it("asks the agent factory once for two posts at once of a new chat (a double submit); one is answered, the other refused", async () => {
    let made = 0;
    const handler = chatHandler(() => ({}), {
      agent: async () => {
        made++;
        await new Promise((resolve) => setTimeout(resolve, 20));
        return new Agent({ provider: scriptedModel([[script.text("one")]]) });
      },
    });
    const page = new Page(handler);
    page.messages.push({ id: "user-1", role: "user", parts: [{ type: "text", text: "first" }] });
    const [a, b] = await Promise.all([page.post(), page.post()]);
    expect(made).toBe(1);
    const [answered, refused] = a.status === 200 ? [a, b] : [b, a];
    expect(textOf(await readAnswer(answered))).toBe("one");
    expect(await refusal(refused)).toEqual([409, "chat-busy"]);
    expect(handler.chatCount).toBe(1);
  });

  it("answers the second of two posts at once of a chat it has (a double submit) 409 chat-busy: the first one's run is streaming", async () => {
    const handler = chatHandler(() => ({
      provider: scriptedModel([[script.text("one")], [script.text("two")]]),
    }));
    const page = new Page(handler);
    await page.send("first");
    page.messages.push({ id: "user-2", role: "user", parts: [{ type: "text", text: "second" }] });
    const [a, b] = await Promise.all([page.post(), page.post()]);
    const [answered, refused] = a.status === 200 ? [a, b] : [b, a];
    expect(await refusal(refused)).toEqual([409, "chat-busy"]);
    expect(textOf(await readAnswer(answered))).toBe("two");
  });
});

describe("close()", () => {
  it("refuses the posts that come after it, and one whose agent was still being made: 503 server-closing, no chat kept", async () => {
    let made = 0;
    let release = () => {};
    const handler = chatHandler(() => ({}), {
      agent: async () => {
        made++;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return new Agent({ provider: scriptedModel([[script.text("one")]]) });
      },
    });
    const page = new Page(handler);
    page.messages.push({ id: "user-1", role: "user", parts: [{ type: "text", text: "first" }] });
    const making = page.post();
    await vi.waitFor(() => expect(made).toBe(1));
    handler.close();
    release();
    expect(await refusal(await making)).toEqual([503, "server-closing"]);
    const later = new Page(handler, "chat-2");
    later.messages.push({ id: "user-1", role: "user", parts: [{ type: "text", text: "hi" }] });
    expect(await refusal(await later.post())).toEqual([503, "server-closing"]);
    expect(handler.chatCount).toBe(0);
  });
});

describe("an agent factory that gives no agent", () => {
  it("fails that chat's post with a 500 and keeps no chat of it: the other chats go on", async () => {
    const lines: unknown[] = [];
    const log = (fields: Record<string, unknown>) => lines.push(String(fields.err));
    const handler = chatHandler(() => ({}), {
      agent: ({ conversationId }) =>
        (conversationId === "broken"
          ? undefined
          : new Agent({ provider: scriptedModel([[script.text("one")]]) })) as Agent,
      logger: { error: log, warn: log, info: log, debug: log },
    });
    const page = new Page(handler, "broken");
    page.messages.push({ id: "user-1", role: "user", parts: [{ type: "text", text: "first" }] });
    const broken = await page.post();
    expect(broken.status).toBe(500);
    expect(handler.chatCount).toBe(0);
    expect(lines).toEqual(["TypeError: agent() must return an Agent (or a promise of one), got undefined."]);
    expect(textOf(await new Page(handler, "fine").send("first"))).toBe("one");
  });
});

describe("an agent factory that gives one agent to every chat", () => {
  it("refuses the second chat with a 500, so no chat reads another's history; the first goes on", async () => {
    const lines: unknown[] = [];
    const log = (fields: Record<string, unknown>) => lines.push(String(fields.err));
    const shared = new Agent({
      provider: scriptedModel([[script.text("Alice's secret is 42.")], [script.text("Noted.")]]),
    });
    const handler = chatHandler(() => ({}), {
      agent: () => shared,
      logger: { error: log, warn: log, info: log, debug: log },
    });
    const alice = new Page(handler, "chat-a", "alice");
    expect(textOf(await alice.send("my secret is 42"))).toBe("Alice's secret is 42.");
    const bob = new Page(handler, "chat-b", "bob");
    bob.messages.push({ id: "user-1", role: "user", parts: [{ type: "text", text: "what was said?" }] });
    expect((await bob.post()).status).toBe(500);
    expect(lines).toEqual([
      "TypeError: agent() returned an agent that another chat has: return a new Agent for each (user, chat id).",
    ]);
    expect(handler.chatCount).toBe(1);
    expect(textOf(await alice.send("thanks"))).toBe("Noted.");
  });
});

describe("chatTtlMs", () => {
  /** A chat on a clock the test moves; its tool takes `toolMs` of that clock. */
  function clockedPage(toolMs: number) {
    const clock = { now: 0 };
    const slow = defineTool({
      name: "slow",
      description: "Takes a while",
      inputSchema: z.object({}),
      execute: () => {
        clock.now += toolMs;
        return "done";
      },
    });
    const handler = chatHandler(
      () => ({
        provider: scriptedModel([
          [script.toolCall("slow", {}, { id: "s1" })],
          [script.text("one")],
          [script.text("two")],
        ]),
        tools: [slow],
      }),
      { chatTtlMs: 1_000, now: () => clock.now },
    );
    return { clock, handler, page: new Page(handler) };
  }

  it("forgets a chat idle longer than chatTtlMs: its next post is 404 chat-not-found", async () => {
    const { clock, handler, page } = clockedPage(0);
    await page.send("first");
    expect(handler.chatCount).toBe(1);
    clock.now = 1_001;
    page.messages.push({ id: "u2", role: "user", parts: [{ type: "text", text: "second" }] });
    expect(await refusal(await page.post())).toEqual([404, "chat-not-found"]);
    expect(handler.chatCount).toBe(0);
  });

  it("forgets a chat idle for chatTtlMs though no other post comes", async () => {
    const handler = chatHandler(() => ({ provider: scriptedModel([[script.text("one")]]) }), {
      chatTtlMs: 50,
    });
    expect(textOf(await new Page(handler).send("first"))).toBe("one");
    expect(handler.chatCount).toBe(1);
    for (let i = 0; i < 40 && handler.chatCount > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(handler.chatCount).toBe(0);
  });

  it("counts idle time from the end of the answer, not from the post that asked for it", async () => {
    // The answer takes 800 ms; the next post comes 700 ms after it ended, 1.5 s after the first.
    const { clock, page } = clockedPage(800);
    expect(textOf(await page.send("first"))).toBe("one");
    clock.now += 700;
    expect(textOf(await page.send("second"))).toBe("two");
  });
});

describe("maxMessages", () => {
  it("counts user and assistant messages; a post of more is 400 invalid-body at messages", async () => {
    const handler = chatHandler(() => ({ provider: scriptedModel([[script.text("one")]]) }), {
      maxMessages: 2,
    });
    const page = new Page(handler);
    expect(textOf(await page.send("first"))).toBe("one");
    page.messages.push({ id: "u2", role: "user", parts: [{ type: "text", text: "second" }] });
    const refused = await page.post();
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: {
        code: "invalid-body",
        message: "The body does not match what this route takes.",
        issues: [{ path: "messages", message: "Too big: expected array to have <=2 items" }],
      },
    });
  });
});

describe("a long answer", () => {
  it("takes back an answer of more than 1,000 parts: the server streamed it, so the chat goes on", async () => {
    const calls = Array.from({ length: 1_001 }, (_, index) =>
      script.toolCall("add", { a: index, b: 1 }, { id: `c${index}` }),
    );
    const model = scriptedModel([calls, [script.text("Added.")], [script.text("Nothing more.")]]);
    const page = new Page(chatHandler(() => ({ provider: model, tools: [addNumbers] })));
    page.messages.push({ id: "u1", role: "user", parts: [{ type: "text", text: "add them all" }] });
    // The answer as useChat keeps it, built from its chunks (readUIMessageStream copies the whole
    // message at every chunk: seconds for this one).
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of uiChunks(await page.post())) chunks.push(chunk);
    const start = chunks.find((chunk) => chunk.type === "start");
    const parts = chunks.flatMap((chunk): UIMessage["parts"] =>
      chunk.type === "tool-input-available"
        ? [
            {
              type: `tool-${chunk.toolName}`,
              toolCallId: chunk.toolCallId,
              state: "output-available",
              input: chunk.input,
              output: (chunk.input as { a: number; b: number }).a + 1,
            },
          ]
        : [],
    );
    expect(parts).toHaveLength(1_001);
    page.messages.push({
      id: start?.type === "start" ? (start.messageId as string) : "",
      role: "assistant",
      parts: [{ type: "step-start" }, ...parts, { type: "step-start" }, { type: "text", text: "Added." }],
    });
    expect(textOf(await page.send("anything else?"))).toBe("Nothing more.");
  });
});

describe("run time", () => {
  it("names runTimeoutMs when the handler's limit ends a run, a resumed one too", async () => {
    const handler = chatHandler(
      () => ({
        provider: scriptedModel([
          [script.toolCall("get_location", {}, { id: "loc1" })],
          [script.text("a"), script.delay(300), script.text("b")],
        ]),
        tools: [getLocation],
      }),
      { runTimeoutMs: 50 },
    );
    const page = new Page(handler);
    await page.send("where am I?");
    page.addToolOutput("loc1", { city: "Oslo" });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of uiChunks(await page.post())) chunks.push(chunk);
    expect(chunks.filter((chunk) => chunk.type === "error")).toEqual([
      { type: "error", errorText: "The run took longer than 50 ms (runTimeoutMs)." },
    ]);
  });

  it("names timeouts.totalMs when the agent's own limit ends a run", async () => {
    const handler = chatHandler(
      () => ({
        provider: scriptedModel([[script.text("a"), script.delay(300), script.text("b")]]),
        timeouts: { totalMs: 50 },
      }),
      { runTimeoutMs: 60_000 },
    );
    const chunks: UIMessageChunk[] = [];
    const message = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
    const response = await handler.fetch(
      chatRequest({ id: "c", messages: [message], trigger: "submit-message" }),
    );
    for await (const chunk of uiChunks(response)) chunks.push(chunk);
    expect(chunks.filter((chunk) => chunk.type === "error")).toEqual([
      { type: "error", errorText: "The run took longer than 50 ms (timeouts.totalMs)." },
    ]);
  });

  it("is the agent's own timeouts.totalMs when it sets one, over HTTP", async () => {
    const handler = chatHandler(
      () => ({
        provider: scriptedModel([[script.text("a"), script.delay(300), script.text("b")]]),
        timeouts: { totalMs: 50 },
      }),
      { runTimeoutMs: 60_000 },
    );
    const node = await serveNode(handler.fetch);
    try {
      const message = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
      const response = await fetch(node.url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-user": "alice" },
        body: JSON.stringify({ id: "c", messages: [message], trigger: "submit-message" }),
      });
      const chunks: UIMessageChunk[] = [];
      for await (const chunk of uiChunks(response)) chunks.push(chunk);
      expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "error" });
    } finally {
      await node.close();
    }
  });
});

describe("over a real connection", () => {
  it("answers a body past maxBodyBytes 413 at once, and the page's next post works", async () => {
    const node = await serveNode(
      chatHandler(() => ({ provider: scriptedModel([[script.text("Hi.")]]) })).fetch,
    );
    try {
      const message = (text: string) => ({ id: "u1", role: "user", parts: [{ type: "text", text }] });
      const postChat = (text: string) =>
        fetch(`${node.url}/api/chat`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-user": "alice" },
          body: JSON.stringify({ id: "c", messages: [message(text)], trigger: "submit-message" }),
        });
      // Again and again: each refusal leaves the connection for the next request.
      for (let i = 0; i < 3; i++) {
        const startedAt = Date.now();
        expect(await refusal(await postChat("x".repeat(1_100_000)))).toEqual([413, "body-too-large"]);
        expect(Date.now() - startedAt).toBeLessThan(2_000);
      }
      expect(textOf(await readAnswer(await postChat("hello")))).toBe("Hi.");
    } finally {
      await node.close();
    }
  });
});

describe("a page that goes away", () => {
  it("aborts the run when the page went away before its answer began, even if its body is never cancelled", async () => {
    let agent: Agent | undefined;
    const model = scriptedModel([[script.text("Chapter 1. "), script.hang()]]);
    const handler = chatHandler(() => ({ provider: model }), {
      agent: () => {
        agent = new Agent({ provider: model });
        return agent;
      },
    });
    const page = new Page(handler);
    page.messages.push({ id: "u1", role: "user", parts: [{ type: "text", text: "a long story" }] });
    const abort = new AbortController();
    const posted = page.post(abort.signal);
    abort.abort();
    // An adapter that drops the response of an aborted request without cancelling its body.
    expect((await posted).status).toBe(200);
    const deadline = Date.now() + 2_000;
    while (agent?.busy !== false && Date.now() < deadline) await new Promise((done) => setTimeout(done, 10));
    expect(agent?.busy).toBe(false);
  });

  it("goes on when the page went away before its answer's first chunk, so it has no copy of that answer at all", async () => {
    const model = scriptedModel([[script.text("Chapter 1. "), script.hang()], [script.text("Short, then.")]]);
    const handler = chatHandler(() => ({ provider: model }));
    const page = new Page(handler);
    page.messages.push({ id: "u1", role: "user", parts: [{ type: "text", text: "a long story" }] });
    // useChat's stop() while the post is "submitted": no chunk was read, so useChat added no
    // assistant message (it adds one with the first chunk it reads).
    const abort = new AbortController();
    const response = await page.post(abort.signal);
    abort.abort();
    await response.body?.cancel().catch(() => {});
    expect(textOf(await page.send("shorter"))).toBe("Short, then.");
    // The chat goes on from there: the page's next message is checked against what it has.
    expect(page.messages.map((message) => message.role)).toEqual(["user", "user", "assistant"]);
    expect(await refusal(await page.post())).toEqual([409, "nothing-new"]);
  });

  it("aborts the run at once; the chat goes on from what the server has, and a post while it streams is 409", async () => {
    const model = scriptedModel([
      [script.text("Chapter 1. "), script.delay(20), script.text("Chapter 2. "), script.hang()],
      [script.text("Short, then.")],
    ]);
    const handler = chatHandler(() => ({ provider: model }));
    const page = new Page(handler);
    page.messages.push({ id: "u1", role: "user", parts: [{ type: "text", text: "a long story" }] });
    const abort = new AbortController();
    const response = await page.post(abort.signal);
    const snapshots = readUIMessageStream({ stream: uiChunks(response) })[Symbol.asyncIterator]();
    let partial: UIMessage | undefined;
    while (!textOf(partial ?? { id: "", role: "assistant", parts: [] }).includes("Chapter 1"))
      partial = (await snapshots.next()).value as UIMessage;

    // While the answer streams, the chat takes no other post.
    expect(await refusal(await page.post())).toEqual([409, "chat-busy"]);

    // useChat's stop(): the fetch is aborted. The run ends aborted, the agent is free.
    abort.abort();
    for (let next = await snapshots.next(); next.done !== true; next = await snapshots.next());
    page.messages.push(partial as UIMessage, {
      id: "u2",
      role: "user",
      parts: [{ type: "text", text: "shorter" }],
    });
    const answer = await readAnswer(await page.post());
    expect(textOf(answer)).toBe("Short, then.");
    // The model read the server's history, where an aborted reply is not kept: the page's copy of
    // it (the text so far) was checked as the start of what the server streamed, and left there.
    const history = JSON.stringify(model.prompts.at(-1));
    expect(history).toContain("a long story");
    expect(history).not.toContain("Chapter");
  });
});
