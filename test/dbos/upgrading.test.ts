import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// The application version DBOS records with each run, and recovers a run only under: what it is
// made of (docs/durable-runs.md, "Upgrading"). Each runtime runs in a process of its own (DBOS is
// one per process).

const CONNECTING = fileURLToPath(new URL("./connecting.ts", import.meta.url));
let postgres: ThrowawayPostgres;
let databaseUrl: string;

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase("agent_core_upgrading");
}, 60_000);

afterAll(() => postgres?.stop());

/** The application version of a runtime launched with those agents, in that environment. */
function applicationVersion(agents: "helper" | "other-agents", env: NodeJS.ProcessEnv = {}): Promise<string> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", CONNECTING, "runtime", databaseUrl, agents],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, DBOS__APPVERSION: "", ...env } },
  );
  let stdout = "";
  child.stdout?.on("data", (chunk) => (stdout += chunk));
  return new Promise((resolve, reject) =>
    child.on("exit", () => {
      const line = JSON.parse(stdout.trim().split("\n").at(-1) as string);
      if (line.ok) resolve(line.applicationVersion);
      else reject(new Error(stdout));
    }),
  );
}

describe("a durable runtime's application version", () => {
  it("is the same whatever its agents, tools and models: a deploy of changed agents gets none of its own unless DBOS__APPVERSION gives it", async () => {
    const before = await applicationVersion("helper");
    expect(before).toMatch(/^[0-9a-f]{32}$/);
    expect(await applicationVersion("other-agents")).toBe(before);
    expect(await applicationVersion("other-agents", { DBOS__APPVERSION: "deploy-2" })).toBe("deploy-2");
  }, 90_000);
});
