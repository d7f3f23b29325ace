import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serveNode } from "@agent-core/http";
import type { CliIO } from "../cli-io.js";
import { modelFromEnv } from "../provider.js";
import { UsageError } from "../usage-error.js";
import { createPageDemoModel } from "./page-demo-model.js";
import { createPageServer } from "./page-server.js";

export interface ServeCommand {
  kind: "serve";
  port: number;
  host: string;
  staticDir: string;
}

/** The page demo in this repository: from `dist/serve/` or `src/serve/` of the CLI package. */
const EXAMPLE_PAGE = fileURLToPath(new URL("../../../../examples/http-browser/public", import.meta.url));

export function parseServeCommand(values: { port?: string; host?: string; static?: string }): ServeCommand {
  const port =
    values.port === undefined ? 8787 : /^\d+$/.test(values.port) ? Number(values.port) : Number.NaN;
  if (!Number.isInteger(port) || port > 65_535)
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${values.port}".`);
  const staticDir = resolve(values.static ?? EXAMPLE_PAGE);
  if (!existsSync(resolve(staticDir, "index.html")))
    throw new UsageError(
      `No index.html in ${staticDir}.`,
      "Pass the page's folder with --static, or run serve from a clone of the agent-core repository.",
    );
  return { kind: "serve", port, host: values.host ?? "127.0.0.1", staticDir };
}

/** Serves the page until `io.signal` aborts (Ctrl-C), then closes every run and connection. */
export async function servePage(command: ServeCommand, io: CliIO): Promise<number> {
  const { model, label, demo } = modelFromEnv(io.env, {
    demoModel: (chunkDelayMs) => createPageDemoModel({ chunkDelayMs }),
  });
  const page = createPageServer({ model, staticDir: command.staticDir });
  const server = await serveNode(page.fetch, { port: command.port, host: command.host });
  io.stdout.write(
    `agent-core serve: open ${server.url}/ in a browser (model: ${label}${demo ? ", offline demo" : ""}). Ctrl-C stops.\n`,
  );
  await new Promise<void>((done) => {
    if (io.signal === undefined || io.signal.aborted) return done();
    io.signal.addEventListener("abort", () => done(), { once: true });
  });
  page.close();
  await server.close();
  return 0;
}
