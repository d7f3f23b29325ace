import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";

/**
 * `fetch` for the Streamable HTTP transport that tells `onBroken` when the event stream answering
 * a request breaks off (the server died, the network dropped). The SDK's transport reports that
 * only to `onerror` and leaves the request waiting for its timeout; closing the connection instead
 * answers every call in flight at once, as a dead stdio server's calls are.
 */
export function brokenStreamFetch(onBroken: (error: unknown) => void, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    const isEventStream = response.headers.get("content-type")?.startsWith("text/event-stream") ?? false;
    if (init?.method !== "POST" || !response.ok || response.body === null || !isEventStream) return response;
    return new Response(reportBreak(response.body, onBroken, init.signal), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/**
 * The same bytes; an error reading them goes on to the reader and to `onBroken`, unless `signal`
 * aborted: the transport ends its own fetches with it when it closes, which is no break.
 */
export function reportBreak(
  body: ReadableStream<Uint8Array>,
  onBroken: (error: unknown) => void,
  signal: AbortSignal | null | undefined,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        if (!signal?.aborted) onBroken(error);
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
