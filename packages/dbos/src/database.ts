import { AgentError, errorMessage, InvalidConfigError } from "@agent-core/core";
import pg from "pg";

/** How long `launch()` and `connect()` wait for the database to answer before it says it is out of reach. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Throws unless the database answers: DBOS's client connects lazily and retries a refused
 * connection without end (a wrong URL would make every later call hang instead of failing), and
 * a launch that fails halfway leaves DBOS holding the process open. `missingIsFine`: a server that
 * answers but has no such database is fine (a launch creates it).
 */
export async function checkReachable(
  databaseUrl: string,
  options: { missingIsFine?: boolean } = {},
): Promise<void> {
  if (typeof databaseUrl !== "string" || !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new InvalidConfigError(
      `databaseUrl must be a postgres:// URL, got ${JSON.stringify(databaseUrl)}.`,
    );
  const probe = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  try {
    await probe.connect();
    await probe.query("SELECT 1");
  } catch (error) {
    // A database that does not exist yet, on a server that answers: DBOS creates it at launch.
    if (options.missingIsFine && (error as { code?: unknown }).code === "3D000") return;
    throw new AgentError("database_unreachable", `Cannot reach the database: ${errorMessage(error)}`, {
      cause: error,
    });
  } finally {
    await probe.end().catch(() => {});
  }
}
