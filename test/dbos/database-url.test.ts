import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DurableRunClient, DurableRuntime } from "@agent-core/dbos";
import { InvalidConfigError } from "agent-core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// A database URL that leads nowhere: `launch()` and `DurableRunClient.connect()` fail at once
// with a clear error, and leave nothing that holds the process open. Each runs in a process of
// its own (DBOS is one per process), which must end by itself.

const CONNECTING = fileURLToPath(new URL("./connecting.ts", import.meta.url));
let postgres: ThrowawayPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);

afterAll(() => postgres?.stop());

/** The process's JSON line, or a rejection when it has not ended by itself within `timeoutMs`. */
function connecting(mode: "runtime" | "client", databaseUrl: string, timeoutMs = 30_000): Promise<unknown> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", CONNECTING, mode, databaseUrl],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  child.stdout?.on("data", (chunk) => (stdout += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${mode} had not ended after ${timeoutMs} ms; it printed: ${stdout}`));
    }, timeoutMs);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve(JSON.parse(stdout.trim().split("\n").at(-1) as string));
    });
  });
}

describe("a database URL", () => {
  it("that is not postgres:// is refused by the runtime and the client alike: InvalidConfigError", async () => {
    const message = 'databaseUrl must be a postgres:// URL, got "mysql://db".';
    expect(() => new DurableRuntime({ databaseUrl: "mysql://db", agents: {} })).toThrow(
      new InvalidConfigError(message),
    );
    await expect(DurableRunClient.connect({ databaseUrl: "mysql://db" })).rejects.toThrow(
      new InvalidConfigError(message),
    );
  });

  it.each([
    ["a port that is not a number", "postgres://u:secret@127.0.0.1:abc/db"],
    ["a port past 65535", "postgres://u:secret@127.0.0.1:99999/db"],
    ["a host that is not one", "postgres://u:secret@[bad/db"],
  ])(
    "with %s is refused by the runtime and the client alike, its password not shown: InvalidConfigError",
    async (_, databaseUrl) => {
      const message = "databaseUrl is not a URL (new URL() cannot read it: a bad port or host?).";
      expect(() => new DurableRuntime({ databaseUrl, agents: {} })).toThrow(new InvalidConfigError(message));
      await expect(DurableRunClient.connect({ databaseUrl })).rejects.toThrow(
        new InvalidConfigError(message),
      );
    },
  );

  it("that names no database is refused by the runtime and the client alike (DBOS addresses it by name): InvalidConfigError", async () => {
    const message =
      "databaseUrl must name a database (a path such as /mydb), got none in postgres://127.0.0.1:5432/.";
    expect(
      () => new DurableRuntime({ databaseUrl: "postgres://u:secret@127.0.0.1:5432/", agents: {} }),
    ).toThrow(new InvalidConfigError(message));
    await expect(DurableRunClient.connect({ databaseUrl: "postgres://127.0.0.1:5432" })).rejects.toThrow(
      new InvalidConfigError(message.replace("5432/.", "5432.")),
    );
  });

  it("whose scheme is upper-case is taken, as pg takes it: the runtime launches, a client connects", async () => {
    const upper = postgres.url("agent_core_upper").replace(/^postgres:/, "POSTGRES:");
    expect(upper.startsWith("POSTGRES://")).toBe(true);
    expect(await connecting("runtime", upper)).toMatchObject({ ok: true });
    expect(await connecting("client", upper)).toEqual({ ok: true });
  }, 90_000);
});

describe("a database out of reach", () => {
  it.each(["runtime", "client"] as const)(
    "fails the %s's start with database_unreachable, and the process ends",
    async (mode) => {
      // Nothing listens on port 1 of the loopback: the connection is refused.
      expect(await connecting(mode, "postgres://postgres@127.0.0.1:1/agent_core")).toEqual({
        name: "AgentError",
        code: "database_unreachable",
        message: "Cannot reach the database: connect ECONNREFUSED 127.0.0.1:1",
      });
    },
    40_000,
  );

  it("of a server that answers without the database: launch() creates it, a client finds nothing to follow", async () => {
    const missing = postgres.url("agent_core_missing");
    expect(await connecting("client", missing)).toEqual({
      name: "AgentError",
      code: "database_unreachable",
      message: 'Cannot reach the database: database "agent_core_missing" does not exist',
    });
    expect(await connecting("runtime", missing)).toMatchObject({ ok: true });
    expect(await connecting("client", missing)).toEqual({ ok: true });
  }, 90_000);
});

describe("a launch that fails halfway", () => {
  it("holds nothing that keeps the process alive: DBOS launched, then the runtime's tables could not be made", async () => {
    // PostgreSQL 15's public schema takes no tables of another role's: DBOS makes its schema (the
    // role may create one), then the event log's table is refused.
    const url = new URL(await postgres.createDatabase("agent_core_halfway"));
    const admin = new pg.Client({ connectionString: url.href });
    await admin.connect();
    try {
      await admin.query("CREATE ROLE halfway LOGIN");
      await admin.query("GRANT CREATE ON DATABASE agent_core_halfway TO halfway");
    } finally {
      await admin.end();
    }
    url.username = "halfway";
    expect(await connecting("runtime", url.href)).toMatchObject({
      code: "42501",
      message: "permission denied for schema public",
    });
  }, 60_000);
});
