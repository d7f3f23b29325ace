import type { IncomingMessage, ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { Agent } from "@agent-core/core";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

export interface AgentMcpServerOptions {
  /**
   * Makes the agent that answers one call: a new one for each, since an MCP client may call
   * several times at once and each call is a conversation of its own.
   */
  agent: () => Agent;
  /** The server's name, as MCP clients show it (default "agent-core"). */
  name?: string;
  /** The tool's name (default "ask_agent"). */
  toolName?: string;
  /** What the calling model reads about the tool: say what the agent is good for. */
  description?: string;
}

export interface AgentMcpHttpOptions extends AgentMcpServerOptions {
  /**
   * The `Host` values to answer (with the port: `"localhost:3000"`, in any case); any other, or
   * none, gets 403, and an empty list answers no request. Set it when serving on localhost: a web
   * page can reach a local server through DNS rebinding, under a host name of its own.
   */
  allowedHosts?: readonly string[];
  /**
   * The `Origin` values to answer when a request has one (a browser's: `"http://localhost:3000"`);
   * any other gets 403. A request without an `Origin` is not checked.
   */
  allowedOrigins?: readonly string[];
}

// Read at run time rather than imported as JSON: package.json lies outside the compiled rootDir.
const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

const DEFAULT_DESCRIPTION = "Asks an agent, which may use tools of its own, and returns its answer.";

/**
 * An agent as an MCP server of one tool, `ask_agent({ prompt })`, which runs the prompt and answers
 * with the agent's text; a run that does not complete is an `isError` result saying why. The
 * client cancelling the call (or closing the connection) aborts the run. Connect it to a transport:
 * `await server.connect(new StdioServerTransport())`, as `agent-core mcp` does; over HTTP, serve
 * it with `createAgentMcpHttpHandler`.
 */
export function createAgentMcpServer(options: AgentMcpServerOptions): McpServer {
  const server = new McpServer({ name: options.name ?? "agent-core", version });
  server.registerTool(
    options.toolName ?? "ask_agent",
    {
      description: options.description ?? DEFAULT_DESCRIPTION,
      inputSchema: { prompt: z.string().min(1).describe("What to ask the agent, in plain words.") },
    },
    async ({ prompt }, { signal }): Promise<CallToolResult> => {
      const result = await options.agent().prompt(prompt, { signal }).result();
      if (result.stopReason === "completed") return { content: [{ type: "text", text: result.text }] };
      const why = result.error?.message ?? `it stopped as ${result.stopReason}`;
      return { content: [{ type: "text", text: `The agent did not answer: ${why}` }], isError: true };
    },
  );
  return server;
}

/**
 * `createAgentMcpServer(options)` over Streamable HTTP, as a Node request handler: for
 * `http.createServer(handler)`, or a framework's route (with the body it parsed). Stateless: each
 * POST gets a server and a transport of its own, as each call gets an agent of its own. A POST
 * whose connection drops before its answer aborts the run it started. The SDK's transport would
 * keep it going, for a client that resumes the stream; without a session there is nothing to
 * resume, and the run would go on using the model for no one. GET and DELETE (a session's stream,
 * a session's end) answer 405. It checks no credentials: serve it behind your own; `allowedHosts`
 * and `allowedOrigins` refuse requests for other hosts and from other origins (403).
 */
export function createAgentMcpHttpHandler(
  options: AgentMcpHttpOptions,
): (request: IncomingMessage, response: ServerResponse, parsedBody?: unknown) => Promise<void> {
  // Checked here, as given: the SDK's own check (deprecated) takes an empty list as no check at all.
  const allowedHosts = options.allowedHosts?.map((host) => host.toLowerCase());
  const { allowedOrigins } = options;
  return async (request, response, parsedBody) => {
    const refuse = (status: number, message: string, headers: Record<string, string> = {}) => {
      const refusal = { jsonrpc: "2.0", error: { code: -32000, message }, id: null };
      response.writeHead(status, { ...headers, "content-type": "application/json" });
      response.end(JSON.stringify(refusal));
    };
    const { host, origin } = request.headers;
    if (allowedHosts !== undefined && !allowedHosts.includes(host?.toLowerCase() ?? ""))
      return refuse(403, `Invalid Host header: ${host ?? "(none)"}`);
    if (allowedOrigins !== undefined && origin !== undefined && !allowedOrigins.includes(origin))
      return refuse(403, `Invalid Origin header: ${origin}`);
    if (request.method !== "POST") return refuse(405, "Method not allowed.", { allow: "POST" });
    const server = createAgentMcpServer(options);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // Closing the server aborts the signal of every call still running, and so its run. Once the
    // answer is sent, none is.
    response.once("close", () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(request, response, parsedBody);
  };
}
