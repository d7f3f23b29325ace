import { getEventListeners } from "node:events";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  type JSONRPCMessage,
  ListToolsRequestSchema,
  type ListToolsResult,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { McpConnection } from "./mcp-connection.js";
import { McpServerError } from "./mcp-server-error.js";

// The connection against a server written at the protocol level (the SDK's low-level Server over
// an in-memory transport), so it can answer what the SDK's McpServer never would.

type Handlers = {
  list?: (cursor: string | undefined) => ListToolsResult;
  call?: (name: string) => unknown;
  cancelled?: (requestId: unknown) => void;
};

let connection: McpConnection | undefined;
afterEach(async () => {
  await connection?.close();
  connection = undefined;
});

async function connectTo(handlers: Handlers, callTimeoutMs = 5000): Promise<McpConnection> {
  const server = new Server({ name: "raw", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) =>
    (handlers.list ?? (() => ({ tools: [{ name: "lookup", inputSchema: { type: "object" } }] })))(
      request.params?.cursor,
    ),
  );
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    return (await handlers.call?.(request.params.name)) as never;
  });
  if (handlers.cancelled !== undefined) {
    const cancelled = handlers.cancelled;
    server.setNotificationHandler(CancelledNotificationSchema, (notification) =>
      cancelled(notification.params.requestId),
    );
  }
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  connection = new McpConnection(client, "raw", callTimeoutMs);
  return connection;
}

const never = new AbortController().signal;

describe("McpConnection.callTool", () => {
  it("reports a JSON-RPC error in the server range (-32000, -32001) as the server's error, not as a lost connection or a timeout", async () => {
    const mcp = await connectTo({
      call: (name) => {
        // The low-level Server answers a thrown error's code and message as a JSON-RPC error.
        if (name === "down") throw Object.assign(new Error("backend unavailable"), { code: -32000 });
        if (name === "slow") throw Object.assign(new Error("upstream timed out"), { code: -32001 });
        return { content: [{ type: "text", text: "found" }] };
      },
    });
    await expect(mcp.callTool("down", {}, never)).rejects.toThrow(
      'The MCP server "raw" failed the call: MCP error -32000: backend unavailable',
    );
    await expect(mcp.callTool("slow", {}, never)).rejects.toThrow(
      'The MCP server "raw" failed the call: MCP error -32001: upstream timed out',
    );
    // The connection is fine: the next call is answered.
    await expect(mcp.callTool("lookup", {}, never)).resolves.toMatchObject({
      content: [{ type: "text", text: "found" }],
    });
  });

  it("still says when the server did not answer in time, and when the connection closed mid-call", async () => {
    let closeServer: () => void = () => {};
    const mcp = await connectTo(
      {
        call: (name) =>
          new Promise((resolve) => {
            if (name === "vanish") closeServer();
            else setTimeout(() => resolve({ content: [] }), 1000);
          }),
      },
      50,
    );
    await expect(mcp.callTool("wait", {}, never)).rejects.toThrow(
      'The MCP server "raw" did not answer "wait" within 50 ms (callTimeoutMs); the call was cancelled.',
    );
    closeServer = () => void mcp.client.transport?.close();
    await expect(mcp.callTool("vanish", {}, never)).rejects.toThrow(
      'The MCP server "raw" went away during the call: its connection closed.',
    );
  });
});

/**
 * A connection to a server that answers each tools/call with `result` as it is: the SDK's Server
 * checks its own results, so it is written at the message level.
 */
async function connectToUnchecked(result: (name: string) => unknown): Promise<McpConnection> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  serverSide.onmessage = (message) => {
    if (!("id" in message) || !("method" in message)) return;
    const answer =
      message.method === "initialize"
        ? {
            protocolVersion: message.params?.protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: "raw", version: "1.0.0" },
          }
        : message.method === "tools/call"
          ? result(String(message.params?.name))
          : {};
    void serverSide.send({ jsonrpc: "2.0", id: message.id, result: answer } as JSONRPCMessage);
  };
  await serverSide.start();
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  connection = new McpConnection(client, "raw", 5000);
  return connection;
}

describe("McpConnection.callTool, a result that breaks MCP's schema", () => {
  it("says which fields, not with zod's JSON", async () => {
    const mcp = await connectToUnchecked((name) =>
      name === "text"
        ? { content: "not a list of blocks" }
        : {
            content: [
              { type: "text", text: "a" },
              { type: "video", url: "v.mp4" },
            ],
            structuredContent: [1],
          },
    );
    await expect(mcp.callTool("text", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "raw" answered "text" with a result that breaks the MCP schema: content: Invalid input: expected array, received string',
      ),
    );
    await expect(mcp.callTool("video", {}, never)).rejects.toThrow(
      new Error(
        'The MCP server "raw" answered "video" with a result that breaks the MCP schema: content[1]: Invalid input; structuredContent: Invalid input: expected record, received array',
      ),
    );
  });
});

