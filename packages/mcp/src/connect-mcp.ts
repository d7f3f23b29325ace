import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { errorMessage, InvalidConfigError, LONGEST_TIMER_MS, refuseUnknownKeys } from "@agent-core/core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { brokenAnswerFetch, RESUME_TRIES } from "./broken-answers-http.js";
import { readBrokenAnswers } from "./broken-answers-stdio.js";
import { brokenStreamFetch } from "./broken-stream-fetch.js";
import { McpConnection } from "./mcp-connection.js";
import { McpServerError } from "./mcp-server-error.js";
import {
  describeServer,
  isHttpServer,
  type McpHttpServer,
  type McpServerConfig,
  type McpStdioServer,
} from "./server-config.js";

export interface ConnectMcpOptions {
  /** How tool errors and `McpServerError`s name the server; by default the name it gives itself. */
  name?: string;
  /**
   * How long a call may wait for the server's answer before it is cancelled, in ms (default
   * 60 000, the MCP SDK's; at most 2147483647, as for agent-core's own timeouts). agent-core's
   * `timeouts.toolMs` applies as well: the first to run out cancels the call.
   */
  callTimeoutMs?: number;
}

// Read at run time rather than imported as JSON: package.json lies outside the compiled rootDir.
const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

const DEFAULT_CALL_TIMEOUT_MS = 60_000;

// The keys connectMcp() knows; any other is refused, as a misspelt one would silently not apply.
const STDIO_KEYS = [
  "command",
  "args",
  "env",
  "cwd",
  "stderr",
] as const satisfies readonly (keyof McpStdioServer)[];
const HTTP_KEYS = ["url", "headers"] as const satisfies readonly (keyof McpHttpServer)[];
const OPTION_KEYS = ["name", "callTimeoutMs"] as const satisfies readonly (keyof ConnectMcpOptions)[];

/**
 * Connects to an MCP server: starts `{ command, args }` and speaks MCP over its stdin and stdout,
 * or reaches `{ url }` over Streamable HTTP. Throws an `InvalidConfigError` for a configuration
 * that names neither, and an `McpServerError` when the server cannot be started or reached.
 */
export async function connectMcp(
  server: McpServerConfig,
  options: ConnectMcpOptions = {},
): Promise<McpConnection> {
  const callTimeoutMs = checkOptions(server, options);
  // Node's spawn blames the command for a working directory that is not there ("spawn node ENOENT").
  if (!isHttpServer(server) && server.cwd !== undefined && !isDirectory(server.cwd))
    throw new McpServerError(
      options.name ?? describeServer(server),
      `could not start: its working directory ${JSON.stringify(server.cwd)} is not a directory`,
    );
  const client = new Client({ name: "agent-core", version });
  const transport = transportFor(server);
  try {
    await client.connect(transport);
  } catch (error) {
    await client.close();
    throw new McpServerError(
      options.name ?? describeServer(server),
      `could not connect: ${errorMessage(error)}`,
      {
        cause: error,
      },
    );
  }
  const name = options.name ?? client.getServerVersion()?.name ?? describeServer(server);
  return new McpConnection(client, name, callTimeoutMs);
}

function transportFor(server: McpServerConfig): Transport {
  if (isHttpServer(server)) {
    const transport: StreamableHTTPClientTransport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: server.headers ?? {} },
      // A stream that breaks off mid-answer means the server is gone: close, so the calls waiting end now.
      // An answer such as `"result": null` fails its call at once, where the SDK alone would drop it,
      // and so does an answer whose stream the server does not resume.
      fetch: brokenStreamFetch(
        () => void transport.close(),
        brokenAnswerFetch((message) => transport.onmessage?.(message)),
      ),
      // The SDK's own, said here as brokenAnswerFetch counts the tries of a resume.
      reconnectionOptions: {
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 30_000,
        reconnectionDelayGrowFactor: 1.5,
        maxRetries: RESUME_TRIES,
      },
    });
    return transport;
  }
  const transport = new StdioClientTransport({
    command: server.command,
    args: [...(server.args ?? [])],
    ...(server.env === undefined ? {} : { env: server.env }),
    ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
    stderr: server.stderr ?? "inherit",
  });
  // An answer such as `"result": null` fails its call at once, where the SDK alone would drop it.
  readBrokenAnswers(transport);
  return transport;
}

