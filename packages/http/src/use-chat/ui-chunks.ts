/**
 * The chunks of the AI SDK's UI message stream (protocol v1) this adapter sends: a subset of the
 * AI SDK's `UIMessageChunk`, written out here so `@agent-core/http` does not depend on `ai`
 * (a test checks each is assignable to the AI SDK's own type).
 */
export type UiChunk =
  | { type: "start"; messageId: string }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string }
  | { type: "reasoning-start"; id: string }
  | { type: "reasoning-delta"; id: string; delta: string }
  | { type: "reasoning-end"; id: string }
  | { type: "tool-input-available"; toolCallId: string; toolName: string; input: unknown }
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string; reason?: string }
  | { type: "tool-output-available"; toolCallId: string; output: unknown }
  | { type: "tool-output-error"; toolCallId: string; errorText: string }
  | { type: "tool-output-denied"; toolCallId: string }
  | { type: "error"; errorText: string }
  | { type: "finish"; finishReason: "stop" | "tool-calls" | "error" };

/** The headers `useChat`'s `DefaultChatTransport` expects of a UI message stream. */
const UI_MESSAGE_STREAM_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-vercel-ai-ui-message-stream": "v1",
  // nginx and others buffer responses by default; a buffered stream arrives all at once.
  "x-accel-buffering": "no",
};

const encoder = new TextEncoder();

/** The chunks as server-sent events, `data: <json>` each, ending with `data: [DONE]`. */
export function uiMessageStreamResponse(chunks: ReadableStream<UiChunk>): Response {
  const sse = chunks.pipeThrough(
    new TransformStream<UiChunk, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
      },
      flush(controller) {
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
      },
    }),
  );
  return new Response(sse, { status: 200, headers: UI_MESSAGE_STREAM_HEADERS });
}
