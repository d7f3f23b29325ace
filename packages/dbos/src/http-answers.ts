import { AgentError } from "@agent-core/core";
import { HttpError } from "@agent-core/http";
import { isConnectionError } from "./database.js";

/**
 * The seconds a client is asked to wait before it tries again: a database that went away (a
 * restart, a failover) takes seconds to come back, and retries sooner would only spend the
 * client's.
 */
const RETRY_AFTER_SECONDS = "5";

/**
 * What `call` resolves with. A database that does not answer (a runtime's or client's call that
 * rejected with `database_unreachable`, a connection error of the backend's own) is answered 503
 * `database-unreachable` with `Retry-After`, not 500 `internal`: the request was fine, and may be
 * sent again once the database is back. Its cause (a host and port) is not the client's to read.
 */
export async function answeringOutages<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const down =
      isConnectionError(error) || (error instanceof AgentError && error.code === "database_unreachable");
    if (!down) throw error;
    throw new HttpError(
      503,
      "database-unreachable",
      "The server cannot reach its database; try again shortly.",
      { headers: { "retry-after": RETRY_AFTER_SECONDS } },
    );
  }
}
