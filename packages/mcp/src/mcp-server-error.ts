import { AgentError } from "@agent-core/core";

/**
 * An MCP server agent-core cannot use: it could not be started or reached, it did not list its
 * tools, or one of its tools cannot be offered to a model (a schema that does not compile, a name
 * that clashes). Names the server, and the tool when one is at fault.
 */
export class McpServerError extends AgentError {
  readonly server: string;
  readonly tool: string | undefined;

  constructor(server: string, message: string, options: { tool?: string; cause?: unknown } = {}) {
    const what =
      options.tool === undefined
        ? `MCP server "${server}"`
        : `MCP server "${server}", tool "${options.tool}"`;
    super("mcp_server", `${what}: ${message}`, { cause: options.cause });
    this.server = server;
    this.tool = options.tool;
  }
}
