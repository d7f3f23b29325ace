import { InvalidConfigError } from "@agent-core/core";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import type { McpConnection } from "./mcp-connection.js";
import { McpServerError } from "./mcp-server-error.js";
import { agentToolsOf } from "./mcp-tools.js";

// A listed MCP tool as an agent-core tool: its name, its schema, what is refused.

const connection = { name: "files" } as McpConnection;

function mcpTool(name: string, inputSchema: Record<string, unknown> = { type: "object" }): McpTool {
  return { name, inputSchema: inputSchema as McpTool["inputSchema"] };
}

describe("agentToolsOf", () => {
  it("keeps the schema as the server wrote it and validates arguments as JSON Schema 2020-12 without $schema", () => {
    const inputSchema = {
      type: "object",
      properties: { point: { type: "array", prefixItems: [{ type: "number" }, { type: "string" }] } },
      required: ["point"],
    };
    const [tool] = agentToolsOf(connection, [mcpTool("plot", inputSchema)], {});
    expect(tool?.jsonSchema).toEqual(inputSchema);
    expect(tool?.description).toBe("");
    const issues = tool?.inputSchema.safeParse({ point: [1, 2] }).error?.issues;
    expect(issues?.map((issue) => [issue.path, issue.message])).toEqual([[["point", 1], "must be string"]]);
  });

  it("reads a schema that names draft-07 as draft-07, over http or https", () => {
    for (const $schema of [
      "http://json-schema.org/draft-07/schema#",
      "https://json-schema.org/draft-07/schema#",
    ]) {
      const inputSchema = {
        $schema,
        type: "object",
        properties: { point: { type: "array", prefixItems: [{ type: "number" }, { type: "string" }] } },
      };
      const [tool] = agentToolsOf(connection, [mcpTool("plot", inputSchema)], {});
      // prefixItems is no draft-07 keyword: ignored.
      expect(tool?.inputSchema.safeParse({ point: [1, 2] }).success).toBe(true);
    }
  });

  it('gives "." and "/" of MCP names as "_", puts the prefix first and leaves out tools that need MCP tasks', () => {
    const tools = agentToolsOf(
      connection,
      [
        mcpTool("notes.read"),
        mcpTool("a/b"),
        { ...mcpTool("research"), execution: { taskSupport: "required" } },
      ],
      { prefix: "fs" },
    );
    expect(tools.map((tool) => tool.name)).toEqual(["fs_notes_read", "fs_a_b"]);
  });

  it('gives any character model APIs refuse as "_", not only "." and "/"', () => {
    const tools = agentToolsOf(connection, [mcpTool("read file"), mcpTool("météo:now")], {});
    expect(tools.map((tool) => tool.name)).toEqual(["read_file", "m_t_o_now"]);
  });

  it("refuses an option it does not know, naming it: a misspelt prefix would silently not apply", () => {
    expect(() => agentToolsOf(connection, [mcpTool("read")], { prefx: "fs" } as never)).toThrow(
      new InvalidConfigError("Invalid tools() options: prefx is not an option (known: prefix)."),
    );
    expect(() => agentToolsOf(connection, [mcpTool("read")], null as never)).toThrow(
      new InvalidConfigError("tools(): its options must be an object, got null."),
    );
  });

  it("refuses a prefix model APIs refuse as the caller's InvalidConfigError, not the server's error", () => {
    for (const prefix of ["my.fs", "my fs", ""]) {
      const refused = () => agentToolsOf(connection, [mcpTool("read")], { prefix });
      expect(refused).toThrow(InvalidConfigError);
      expect(refused).toThrow(
        new InvalidConfigError(
          `tools({ prefix }): the prefix must be letters, digits, "_" or "-" (what model APIs accept in a tool name), got ${JSON.stringify(prefix)}.`,
        ),
      );
    }
  });

  it("refuses a schema that does not compile, naming the server and the tool", () => {
    const refused = () =>
      agentToolsOf(
        connection,
        [mcpTool("broken", { type: "object", properties: { a: { $ref: "#/nowhere" } } })],
        {},
      );
    expect(refused).toThrow(McpServerError);
    expect(refused).toThrow(/^MCP server "files", tool "broken": its input schema cannot be compiled: /);
  });

  it("refuses two tools offered under one name, and a name model APIs refuse", () => {
    expect(() => agentToolsOf(connection, [mcpTool("a.b"), mcpTool("a_b")], {})).toThrow(
      'MCP server "files", tool "a_b": "a.b" is offered as "a_b" too.',
    );
    const long = "x".repeat(60);
    expect(() => agentToolsOf(connection, [mcpTool(long)], { prefix: "server" })).toThrow(
      `MCP server "files", tool "${long}": its name as an agent-core tool, "server_${long}", is not 1-64 letters, digits, "_" or "-" (what model APIs accept).`,
    );
  });
});
