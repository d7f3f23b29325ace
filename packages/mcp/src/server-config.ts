/** An MCP server agent-core starts as a child process and talks to over its stdin and stdout. */
export interface McpStdioServer {
  command: string;
  args?: readonly string[];
  /**
   * The process's environment, over the few variables the MCP SDK passes on by default (`HOME`,
   * `PATH`, `SHELL`, `TERM`, `USER`, `LOGNAME`): a server does not inherit your secrets unasked.
   */
  env?: Record<string, string>;
  /** The server's working directory; one that is not there is an `McpServerError` before it starts. */
  cwd?: string;
  /** Where the server's stderr goes: this process's stderr (default), or nowhere. */
  stderr?: "inherit" | "ignore";
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpServer {
  url: string | URL;
  /**
   * Sent with every request, e.g. `{ authorization: "Bearer …" }`. Anything but an object of
   * strings (an undefined value included) is an `InvalidConfigError` from `connectMcp()`.
   */
  headers?: Record<string, string>;
}

export type McpServerConfig = McpStdioServer | McpHttpServer;

export function isHttpServer(server: McpServerConfig): server is McpHttpServer {
  return "url" in server;
}

/** How errors name a server before it has named itself: its command line, or its URL. */
export function describeServer(server: McpServerConfig): string {
  if (isHttpServer(server)) return String(server.url);
  return [server.command, ...(server.args ?? [])].join(" ");
}
