import "@agent-core/agentic";
import { readFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createUseChatHandler, type NodeServer, serveNode } from "@agent-core/http";
import { Agent } from "agent-core";
import { buildPage, distDir } from "./build.js";
import { createDemoModel } from "./demo-model.js";
import { bookTable, getLocation } from "./tools.js";

const pages: Record<string, { file: string; type: string }> = {
  "/": { file: fileURLToPath(new URL("./index.html", import.meta.url)), type: "text/html; charset=utf-8" },
  "/app.js": { file: `${distDir}app.js`, type: "text/javascript; charset=utf-8" },
};

/**
 * The example's server: the page (index.html and its bundle) and `POST /api/chat`, where useChat
 * talks to an agent-core agent. Build the page first (`buildPage()`).
 */
export async function serveExample(options: { port?: number; chunkDelayMs?: number } = {}): Promise<{
  node: NodeServer;
  close(): Promise<void>;
}> {
  const chat = createUseChatHandler({
    agent: () => new Agent({ provider: createDemoModel(options), tools: [getLocation, bookTable] }),
    // One user for this local demo: your session check goes here (undefined: 401).
    authorize: () => ({ userId: "demo" }),
  });
  const node = await serveNode(
    async (request) => {
      const { pathname } = new URL(request.url);
      if (pathname === "/api/chat") return chat.fetch(request);
      const page = pages[pathname];
      if (page === undefined || request.method !== "GET") return new Response("Not found", { status: 404 });
      return new Response(await readFile(page.file), { headers: { "content-type": page.type } });
    },
    options.port === undefined ? {} : { port: options.port },
  );
  return {
    node,
    async close() {
      chat.close();
      await node.close();
    },
  };
}

// `pnpm start` (tsx server.ts): builds the page, serves it, and says where.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await buildPage();
  const { node } = await serveExample({ port: Number(process.env.PORT ?? 3000) });
  console.log(`useChat example on ${node.url} (Ctrl-C stops it)`);
}
