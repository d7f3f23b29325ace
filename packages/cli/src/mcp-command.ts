import { Writable } from "node:stream";
import { errorMessage } from "@agent-core/core";
import { createAgentMcpServer } from "@agent-core/mcp";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { type AgentOptions, createCliAgent } from "./agent-options.js";
import type { CliIO } from "./cli-io.js";
import { modelFromEnv } from "./provider.js";
import { UsageError } from "./usage-error.js";

/** How each call's agent is made: the options `agent-core run` takes. */
export interface McpCommand {
  kind: "mcp";
  agent: AgentOptions;
}

/**
 * Serves the agent as an MCP tool, `ask_agent`, over stdin and stdout, until stdin ends (the
 * client went away) or `io.signal` aborts (Ctrl-C): 0. A connection that fails on its own (a
 * message over the SDK's 10 MiB) ends it too, with a line on stderr saying why: 1. stdout
 * carries the protocol only: what a person should read goes to stderr, which MCP clients keep as
 * the server's log.
 */
export async function serveMcp(command: McpCommand, io: CliIO): Promise<number> {
  const stdin = io.stdin;
  if (stdin === undefined)
    throw new UsageError("agent-core mcp speaks MCP over standard input, and this CLI was given none.");
  const { model, label } = modelFromEnv(command.agent.modelEnv);
  // One agent now, not only at the first call: options it refuses (an unknown orchestrator) are
  // bad usage, exit 2, as for run, rather than a server whose every call answers with that error.
  createCliAgent(command.agent, model);
  const server = createAgentMcpServer({ agent: () => createCliAgent(command.agent, model) });
  const stdout = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      io.stdout.write(String(chunk));
      done();
    },
  });
  // The SDK's transport closes itself on a message it cannot buffer, and stops reading stdin: this
  // process would read nothing more, yet never see stdin end. Its last error says why.
  let lastError: unknown;
  let failed = false;
  server.server.onerror = (error) => {
    lastError = error;
  };
  const closedByItself = new Promise<void>((closed) => {
    server.server.onclose = () => {
      failed = true;
      closed();
    };
  });
  await server.connect(new StdioServerTransport(stdin, stdout));
  io.stderr.write(
    `agent-core mcp: serving the agent as the MCP tool "ask_agent" on stdin and stdout (model: ${label}).\n`,
  );
  await new Promise<void>((done) => {
    stdin.once("end", done);
    stdin.once("close", done);
    void closedByItself.then(done);
    if (io.signal?.aborted) return done();
    io.signal?.addEventListener("abort", () => done(), { once: true });
  });
  if (failed) {
    io.stderr.write(`agent-core mcp: the connection failed: ${errorMessage(lastError ?? "it closed")}\n`);
    return 1;
  }
  server.server.onclose = undefined;
  // Closing cancels the calls still running: their runs are aborted.
  await server.close().catch((error: unknown) => io.stderr.write(`agent-core mcp: ${errorMessage(error)}\n`));
  return 0;
}