function checkOptions(server: McpServerConfig, options: ConnectMcpOptions): number {
  const { command, url } = (server ?? {}) as { command?: unknown; url?: unknown };
  if ((typeof command === "string" && command !== "") === (url !== undefined))
    throw new InvalidConfigError(
      "connectMcp() takes { command, args } for a server to start, or { url } for one over HTTP: one of them.",
    );
  if (url !== undefined && !URL.canParse(String(url)))
    throw new InvalidConfigError(`connectMcp(): ${JSON.stringify(String(url))} is not a URL.`);
  if (url === undefined) refuseUnknownKeys("connectMcp() server (over stdio)", server, STDIO_KEYS);
  else refuseUnknownKeys("connectMcp() server (over HTTP)", server, HTTP_KEYS);
  if (options === null || typeof options !== "object")
    throw new InvalidConfigError(`connectMcp(): its options must be an object, got ${String(options)}.`);
  refuseUnknownKeys("connectMcp() options", options, OPTION_KEYS);
  const { name } = options as { name?: unknown };
  if (name !== undefined && !(typeof name === "string" && /\S/.test(name)))
    throw new InvalidConfigError(
      `connectMcp(): name must be a non-blank string, got ${JSON.stringify(name)}.`,
    );
  // A string would be spread into its characters, each an argument of its own: "--port 3000" as "-", "-", "p", …
  const { args } = server as { args?: unknown };
  if (args !== undefined && !(Array.isArray(args) && args.every((arg) => typeof arg === "string")))
    throw new InvalidConfigError(
      `connectMcp(): args must be an array of strings, one per argument, got ${JSON.stringify(args)}.`,
    );
  const { env, stderr, headers, cwd } = server as {
    env?: unknown;
    stderr?: unknown;
    headers?: unknown;
    cwd?: unknown;
  };
  if (cwd !== undefined && typeof cwd !== "string")
    throw new InvalidConfigError(`connectMcp(): cwd must be a string, got ${JSON.stringify(cwd)}.`);
  // An undefined variable is fine: Node's spawn leaves it out (`{ KEY: process.env.KEY }` when KEY is unset).
  const badEnv = stringsProblem(env, { undefinedAllowed: true });
  if (badEnv !== undefined)
    throw new InvalidConfigError(
      `connectMcp(): env must be an object of strings, { NAME: "value" }: ${badEnv}.`,
    );
  // An undefined header is not: fetch would send it as the word "undefined".
  const badHeaders = stringsProblem(headers, { undefinedAllowed: false });
  if (badHeaders !== undefined)
    throw new InvalidConfigError(
      `connectMcp(): headers must be an object of strings, { name: "value" }: ${badHeaders}.`,
    );
  // Any other value (a "pipe" nobody reads) could leave the server blocked on a full stderr.
  if (stderr !== undefined && stderr !== "inherit" && stderr !== "ignore")
    throw new InvalidConfigError(
      `connectMcp(): stderr must be "inherit" or "ignore", got ${JSON.stringify(stderr)}.`,
    );
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  if (!Number.isSafeInteger(callTimeoutMs) || callTimeoutMs < 1 || callTimeoutMs > LONGEST_TIMER_MS)
    throw new InvalidConfigError(
      `connectMcp(): callTimeoutMs must be a whole number of ms >= 1 and <= ${LONGEST_TIMER_MS}, got ${callTimeoutMs}.`,
    );
  return callTimeoutMs;
}

/**
 * What is wrong with a server's `env` or `headers`, told without their values (they are often
 * secrets). Spread, a string would give entries named "0", "1", …
 */
function stringsProblem(
  record: unknown,
  { undefinedAllowed }: { undefinedAllowed: boolean },
): string | undefined {
  if (record === undefined) return undefined;
  if (record === null || typeof record !== "object" || Array.isArray(record))
    return `got ${Array.isArray(record) ? "an array" : record === null ? "null" : `a ${typeof record}`}`;
  const notStrings = Object.entries(record)
    .filter(([, value]) => typeof value !== "string" && !(undefinedAllowed && value === undefined))
    .map(([name]) => name);
  if (notStrings.length === 0) return undefined;
  return `${notStrings.join(", ")} ${notStrings.length === 1 ? "is" : "are"} not a string`;
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}
