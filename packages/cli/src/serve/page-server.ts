import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Agent, type Logger } from "@agent-core/core";
import { createAgentServer, type RunBackend, type TokenLedger } from "@agent-core/http";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { pageTools } from "./page-tools.js";
import { staticFile } from "./static-files.js";

export const PAGE_SYSTEM_PROMPT =
  "You help the user with the web page they have open. Use read_page to see it, highlight and " +
  "edit_element to change it (ask with confirm before editing), and count_words for word counts.";

export interface PageServerOptions {
  model: LanguageModelV4;
  /** The page's files (index.html, app.js, …). */
  staticDir: string;
  /** How long a page tool may take to answer (default 60 s). */
  clientToolTimeoutMs?: number;
  /** Where runs execute (default: agents in this process); a durable backend needs `hookSecret`. */
  backend?: RunBackend & { ledger?: TokenLedger };
  /** Signs hook tokens (default: random, fine for one process). */
  hookSecret?: string;
  /** Where the server's and its agents' log lines go (default: silent). */
  logger?: Logger;
  /**
   * The host names requests may be addressed to (their `Host`, without the port); others get 403.
   * Default: any. `agent-core serve` on this machine only allows its loopback names: the page has
   * no login, and a web page of another site can reach a local server through DNS rebinding,
   * under a host name of its own.
   */
  allowedHostnames?: readonly string[];
}

/** The names of this machine's loopback addresses, as a `Host` header has them. */
export const LOOPBACK_HOSTNAMES: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** The page's agent: its system prompt, the model, the page tools. */
export function createPageAgent(model: LanguageModelV4, logger?: Logger): Agent {
  return new Agent({ systemPrompt: PAGE_SYSTEM_PROMPT, provider: model, tools: pageTools, logger });
}

/** Where `@agent-core/client`'s compiled files are: the page imports them from `/client/`. */
export function clientDistDir(): string {
  // Through package.json, whatever export conditions are on: the browser needs the compiled files.
  return join(dirname(createRequire(import.meta.url).resolve("@agent-core/client/package.json")), "dist");
}

/**
 * The page demo as one Fetch API handler: the agent API under `/api` (page tools run in the
 * browser as client tools, `count_words` on the server), the client library under `/client/`, and
 * the page itself. One local user: this is a demo for your own machine, not a deployment (see
 * docs/http.md for `authorize`).
 */
export function createPageServer(options: PageServerOptions): {
  fetch(request: Request): Promise<Response>;
  close(): Promise<void>;
} {
  const agents = createAgentServer({
    ...(options.backend
      ? { backend: options.backend, ledger: options.backend.ledger }
      : { agent: () => createPageAgent(options.model, options.logger) }),
    authorize: () => ({ userId: "local" }),
    hookSecret: options.hookSecret ?? randomBytes(32).toString("hex"),
    basePath: "/api",
    clientToolTimeoutMs: options.clientToolTimeoutMs,
    logger: options.logger,
  });
  const clientDir = clientDistDir();
  return {
    async fetch(request) {
      const { pathname, hostname } = new URL(request.url);
      if (options.allowedHostnames !== undefined && !options.allowedHostnames.includes(hostname))
        return new Response(`This server answers requests for ${options.allowedHostnames.join(", ")} only.`, {
          status: 403,
        });
      if (pathname === "/api" || pathname.startsWith("/api/")) return agents.fetch(request);
      // Outside /api are only the page's files; HTTP requires a 405 to name the methods that work.
      if (request.method !== "GET" && request.method !== "HEAD")
        return new Response(null, { status: 405, headers: { Allow: "GET, HEAD" } });
      const file = pathname.startsWith("/client/")
        ? await staticFile(clientDir, pathname.slice("/client".length))
        : await staticFile(options.staticDir, pathname);
      return file ?? new Response("Not found", { status: 404 });
    },
    close: () => agents.close(),
  };
}
