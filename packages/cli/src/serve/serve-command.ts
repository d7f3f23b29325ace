import { existsSync } from "node:fs";
import { isIPv6 } from "node:net";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage, type Logger } from "@agent-core/core";
import { serveNode } from "@agent-core/http";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { parseModelOptions } from "../agent-options.js";
import type { CliIO } from "../cli-io.js";
import { jsonLinesLogger } from "../json-lines-logger.js";
import { modelFromEnv } from "../provider.js";
import { UsageError } from "../usage-error.js";
import { createPageDemoModel } from "./page-demo-model.js";
import { createPageAgent, createPageServer, LOOPBACK_HOSTNAMES } from "./page-server.js";

export interface ServeCommand {
  kind: "serve";
  port: number;
  host: string;
  staticDir: string;
  /** Log lines of the server and its agents to stderr. */
  verbose: boolean;
  /** The environment with --model and --base-url over AGENT_CORE_MODEL and OPENAI_BASE_URL. */
  modelEnv: Record<string, string | undefined>;
  /** Runs durable in this PostgreSQL database, with the secret every serve process shares. */
  durable?: { databaseUrl: string; hookSecret: string; workerId: string };
}

/** The page demo in this repository: from `dist/serve/` or `src/serve/` of the CLI package. */
const EXAMPLE_PAGE = fileURLToPath(new URL("../../../../examples/http-browser/public", import.meta.url));

