import { AgentError, errorMessage, InvalidConfigError } from "@agent-core/core";
import pg from "pg";

/**
 * How long a connection of the package's own may take to connect: `launch()` and `connect()`'s
 * check, the `LISTEN` connections, the HTTP backend's pool. A host that is gone may never answer a
 * connect (its packets dropped, or a proxy that takes the connection and never forwards it).
 */
export const CONNECT_TIMEOUT_MS = 10_000;

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
  const probe = ownConnection(databaseUrl);
  // A connection the database drops is an `error` event too (its query fails as well): unheard,
  // it would crash the process.
  probe.on("error", () => {});
  try {
    await probe.connect();
    await probe.query("SELECT 1");
  } catch (error) {
    // A database that does not exist yet, on a server that answers: DBOS creates it at launch.
    if (options.missingIsFine && (error as { code?: unknown }).code === "3D000") return;
    throw unreachable(error);
  } finally {
    await probe.end().catch(() => {});
  }
}

/**
 * A connection outside any pool (a `LISTEN`): one that has not connected within
 * `CONNECT_TIMEOUT_MS` fails, and its owner makes it again, instead of waiting for ever.
 */
export function ownConnection(databaseUrl: string): pg.Client {
  return new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
}

/**
 * A pool of connections for the event log, the answers and cancels. A connection the database
 * drops while idle in it (a restart, a failover) is an `error` event of the pool, which would crash
 * the process unheard: the pool has already let it go, and the next query connects again.
 * `connectTimeoutMs` bounds the wait for a connection, a free one of the pool's included (none by
 * default: the runtime's many answers at once queue for its few connections as long as it takes).
 */
export function connectionPool(
  databaseUrl: string,
  max: number,
  options: { connectTimeoutMs?: number } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    connectionTimeoutMillis: options.connectTimeoutMs,
  });
  pool.on("error", () => {});
  return pool;
}

/**
 * Whether an error says that the database could not be reached or that the connection dropped
 * (worth trying again once it is back), not that a statement failed.
 */
export function isConnectionError(error: unknown): boolean {
  const { code, message } = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    message?: unknown;
  };
  // A code says it all: a SQLSTATE, a socket's, an `AgentError`'s (whose message may quote one).
  if (typeof code === "string") return code.startsWith("08") || CONNECTION_CODES.has(code);
  // node-postgres says a dropped connection, a client it left unusable, and a pool's wait for a
  // connection that timed out, in words only.
  return (
    typeof message === "string" &&
    /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect/.test(
      message,
    )
  );
}

/**
 * Besides SQLSTATE class 08 (connection exception): a server shutting down (57P01, 57P02),
 * starting (57P03) or full (53300); a socket's.
 */
const CONNECTION_CODES = new Set([
  "57P01",
  "57P02",
  "57P03",
  "53300",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/** What a call rejects with when the database does not answer. */
export function unreachable(error: unknown): AgentError {
  return new AgentError("database_unreachable", `Cannot reach the database: ${errorMessage(error)}`, {
    cause: error,
  });
}
