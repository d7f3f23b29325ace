import { ClientError, describe } from "./errors.js";
import { deadline, discard, httpError, type Transport } from "./transport.js";

// The commands a client posts about a run it follows: a message that steers it or follows it up,
// and its cancel.

/**
 * Posts a steer or follow-up message to the run. A server that never answers, or never ends its
 * answer: rejected after idleTimeoutMs, as a stream would be, not a hang.
 */
export async function postMessage(
  transport: Transport,
  runId: string,
  action: "steer" | "follow-up",
  message: string,
): Promise<void> {
  const timeout = deadline(transport.config.idleTimeoutMs);
  try {
    let response: Response;
    try {
      // Not idempotent: retried only when the server said it did not take it (429).
      response = await transport.post(
        `/runs/${encodeURIComponent(runId)}/${action}`,
        { message },
        {
          signal: timeout.signal,
          retryNetwork: false,
          retryStatus: (status) => status === 429,
        },
      );
    } catch (error) {
      throw new ClientError("network", `The ${action} request failed: ${describe(error)}`, {
        cause: error,
      });
    }
    if (!response.ok) throw await httpError(response);
    discard(response);
  } finally {
    timeout.clear();
  }
}

/** Posts the run's cancel, best effort: whatever the server says, it resolves. */
export async function postCancel(transport: Transport, runId: string): Promise<void> {
  const timeout = deadline(transport.config.idleTimeoutMs);
  try {
    const response = await transport.post(`/runs/${encodeURIComponent(runId)}/cancel`, undefined, {
      signal: timeout.signal,
      retryNetwork: true,
      retryStatus: (status) => status >= 500 || status === 429,
    });
    discard(response);
  } catch {
    // Best effort: the run is cancelled here whatever the server says.
  } finally {
    timeout.clear();
  }
}
