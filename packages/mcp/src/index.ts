export { type AgentMcpHttpOptions, createAgentMcpHttpHandler } from "./agent-mcp-http.js";
export { type AgentMcpServerOptions, createAgentMcpServer } from "./agent-mcp-server.js";
export { type ConnectMcpOptions, connectMcp } from "./connect-mcp.js";
export { McpConnection } from "./mcp-connection.js";
export { McpServerError } from "./mcp-server-error.js";
export type { McpToolsOptions } from "./mcp-tools.js";
export type { McpHttpServer, McpServerConfig, McpStdioServer } from "./server-config.js";