describe("McpConnection.tools", () => {
  const page = (name: string, nextCursor?: string): ListToolsResult => ({
    tools: [{ name, inputSchema: { type: "object" } }],
    ...(nextCursor === undefined ? {} : { nextCursor }),
  });

  it("reads every page of tools/list", async () => {
    const mcp = await connectTo({
      list: (cursor) => (cursor === undefined ? page("a", "2") : page(`b${cursor}`)),
    });
    expect((await mcp.tools()).map((tool) => tool.name)).toEqual(["a", "b2"]);
  });

  it("checks the structuredContent of a tool on any page against its outputSchema, not only the last page's", async () => {
    const counted = {
      name: "count",
      inputSchema: { type: "object" as const },
      outputSchema: { type: "object" as const, properties: { n: { type: "number" } }, required: ["n"] },
    };
    const mcp = await connectTo({
      list: (cursor) => (cursor === undefined ? { tools: [counted], nextCursor: "2" } : page("other")),
      call: () => ({ content: [], structuredContent: { n: "three" } }),
    });
    await mcp.tools();
    await expect(mcp.callTool("count", {}, never)).rejects.toThrow(
      "Structured content does not match the tool's output schema: data/n must be number",
    );
  });

  it("gives an error result as the server said it, when its structuredContent does not fit the outputSchema", async () => {
    const counted = {
      name: "count",
      inputSchema: { type: "object" as const },
      outputSchema: { type: "object" as const, properties: { n: { type: "number" } }, required: ["n"] },
    };
    const failed = { content: [], structuredContent: { why: "the disk is full" }, isError: true };
    const mcp = await connectTo({ list: () => ({ tools: [counted] }), call: () => failed });
    await mcp.tools();
    await expect(mcp.callTool("count", {}, never)).resolves.toEqual(failed);
  });

  it("refuses a tools/list that breaks MCP's schema, saying which entries and fields, not with zod's JSON", async () => {
    const mcp = await connectTo({
      list: () =>
        ({
          tools: [
            { name: "good", inputSchema: { type: "object" } },
            { name: "bad", inputSchema: { type: "string" } },
            { inputSchema: { type: "object" } },
          ],
        }) as never,
    });
    const refused = mcp.tools();
    await expect(refused).rejects.toThrow(McpServerError);
    await expect(refused).rejects.toThrow(
      'MCP server "raw": could not list its tools: its tools/list answer breaks the MCP schema: tools[1].inputSchema.type: Invalid input: expected "object"; tools[2].name: Invalid input: expected string, received undefined',
    );
  });

  it("names a broken entry of a later page by that page, as the index is the page's", async () => {
    const mcp = await connectTo({
      list: (cursor) =>
        cursor === undefined
          ? ({ tools: [{ name: "a", inputSchema: { type: "object" } }], nextCursor: "2" } as ListToolsResult)
          : ({ tools: [{ name: "b", inputSchema: { type: "array" } }] } as never),
    });
    await expect(mcp.tools()).rejects.toThrow(
      'MCP server "raw": could not list its tools: its tools/list answer breaks the MCP schema, on page 2: tools[0].inputSchema.type: Invalid input: expected "object"',
    );
  });

  it("refuses a tools/list whose pages never end, rather than reading it forever", async () => {
    // Both servers stop paging after 1,000 pages, so that a client that would read on forever fails here.
    let calls = 0;
    const repeating = await connectTo({ list: () => page(`t${++calls}`, calls < 1000 ? "same" : undefined) });
    const refused = repeating.tools();
    await expect(refused).rejects.toThrow(McpServerError);
    await expect(refused).rejects.toThrow(
      'MCP server "raw": could not list its tools: its tools/list gave the cursor "same" twice',
    );
    await repeating.close();
    let pages = 0;
    const endless = await connectTo({
      list: () => page(`t${++pages}`, pages < 1000 ? `c${pages}` : undefined),
    });
    await expect(endless.tools()).rejects.toThrow(
      'MCP server "raw": could not list its tools: its tools/list goes on past 100 pages',
    );
    expect(pages).toBe(100);
  });
});

describe("McpConnection.callTool and the caller's signal", () => {
  it("leaves no listener on the signal once a call is answered, so a later abort cancels nothing", async () => {
    const cancelled: unknown[] = [];
    const mcp = await connectTo({
      call: () => ({ content: [{ type: "text", text: "ok" }] }),
      cancelled: (requestId) => cancelled.push(requestId),
    });
    // One signal for many calls, as a run's is when it has no timeouts.toolMs.
    const run = new AbortController();
    for (let i = 0; i < 12; i++) await mcp.callTool("lookup", {}, run.signal);
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
    run.abort("the user left");
    await mcp.callTool("lookup", {}, never); // the notifications sent before it have arrived
    expect(cancelled).toEqual([]);
  });

  it("gives calls made at once on one signal a single listener on it, and cancels them all on its abort", async () => {
    const cancelled: unknown[] = [];
    const mcp = await connectTo({
      call: (name) => (name === "lookup" ? new Promise(() => {}) : { content: [] }),
      cancelled: (id) => cancelled.push(id),
    });
    // A batch of tool calls shares its run's signal: Node warns past 10 listeners on one.
    const run = new AbortController();
    const calls = Array.from({ length: 12 }, () => mcp.callTool("lookup", {}, run.signal));
    expect(getEventListeners(run.signal, "abort")).toHaveLength(1);
    run.abort("the user left");
    for (const call of calls) await expect(call).rejects.toBe("the user left");
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
    await mcp.callTool("flush", {}, never); // the notifications sent before it have arrived
    expect(cancelled).toHaveLength(12);
  });
});