export function parseServeCommand(
  values: {
    port?: string;
    host?: string;
    static?: string;
    verbose?: boolean;
    "database-url"?: string;
    "worker-id"?: string;
    model?: string | boolean;
    "base-url"?: string | boolean;
  },
  env: Record<string, string | undefined>,
): ServeCommand {
  const port =
    values.port === undefined ? 8787 : /^\d+$/.test(values.port) ? Number(values.port) : Number.NaN;
  if (!Number.isInteger(port) || port > 65_535)
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${values.port}".`);
  // Node listens on every interface for "", and the page has no login: say 0.0.0.0 to mean it.
  if (values.host !== undefined && values.host.trim() === "")
    throw new UsageError(
      `--host needs a host name or an address, got "${values.host}".`,
      "Leave it out for 127.0.0.1 (this machine only); --host 0.0.0.0 listens on every interface.",
    );
  const staticDir = resolve(values.static ?? EXAMPLE_PAGE);
  if (!existsSync(resolve(staticDir, "index.html")))
    throw new UsageError(
      `No index.html in ${staticDir}.`,
      "Pass the page's folder with --static, or run serve from a clone of the agent-core repository.",
    );
  const command: ServeCommand = {
    kind: "serve",
    port,
    host: values.host ?? "127.0.0.1",
    staticDir,
    verbose: values.verbose ?? false,
    modelEnv: parseModelOptions(values, env),
  };
  const databaseUrl = values["database-url"];
  if (databaseUrl === undefined) {
    if (values["worker-id"] !== undefined)
      throw new UsageError("--worker-id is for durable runs: add --database-url.");
    return command;
  }
  if (!/^postgres(ql)?:\/\//i.test(databaseUrl))
    throw new UsageError(`--database-url must be a postgres:// URL, got "${databaseUrl}".`);
  const hookSecret = env.AGENT_CORE_HOOK_SECRET ?? "";
  if (hookSecret.length < 32)
    throw new UsageError(
      "Durable serve needs AGENT_CORE_HOOK_SECRET: 32+ characters of random text, the same in every serve process.",
      'For example: export AGENT_CORE_HOOK_SECRET="$(openssl rand -hex 32)"',
    );
  return { ...command, durable: { databaseUrl, hookSecret, workerId: values["worker-id"] ?? "local" } };
}

/** Serves the page until `io.signal` aborts (Ctrl-C), then closes every run and connection. */
export async function servePage(command: ServeCommand, io: CliIO): Promise<number> {
  const { model, label, demo } = modelFromEnv(command.modelEnv, {
    demoModel: (chunkDelayMs) => createPageDemoModel({ chunkDelayMs }),
  });
  const logger = command.verbose ? jsonLinesLogger(io.stderr) : undefined;
  let durable: Awaited<ReturnType<typeof startDurable>> | undefined;
  let page: ReturnType<typeof createPageServer> | undefined;
  let server: Awaited<ReturnType<typeof serveNode>>;
  const loopback = loopbackHostname(command.host);
  try {
    durable = command.durable && (await startDurable(command.durable, model, logger));
    page = createPageServer({
      model,
      staticDir: command.staticDir,
      logger,
      // On this machine only, only its own names; on a network the names it is reached by are the user's.
      allowedHostnames: loopback === undefined ? undefined : [...LOOPBACK_HOSTNAMES, loopback],
      ...(durable ? { backend: durable.backend, hookSecret: command.durable?.hookSecret } : {}),
    });
    server = await serveNode(page.fetch, { port: command.port, host: command.host, logger });
  } catch (error) {
    // A port in use, a host that does not resolve, a database out of reach: one line, not a stack.
    await page?.close().catch(() => {});
    await durable?.stop().catch(() => {});
    io.stderr.write(`agent-core: serve could not start: ${errorMessage(error)}\n${startHint(command)}\n`);
    return 1;
  }
  io.stdout.write(
    `agent-core serve: open ${server.url}/ in a browser (model: ${label}${demo ? ", offline demo" : ""}${durable ? `, durable runs as worker "${command.durable?.workerId}"` : ""}). Ctrl-C stops.\n`,
  );
  await new Promise<void>((done) => {
    if (io.signal === undefined || io.signal.aborted) return done();
    io.signal.addEventListener("abort", () => done(), { once: true });
  });
  await page.close();
  await server.close();
  await durable?.stop();
  return 0;
}

/**
 * `host` as a request's URL names it, when it is one of this machine's loopback addresses; else
 * undefined. Spelled as the URL parser spells it, so that every way to write one counts: "LOCALHOST"
 * is "localhost", "127.1" is "127.0.0.1", "0:0:0:0:0:0:0:1" is "[::1]".
 */
function loopbackHostname(host: string): string | undefined {
  const url = `http://${isIPv6(host) ? `[${host}]` : host}/`;
  const name = URL.canParse(url) ? new URL(url).hostname : host;
  return name === "localhost" || name === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(name) ? name : undefined;
}

function startHint(command: ServeCommand): string {
  return command.durable
    ? "Check --database-url (is PostgreSQL running there?), --port and --host."
    : "Pass another --port (0 picks a free one) or --host, or stop what listens there.";
}

/**
 * The durable runtime of this process (a worker of the run queue, which resumes what a crashed
 * process with the same worker id left) and the server's backend on it. Loaded only when asked
 * for: without a database nothing of DBOS is imported.
 */
async function startDurable(
  options: NonNullable<ServeCommand["durable"]>,
  model: LanguageModelV4,
  logger: Logger | undefined,
) {
  const { DurableRuntime, durableBackend } = await import("@agent-core/dbos");
  const runtime = new DurableRuntime({
    databaseUrl: options.databaseUrl,
    executorId: options.workerId,
    queue: { workerConcurrency: 16 },
    agents: { page: () => createPageAgent(model, logger) },
  });
  let backend: Awaited<ReturnType<typeof durableBackend>>;
  try {
    await runtime.launch();
    backend = await durableBackend({ databaseUrl: options.databaseUrl, runs: runtime, agentName: "page" });
  } catch (error) {
    // What was launched would keep the process alive after the error is reported.
    await runtime.shutdown().catch(() => {});
    throw error;
  }
  return {
    backend,
    async stop() {
      await backend.close();
      await runtime.shutdown();
    },
  };
}
