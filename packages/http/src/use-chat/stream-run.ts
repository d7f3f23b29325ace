import { randomUUID } from "node:crypto";
import type { AgentRun } from "@agent-core/core";
import type { ChatSession } from "./chat-sessions.js";
import type { AssistantTurn } from "./chat-transcript.js";
import { RunChunks } from "./run-chunks.js";
import type { UiChunk } from "./ui-chunks.js";

/**
 * Streams a run (or, for answers that resumed nothing yet, no run) into the assistant message
 * `turn` as UI message chunks, recording each in the turn as it goes. A page that goes away (the
 * request aborts, the body is cancelled) aborts the run at once: a chat has no re-attaching, and
 * nobody would read the rest. The run's remaining events still go into the transcript.
 */
export function streamRun(
  session: ChatSession,
  run: AgentRun | undefined,
  turn: AssistantTurn,
  signal: AbortSignal,
): ReadableStream<UiChunk> {
  let page: ReadableStreamDefaultController<UiChunk> | undefined;
  const { transcript } = session;
  const send = (chunk: UiChunk) => {
    // A call of an earlier message (one a new prompt settled: denied, or failed without its client
    // result) ends in that message's record only: the page finds tool parts in the message it
    // streams, and must not run that call again.
    const owner = "toolCallId" in chunk ? transcript.answerWithCall(chunk.toolCallId) : undefined;
    if (owner !== undefined && owner !== turn) {
      owner.apply(chunk);
      return;
    }
    turn.apply(chunk);
    page?.enqueue(chunk);
  };
  const current = run === undefined ? undefined : { run, streamed: Promise.resolve(), abandoned: false };
  const goAway = () => {
    // Ends the body if the page only aborted the request (a cancelled body is ended already).
    page?.error(new Error("the page went away"));
    page = undefined;
    if (current === undefined || current.run.done) return;
    current.abandoned = true;
    current.run.abort(new Error("the page went away"));
  };
  const stream = new ReadableStream<UiChunk>({
    start(controller) {
      page = controller;
    },
    cancel: goAway,
  });
  signal.addEventListener("abort", goAway, { once: true });
  // Gone already (while the chat's last run settled, or its agent was made): no abort event comes.
  if (signal.aborted) goAway();

  async function pump(): Promise<void> {
    send({ type: "start", messageId: turn.id });
    if (run === undefined) {
      send({ type: "finish", finishReason: "tool-calls" });
      return;
    }
    const chunks = new RunChunks((toolCallId) => transcript.answerWithCall(toolCallId) !== undefined);
    for await (const event of run) for (const chunk of chunks.map(event)) send(chunk);
    const { stopReason } = await run.result();
    const { agent } = session;
    const approvals = agent.pendingApprovals.map((call) => ({ ...call, approvalId: randomUUID() }));
    for (const chunk of chunks.end(stopReason, { clientCalls: agent.pendingClientTools, approvals }))
      send(chunk);
  }
  const streamed = pump().then(
    () => page?.close(),
    (error: unknown) => page?.error(error),
  );
  streamed.finally(() => signal.removeEventListener("abort", goAway));
  if (current !== undefined) {
    current.streamed = streamed;
    session.current = current;
  }
  return stream;
}
