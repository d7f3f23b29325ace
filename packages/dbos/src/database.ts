import { AgentError, errorMessage, InvalidConfigError } from "@agent-core/core";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";

/**
 * How long a connection of the package's own may take to connect: `launch()` and `connect()`'s
 * check, the `LISTEN` connections, the HTTP backend's pool. A host that is gone may never answer a
 * connect (its packets dropped, or a proxy that takes the connection and never forwards it).
 */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Throws `InvalidConfigError` unless `databaseUrl` is a PostgreSQL URL of a database. A URL's
 * scheme is case-insensitive (RFC 3986), as pg's parser takes it: `POSTGRES://…` is one too. DBOS
 * reads the URL with `new URL()` and addresses the database by its path: one `new URL()` cannot
 * read (a port `abc` or past 65535) would reach the caller as a bare `TypeError`, and one without
 * a database name fail halfway through a launch or a connect.
 */
export function checkDatabaseUrl(databaseUrl: unknown): asserts databaseUrl is string {
  if (typeof databaseUrl !== "string" || !/^postgres(ql)?:\/\//i.test(databaseUrl))
    throw new InvalidConfigError(
      `databaseUrl must be a postgres:// URL, got ${JSON.stringify(databaseUrl)}.`,
    );
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    // Not shown: the URL may hold a password.
    throw new InvalidConfigError("databaseUrl is not a URL (new URL() cannot read it: a bad port or host?).");
  }
  if (url.pathname.replace(/^\//, "") === "")
    throw new InvalidConfigError(
      `databaseUrl must name a database (a path such as /mydb), got none in ${url.protocol}//${url.host}${url.pathname}.`,
    );
}

/**
 * Throws unless the database answers: DBOS's client connects lazily and retries a refused
 * connection without end (a wrong URL would make every later call hang instead of failing), and
 * a launch that fails halfway leaves DBOS holding the process open. `missingIsFine`: a server that
 * answers but has no such database is fine (a launch creates it). Resolves with whether DBOS's
 * system tables are in the database (false until a worker has launched on it, or
 * `createSystemTables` made them).
 */
export async function checkReachable(
  databaseUrl: string,
  options: { missingIsFine?: boolean } = {},
): Promise<boolean> {
  checkDatabaseUrl(databaseUrl);
  const probe = ownConnection(databaseUrl);
  // A connection the database drops is an `error` event too (its query fails as well): unheard,
  // it would crash the process.
  probe.on("error", () => {});
  try {
    await probe.connect();
    await probe.query("SELECT 1");
    const { rows } = await probe.query<{ made: boolean }>(
      `SELECT to_regclass('${SYSTEM_TABLE}') IS NOT NULL AS made`,
    );
    return rows[0]?.made === true;
  } catch (error) {
    // A database that does not exist yet, on a server that answers: DBOS creates it at launch.
    if (options.missingIsFine && (error as { code?: unknown }).code === "3D000") return false;
    throw unreachable(error);
  } finally {
    await probe.end().catch(() => {});
  }
}

/** A table of DBOS's system schema (the default one, `dbos`, as the runtime's): there once DBOS made them. */
const SYSTEM_TABLE = "dbos.workflow_status";

/**
 * Makes DBOS's system tables in a database where no worker has launched yet, as a worker's launch
 * does (`DBOS.migrate`, DBOS's own way to make them without launching): a client's calls read
 * and write them (a run enqueued there waits for the first worker). A connection that fails
 * rejects as `checkReachable` does; anything else (a role that may not create a schema) with an
 * `AgentError` of code `no_worker_launched`, saying so.
 */
export async function createSystemTables(databaseUrl: string): Promise<void> {
  try {
    await DBOS.migrate(databaseUrl);
  } catch (error) {
    // DBOS wraps a connect that failed, keeping what failed as `error`.
    const cause = (error as { error?: unknown }).error ?? error;
    if (isConnectionError(error) || isConnectionError(cause)) throw unreachable(cause);
    throw new AgentError(
      "no_worker_launched",
      `No worker has launched on this database yet, and DBOS's system tables could not be created: ${errorMessage(error)}`,
      { cause: error },
    );
  }
}

/**
 * After this long without a byte, a connection of the package's own sends TCP keepalive probes: a
 * host that went away while the connection was open (its packets dropped) makes the connection
 * fail, after as many probes as the OS sends, instead of leaving it open for ever. That is all
 * that notices it for a `LISTEN` connection, idle by design.
 */
const KEEPALIVE_DELAY_MS = 10_000;

/**
 * A connection outside any pool (a `LISTEN`): one that has not connected within
 * `CONNECT_TIMEOUT_MS` fails, and its owner makes it again, instead of waiting for ever. Its
 * queries (the `LISTEN` itself) fail after as long without an answer; the time it then waits for
 * notifications is no query's, so it never times out while idle.
 */
export function ownConnection(databaseUrl: string): pg.Client {
  return new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  });
}

/**
 * A pool of connections for the event log, the answers and cancels. A connection the database
 * drops while idle in it (a restart, a failover) is an `error` event of the pool, which would crash
 * the process unheard: the pool has already let it go, and the next query connects again.
 * `connectTimeoutMs` bounds the wait for a connection, a free one of the pool's included (none by
 * default: the runtime's many answers at once queue for its few connections as long as it takes).
 * `queryTimeoutMs` bounds the wait for a query's answer: on a connection whose host went silent,
 * it would never come; the query fails (a connection error) and the pool lets the connection go.
 */
export function connectionPool(
  databaseUrl: string,
  max: number,
  options: { connectTimeoutMs?: number; queryTimeoutMs: number },
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    connectionTimeoutMillis: options.connectTimeoutMs,
    query_timeout: options.queryTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  });
  pool.on("error", () => {});
  return pool;
}

/**
 * Runs `work` in a transaction on one connection of the pool, held throughout (with the advisory
 * locks it takes). A connection that failed (dropped, or an answer that never came: it still waits
 * for that one, and a ROLLBACK would wait behind it) is let go of, not put back for the next user.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // Held, it has no listener of the pool's: a connection the database drops would be an `error`
  // event that crashes the process. Its queries fail instead.
  const dropped = () => {};
  client.on("error", dropped);
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    broken =
      isConnectionError(error) ||
      !(await client.query("ROLLBACK").then(
        () => true,
        () => false,
      ));
    throw error;
  } finally {
    client.off("error", dropped);
    client.release(broken);
  }
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
  // node-postgres says a dropped connection, a client it left unusable, a pool's wait for a
  // connection that timed out, and a query whose answer did not come in its `query_timeout`, in
  // words only.
  return (
    typeof message === "string" &&
    /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Query read timeout/.test(
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
