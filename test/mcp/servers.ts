import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { McpStdioServer } from "@agent-core/mcp";

// The MCP servers the tests talk to: published reference servers started from node_modules (no
// npx, no network), and the fixture server of this folder.

const require = createRequire(import.meta.url);
const root = join(import.meta.dirname, "..", "..");

/** The file a package's one bin runs. */
function binOf(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: Record<string, string> };
  return join(dirname(manifest), Object.values(bin)[0] as string);
}

/** `@modelcontextprotocol/server-everything`, over stdio. */
export function everythingServer(): McpStdioServer {
  return {
    command: process.execPath,
    args: [binOf("@modelcontextprotocol/server-everything"), "stdio"],
    stderr: "ignore",
  };
}

/** `@modelcontextprotocol/server-filesystem`, allowed into `dir` only. */
export function filesystemServer(dir: string): McpStdioServer {
  return {
    command: process.execPath,
    args: [binOf("@modelcontextprotocol/server-filesystem"), dir],
    stderr: "ignore",
  };
}

const FIXTURE = ["--import", "tsx", join(import.meta.dirname, "fixture-server.ts")];

/** The fixture server over stdio. */
export function fixtureServer(): McpStdioServer {
  return { command: process.execPath, args: FIXTURE, cwd: root, stderr: "ignore" };
}

/** A hand-written stdio server whose answers to some calls break JSON-RPC's schema (`broken-answer-server.ts`). */
export function brokenAnswerServer(): McpStdioServer {
  return {
    command: process.execPath,
    args: ["--import", "tsx", join(import.meta.dirname, "broken-answer-server.ts")],
    cwd: root,
    stderr: "ignore",
  };
}

/** The fixture server over Streamable HTTP, in a process of its own: its URL, and a way to end it. */
export async function startHttpFixture(): Promise<{ url: string; pid: number; stop: () => void }> {
  const child = spawn(process.execPath, [...FIXTURE, "http"], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\S+)/.exec(out);
      if (match) resolve(match[1] as string);
    });
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`the HTTP fixture exited with ${code}`)));
  });
  return { url, pid: child.pid as number, stop: () => child.kill() };
}
