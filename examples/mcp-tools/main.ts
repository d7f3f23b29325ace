/**
 * An agent with the tools of an MCP server no one here wrote: the reference filesystem server,
 * started on a folder of notes, offers its tools (list, read, write, search, …) with their own
 * JSON Schemas; the agent reads the notes and answers. Offline it plays a scripted session (the
 * offline demo model knows only arithmetic and the time); with OPENAI_API_KEY set a real
 * OpenAI-compatible model chooses the tools itself.
 *
 *   pnpm --filter @agent-core/example-mcp-tools start
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { modelFromEnv } from "@agent-core/cli";
import { connectMcp } from "@agent-core/mcp";
import { Agent } from "agent-core";
import { scriptedSession } from "./scripted-session.js";

const notes = mkdtempSync(join(tmpdir(), "agent-core-notes-"));
writeFileSync(join(notes, "todo.md"), "- buy milk\n- call Ada about the trip\n");

const choice = modelFromEnv(process.env);
const { model, label } = choice.demo ? scriptedSession(notes) : choice;
console.log(`model: ${label}`);

// Elsewhere: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", notes] }.
// Here the server is this example's dependency, run from node_modules.
await using files = await connectMcp(
  { command: process.execPath, args: [filesystemServerBin(), notes], stderr: "ignore" },
  { name: "files" },
);
const tools = await files.tools({ prefix: "fs" });
console.log(`tools from MCP server "${files.name}": ${tools.map((tool) => tool.name).join(", ")}`);

const agent = new Agent({
  systemPrompt: `You help with the notes in the folder ${notes}. Use the fs_ tools to read them.`,
  provider: model,
  tools,
  limits: { maxCycles: 6 },
});
agent.on("tool_call", (event) => console.log(`  → ${event.toolName}(${JSON.stringify(event.args)})`));
agent.on("tool_result", (event) =>
  console.log(`  ← ${event.toolName} [${event.status}] ${JSON.stringify(event.result ?? event.error)}`),
);

const result = await agent.prompt("What is on my to-do list?").result();
console.log(result.text);
console.log(`stop reason: ${result.stopReason}`);
// A failed run has no answer to show; its error says why (a refused key, a server down, …).
if (result.error !== undefined) console.error(`error: ${result.error.message}`);
rmSync(notes, { recursive: true, force: true });
if (result.stopReason !== "completed") process.exitCode = 1;

/** The file the server's package runs as its bin. */
function filesystemServerBin(): string {
  const manifest = createRequire(import.meta.url).resolve(
    "@modelcontextprotocol/server-filesystem/package.json",
  );
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: Record<string, string> };
  return join(dirname(manifest), bin["mcp-server-filesystem"] as string);
}
