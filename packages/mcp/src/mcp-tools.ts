import {
  compileJsonSchema,
  errorMessage,
  InvalidConfigError,
  type JsonSchemaValidator,
  refuseUnknownKeys,
  type ServerTool,
  type Tool,
} from "@agent-core/core";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { toolValueOf } from "./call-result.js";
import { McpServerError } from "./mcp-server-error.js";

export interface McpToolsOptions {
  /**
   * Put before every tool's name, joined by "_": `"fs"` offers `read_file` as `fs_read_file`. For
   * servers whose tools share names, or a name an agent's own tool has.
   */
  prefix?: string;
}

/** What a tool needs of its server's connection (an `McpConnection`): its name for errors, and `tools/call`. */
export interface McpToolCaller {
  readonly name: string;
  callTool(name: string, args: unknown, signal: AbortSignal): Promise<CallToolResult>;
}

/** What model APIs accept as a tool name, as agent-core checks it. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

// MCP reads a schema without `$schema` as JSON Schema 2020-12 (spec 2025-11-25), where agent-core
// otherwise assumes draft-07, the AI SDK's dialect.
const MCP_DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema";

/**
 * `tools` as agent-core tools calling them through `connection`, in the server's order. Tools that
 * must run as MCP tasks are left out: `tools/call` cannot run them, and agent-core does not use tasks.
 */
export function agentToolsOf(
  connection: McpToolCaller,
  tools: readonly McpTool[],
  options: McpToolsOptions,
): Tool[] {
  checkToolsOptions(options);
  const offered = new Map<string, string>();
  return tools
    .filter((tool) => tool.execution?.taskSupport !== "required")
    .map((tool) => {
      const name = agentToolName(tool.name, options.prefix);
      const refuse = (why: string) => new McpServerError(connection.name, why, { tool: tool.name });
      if (!TOOL_NAME.test(name))
        throw refuse(
          `its name as an agent-core tool, "${name}", is not 1-64 letters, digits, "_" or "-" (what model APIs accept).`,
        );
      const clash = offered.get(name);
      if (clash !== undefined) throw refuse(`"${clash}" is offered as "${name}" too.`);
      offered.set(name, tool.name);
      return agentToolOf(connection, tool, name, refuse);
    });
}

/**
 * Throws an `InvalidConfigError` for a prefix that is not letters, digits, "_" or "-": it is the
 * caller's, so it is not rewritten as a server's names are, and every tool would otherwise be
 * refused as if the server had named it badly.
 */
function checkToolsOptions(options: McpToolsOptions): void {
  if (options === null || typeof options !== "object")
    throw new InvalidConfigError(`tools(): its options must be an object, got ${String(options)}.`);
  refuseUnknownKeys("tools() options", options, ["prefix"]);
  const { prefix } = options as { prefix?: unknown };
  if (prefix !== undefined && (typeof prefix !== "string" || !/^[a-zA-Z0-9_-]+$/.test(prefix)))
    throw new InvalidConfigError(
      `tools({ prefix }): the prefix must be letters, digits, "_" or "-" (what model APIs accept in a tool name), got ${JSON.stringify(prefix)}.`,
    );
}

/** MCP names may hold "." and "/" (any character), which model APIs refuse: they become "_". */
function agentToolName(mcpName: string, prefix: string | undefined): string {
  const name = mcpName.replace(/[^a-zA-Z0-9_-]/g, "_");
  return prefix === undefined ? name : `${prefix}_${name}`;
}

function agentToolOf(
  connection: McpToolCaller,
  tool: McpTool,
  name: string,
  refuse: (why: string) => McpServerError,
): ServerTool {
  let validate: JsonSchemaValidator;
  try {
    validate = compileJsonSchema({ $schema: MCP_DEFAULT_DIALECT, ...tool.inputSchema } as Tool["jsonSchema"]);
  } catch (error) {
    throw refuse(`its input schema cannot be compiled: ${errorMessage(error)}`);
  }
  return {
    name,
    description: tool.description ?? "",
    inputSchema: checkedBy(validate),
    // As the server wrote it: the model sees the schema the server's authors meant.
    jsonSchema: tool.inputSchema as Tool["jsonSchema"],
    execute: async (args, { signal }) =>
      toolValueOf(await connection.callTool(tool.name, args, signal), name),
  };
}

/** A zod schema whose one check is the JSON Schema validator: its issues become zod issues (path and message). */
function checkedBy(validate: JsonSchemaValidator): z.ZodType {
  return z.unknown().superRefine((value, context) => {
    for (const { path, message } of validate(value)) context.addIssue({ code: "custom", message, path });
  });
}
