import { Agent, defineTool } from "@agent-core/core";
import { DurableRuntime, durableBackend } from "@agent-core/dbos";
import { createAgentServer, serveNode } from "@agent-core/http";
import { script, scriptedModel } from "@agent-core/testing";
import pg from "pg";
import { z } from "zod";
import "@agent-core/agentic";

// One process of the durable HTTP tests: a worker of the run queue and an HTTP server on the
// same database, as `agent-core serve --database-url` runs. Prints its URL, serves until killed.

const [databaseUrl, executorId] = process.argv.slice(2) as [string, string];
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
await pool.query(
  "CREATE TABLE IF NOT EXISTS tool_runs (run_id text, tool_call_id text, pid integer, at timestamptz DEFAULT now())",
);

const readPage = defineTool({
  name: "read_page",
  description: "Reads the user's page",
  inputSchema: z.object({ selector: z.string() }),
  execution: "client",
});
const add = defineTool({
  name: "add",
  description: "Adds two numbers, slowly.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }, { toolCallId, idempotencyKey }) => {
    await pool.query("INSERT INTO tool_runs (run_id, tool_call_id, pid) VALUES ($1, $2, $3)", [
      idempotencyKey.slice(0, idempotencyKey.lastIndexOf(":")),
      toolCallId,
      process.pid,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return a + b;
  },
});

/** Reads the page (a client tool), adds (slowly), answers: by the number of replies so far. */
const pager = () =>
  new Agent({
    provider: scriptedModel(
      Array.from({ length: 10 }, () => (options: { prompt: { role: string; content: unknown }[] }) => {
        const turn = options.prompt.filter((message) => message.role === "assistant").length;
        if (turn === 0) return [script.toolCall("read_page", { selector: "h1" }, { id: "r1" })];
        if (turn === 1) return [script.toolCall("add", { a: 1, b: 2 }, { id: "c1" })];
        return [script.text("Read ", "it ", "and added.")];
      }),
    ),
    tools: [readPage, add],
  });

const runtime = new DurableRuntime({
  databaseUrl,
  executorId,
  queue: { workerConcurrency: 2 },
  agents: { pager },
});
await runtime.launch();
const backend = await durableBackend({ databaseUrl, runs: runtime, agentName: "pager", pollMs: 200 });
const server = createAgentServer({
  backend,
  ledger: backend.ledger,
  hookSecret: "a shared secret of at least 32 characters",
  authorize: (request) => {
    const user = request.headers.get("x-user");
    return user ? { userId: user } : undefined;
  },
});
const node = await serveNode(server.fetch);
console.log(node.url);
