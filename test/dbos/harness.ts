import {
  type DurableBackendOptions,
  DurableRuntime,
  type DurableRuntimeOptions,
  durableBackend,
} from "@agent-core/dbos";
import { type AgentServerOptions, createAgentServer, serveNode } from "@agent-core/http";
import { script, scriptedModel } from "@agent-core/testing";
import { Agent, defineTool } from "agent-core";
import pg from "pg";
import { z } from "zod";
import { SECRET } from "../http/harness.js";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// What the durable tests share: this process as a worker on a throwaway database, an HTTP server
// on a durable backend, an agent whose tool needs approval, a tool that hangs until its run is cancelled, a gate the test opens, and a lock that keeps a
// table from being written.

/**
 * This process as a worker: a throwaway cluster, a database on it, connections of the test's own
 * (2 at most, none opened until used; one an outage drops is let go, not an error), and a runtime
 * launched on that database. `stop()` ends what `start()` got to, the runtime first.
 */
export class DurableWorker {
  #postgres?: ThrowawayPostgres;
  #pool?: pg.Pool;
  #runtime?: DurableRuntime;

  async start(
    database: string,
    options: Omit<DurableRuntimeOptions, "databaseUrl">,
  ): Promise<{ postgres: ThrowawayPostgres; databaseUrl: string; pool: pg.Pool; runtime: DurableRuntime }> {
    const postgres = await startPostgres();
    this.#postgres = postgres;
    const databaseUrl = await postgres.createDatabase(database);
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    pool.on("error", () => {});
    this.#pool = pool;
    const runtime = new DurableRuntime({ databaseUrl, ...options });
    this.#runtime = runtime;
    await runtime.launch();
    return { postgres, databaseUrl, pool, runtime };
  }

  async stop(): Promise<void> {
    await this.#runtime?.shutdown();
    await this.#pool?.end();
    this.#postgres?.stop();
  }
}

/** An HTTP server on a durable backend, as a server process runs one. */
export interface DurableServer {
  url: string;
  /** Closes the server (its streams end), then its HTTP server. */
  close(): Promise<void>;
}

/**
 * A durable backend of `backend`'s options, an agent server on it (its ledger the backend's, the
 * tests' hook secret, every request alice's unless `server` says otherwise), served over HTTP.
 */
export async function durableServer(
  backend: DurableBackendOptions,
  server: Partial<Omit<AgentServerOptions, "backend" | "ledger">> = {},
): Promise<DurableServer> {
  const durable = await durableBackend(backend);
  const agentServer = createAgentServer({
    backend: durable,
    ledger: durable.ledger,
    hookSecret: SECRET,
    authorize: () => ({ userId: "alice" }),
    ...server,
  });
  const node = await serveNode(agentServer.fetch);
  return {
    url: node.url,
    async close() {
      await agentServer.close();
      await node.close();
    },
  };
}

/**
 * An agent maker whose agents call a `note` tool that needs approval, then answer "Noted.";
 * `runs()` counts the notes taken (0 while no approval came).
 */
export function approvingNotes(): { agent: () => Agent; runs: () => number } {
  let runs = 0;
  const note = defineTool({
    name: "note",
    description: "Takes a note",
    inputSchema: z.object({}),
    execute: () => {
      runs++;
      return "noted";
    },
  });
  return {
    agent: () =>
      new Agent({
        provider: scriptedModel([[script.toolCall("note", {}, { id: "n1" })], [script.text("Noted.")]]),
        tools: [note],
        beforeToolCall: () => ({ requireApproval: true }),
      }),
    runs: () => runs,
  };
}

/**
 * A `gate` tool that waits until the test opens it: `reached` settles when a run enters it, `open()`
 * lets it return "open". Holds a run at a known point without sleeping.
 */
export function gateTool(): {
  gate: ReturnType<typeof defineTool>;
  reached: Promise<void>;
  open: () => void;
} {
  let entered!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const gate = defineTool({
    name: "gate",
    description: "Waits until the test opens it",
    inputSchema: z.object({}),
    execute: async () => {
      entered();
      await opened;
      return "open";
    },
  });
  return { gate, reached, open };
}

/** Waits until its signal aborts (a cancelled run). */
export const hang = defineTool({
  name: "hang",
  description: "Hangs until cancelled",
  inputSchema: z.object({}),
  execute: (_, { signal }) =>
    new Promise<string>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
});

/**
 * Runs `body` while a transaction of its own holds `table` locked (`agent_core_events`: no event
 * is stored meanwhile; `dbos.notifications`: no message), then lets it go.
 */
export async function whileLocked(
  databaseUrl: string,
  table: string,
  body: () => Promise<void>,
): Promise<void> {
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query("BEGIN");
    await lock.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
    await body();
  } finally {
    await lock.query("ROLLBACK");
    await lock.end();
  }
}
