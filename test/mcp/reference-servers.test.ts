import "@agent-core/agentic";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, type ToolResultMessage } from "@agent-core/core";
import { connectMcp } from "@agent-core/mcp";
import { script, scriptedModel } from "@agent-core/testing";
import { afterAll, describe, expect, it } from "vitest";
import { everythingServer, filesystemServer } from "./servers.js";

// Published MCP reference servers no one here wrote, each a real child process over stdio.

function resultsOf(messages: readonly { role: string }[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
}

describe("@modelcontextprotocol/server-everything", () => {
  it("offers its tools to the model with their JSON Schemas as the server lists them, and runs them", async () => {
    await using mcp = await connectMcp(everythingServer());
    const listed = (await mcp.client.listTools()).tools;
    const tools = await mcp.tools();
    expect(mcp.name).toBe("mcp-servers/everything");
    // simulate-research-query runs only as an MCP task: left out.
    expect(tools.map((tool) => tool.name)).toEqual(
      listed
        .filter((tool) => tool.execution?.taskSupport !== "required")
        .map((tool) => tool.name.replaceAll(".", "_")),
    );
    expect(tools.map((tool) => tool.name)).not.toContain("simulate-research-query");

    const provider = scriptedModel([
      [
        script.toolCall("echo", { message: "hello" }, { id: "c1" }),
        script.toolCall("get-sum", { a: 2, b: 3 }, { id: "c2" }),
      ],
      [script.text("It echoed hello; 2+3 = 5.")],
    ]);
    const agent = new Agent({ provider, tools });
    const result = await agent.prompt("Echo hello and add 2 and 3").result();
    expect(result.stopReason).toBe("completed");
    expect(resultsOf(result.messages).map(({ content, status }) => [content, status])).toEqual([
      ["Echo: hello", "ok"],
      ["The sum of 2 and 3 is 5.", "ok"],
    ]);
    const sent = provider.doStreamCalls[0]?.tools ?? [];
    const echo = listed.find((tool) => tool.name === "echo");
    expect(sent.find((tool) => tool.name === "echo")).toEqual({
      type: "function",
      name: "echo",
      description: echo?.description,
      inputSchema: echo?.inputSchema,
    });
    expect(sent.map((tool) => tool.type === "function" && tool.inputSchema)).toEqual(
      tools.map((tool) => listed.find((listedTool) => listedTool.name === tool.name)?.inputSchema),
    );
  });

  it("answers arguments its schema refuses with an error result naming the field", async () => {
    await using mcp = await connectMcp(everythingServer(), { name: "everything" });
    const provider = scriptedModel([
      [script.toolCall("get-sum", { a: 2, c: 3 })],
      [script.toolCall("get-sum", { a: 2, b: 3 })],
      [script.text("5")],
    ]);
    const agent = new Agent({ provider, tools: await mcp.tools() });
    const result = await agent.prompt("2+3?").result();
    const [invalid, valid] = resultsOf(result.messages);
    expect(invalid?.status).toBe("error");
    expect(invalid?.content).toBe('Invalid arguments for tool "get-sum": b: is required.');
    expect(valid?.content).toBe("The sum of 2 and 3 is 5.");
  });

  it("prefixes every tool's name, and calls the tool by its own name", async () => {
    await using mcp = await connectMcp(everythingServer());
    const tools = await mcp.tools({ prefix: "demo" });
    expect(tools.map((tool) => tool.name)).toContain("demo_echo");
    const provider = scriptedModel([
      [script.toolCall("demo_echo", { message: "hi" })],
      [script.text("done")],
    ]);
    const result = await new Agent({ provider, tools }).prompt("echo hi").result();
    expect(resultsOf(result.messages)[0]?.content).toBe("Echo: hi");
  });
});

describe("@modelcontextprotocol/server-filesystem on a temporary folder", () => {
  const dir = mkdtempSync(join(tmpdir(), "agent-core-mcp-"));
  writeFileSync(join(dir, "notes.txt"), "buy milk\n");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("lists and reads the folder for the agent; a tool's structuredContent is what the model reads", async () => {
    await using mcp = await connectMcp(filesystemServer(dir), { name: "files" });
    const provider = scriptedModel([
      [script.toolCall("fs_list_directory", { path: dir })],
      [script.toolCall("fs_read_text_file", { path: join(dir, "notes.txt") })],
      [script.toolCall("fs_read_text_file", { path: "/etc/passwd" })],
      [script.text("Your notes say: buy milk.")],
    ]);
    const agent = new Agent({ provider, tools: await mcp.tools({ prefix: "fs" }) });
    const result = await agent.prompt("What do my notes say?").result();
    expect(result.stopReason).toBe("completed");
    const [listing, notes, outside] = resultsOf(result.messages);
    expect(listing).toMatchObject({ status: "ok", details: { content: "[FILE] notes.txt" } });
    expect(notes).toMatchObject({ status: "ok", content: JSON.stringify({ content: "buy milk\n" }) });
    // The server's own refusal (isError) is an error result with its text.
    expect(outside?.status).toBe("error");
    expect(outside?.content).toMatch(/Access denied/);
  });
});
