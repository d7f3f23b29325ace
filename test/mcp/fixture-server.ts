/**
 * An MCP server for the fault cases, built with the SDK's server API: a slow tool that records the
 * cancellations it receives, a failing tool, a strict schema, every kind of content block. Speaks
 * stdio (`fixture-server.ts`), or Streamable HTTP on a free local port (`fixture-server.ts http`,
 * which prints `listening <url>`).
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/** Every call cancelled by its client (`notifications/cancelled`), with the reason it gave. */
const cancellations: { tool: string; reason: string }[] = [];

function fixtureServer(): McpServer {
  const server = new McpServer({ name: "fixture", version: "1.0.0" });
  server.registerTool(
    "wait",
    { description: "Waits ms milliseconds, or until cancelled", inputSchema: { ms: z.number() } },
    ({ ms }, { signal }) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ content: [{ type: "text", text: `waited ${ms} ms` }] }), ms);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          cancellations.push({ tool: "wait", reason: String(signal.reason) });
        });
      }),
  );
  server.registerTool("cancellations", { description: "The cancellations received so far" }, () => ({
    content: [{ type: "text", text: JSON.stringify(cancellations) }],
  }));
  server.registerTool("pid", { description: "The server's process id" }, () => ({
    content: [{ type: "text", text: String(process.pid) }],
  }));
  server.registerTool(
    "add",
    { description: "Adds two numbers", inputSchema: { a: z.number(), b: z.number() } },
    ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  server.registerTool("fail", { description: "Always fails" }, () => ({
    content: [{ type: "text", text: "the disk is full" }],
    isError: true,
  }));
  server.registerTool(
    "weather",
    {
      description: "Structured weather",
      outputSchema: { city: z.string(), celsius: z.number() },
    },
    () => ({
      content: [{ type: "text", text: '{"city":"Oslo","celsius":3}' }],
      structuredContent: { city: "Oslo", celsius: 3 },
    }),
  );
  server.registerTool("media", { description: "One content block of each kind" }, () => ({
    content: [
      { type: "text", text: "a logo and its notes" },
      { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
      { type: "resource_link", uri: "file:///notes.txt", name: "notes.txt", description: "the notes" },
      { type: "resource", resource: { uri: "file:///notes.txt", mimeType: "text/plain", text: "buy milk" } },
      {
        type: "resource",
        resource: { uri: "file:///logo.png", mimeType: "image/png", blob: "iVBORw0KGgo=" },
      },
    ],
  }));
  return server;
}

if (process.argv[2] === "http") {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const sessionId = request.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    if (transport === undefined && isInitializeRequest(body)) {
      const opened: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, opened);
        },
      });
      await fixtureServer().connect(opened);
      transport = opened;
    }
    if (transport === undefined) {
      response.writeHead(400).end("no such session");
      return;
    }
    await transport.handleRequest(request, response, body);
  });
  http.listen(0, "127.0.0.1", () => {
    const address = http.address();
    if (address !== null && typeof address === "object")
      process.stdout.write(`listening http://127.0.0.1:${address.port}/mcp\n`);
  });
} else {
  await fixtureServer().connect(new StdioServerTransport());
}
