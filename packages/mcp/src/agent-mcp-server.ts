import { createRequire } from "node:module";
import { type Agent, InvalidConfigError, refuseUnknownKeys } from "@agent-core/core";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
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

// Read at run time rather than imported as JSON: package.json lies outside the compiled rootDir.
const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

const DEFAULT_DESCRIPTION = "Asks an agent, which may use tools of its own, and returns its answer.";

/**
 * An agent as an MCP server of one tool, `ask_agent({ prompt })`, which runs the prompt and answers
 * with the agent's text; a run that does not complete is an `isError` result saying why, and a
 * blank prompt (`""`, `"   "`) one that starts no run, as any argument the schema refuses. The
 * client cancelling the call (or the server closing) aborts the run. Connect it to a transport:
 * `await server.connect(new StdioServerTransport())`, as `agent-core mcp` does, and close it when
 * stdin ends (`process.stdin.once("end", () => server.close())`: the SDK's transport does not
 * notice a client that goes away); over HTTP, serve it with `createAgentMcpHttpHandler`.
 */
export function createAgentMcpServer(options: AgentMcpServerOptions): McpServer {
  checkServerOptions(options, SERVER_KEYS, "createAgentMcpServer()");
  return serveAgent(options, (signal) => ({ signal, done: () => {} }));
}

/** The keys of `AgentMcpServerOptions`; any other is refused, as a misspelt one would silently not apply. */
export const SERVER_KEYS = [
  "agent",
  "name",
  "toolName",
  "description",
] as const satisfies readonly (keyof AgentMcpServerOptions)[];

/**
 * Throws an `InvalidConfigError` for options a server cannot be made of: a key not in `known`, an
 * `agent` that is no function (every call would fail with a TypeError), or a name or description
 * that is not a non-blank string. `what` names the function they were given to.
 */
export function checkServerOptions(
  options: AgentMcpServerOptions,
  known: readonly string[],
  what: string,
): void {
  if (options === null || typeof options !== "object")
    throw new InvalidConfigError(`${what}: its options must be an object, got ${String(options)}.`);
  refuseUnknownKeys(`${what} options`, options, known);
  if (typeof options.agent !== "function")
    throw new InvalidConfigError(
      `${what}: agent must be a function that makes the agent of a call, got ${typeof options.agent}.`,
    );
  for (const key of ["name", "toolName", "description"] as const) {
    const value: unknown = options[key];
    if (value !== undefined && !(typeof value === "string" && /\S/.test(value)))
      throw new InvalidConfigError(
        `${what}: ${key} must be a non-blank string, got ${JSON.stringify(value)}.`,
      );
  }
}

/**
 * The server of `createAgentMcpServer`, whose calls run under the signal `callSignal` gives them
 * (the call's own, or one that also ends when the call's HTTP connection drops); `done` is called
 * once the call's run has ended.
 */
export function serveAgent(
  options: AgentMcpServerOptions,
  callSignal: (signal: AbortSignal) => { signal: AbortSignal; done: () => void },
): McpServer {
  const server = new McpServer({ name: options.name ?? "agent-core", version });
  server.registerTool(
    options.toolName ?? "ask_agent",
    {
      description: options.description ?? DEFAULT_DESCRIPTION,
      inputSchema: {
        // Blank is refused as the CLI's `run` refuses it: a run of nothing would answer nothing.
        prompt: z
          .string()
          .regex(/\S/, "The prompt is blank: say what to ask the agent.")
          .describe("What to ask the agent, in plain words."),
      },
    },
    async ({ prompt }, extra): Promise<CallToolResult> => {
      const call = callSignal(extra.signal);
      try {
        const result = await options.agent().prompt(prompt, { signal: call.signal }).result();
        if (result.stopReason === "completed") return { content: [{ type: "text", text: result.text }] };
        const why = result.error?.message ?? `it stopped as ${result.stopReason}`;
        return { content: [{ type: "text", text: `The agent did not answer: ${why}` }], isError: true };
      } finally {
        call.done();
      }
    },
  );
  return server;
}
