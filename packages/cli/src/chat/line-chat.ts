import { createInterface } from "node:readline";
import type { TextSink } from "../render.js";
import { ChatSession, type ChatSessionOptions } from "./chat-session.js";

export interface ChatLines {
  input: NodeJS.ReadableStream;
  stdout: TextSink;
  stderr: TextSink;
  color: boolean;
  /** Aborting it (Ctrl-C) aborts the run and ends the chat. */
  signal?: AbortSignal;
}

/**
 * The chat without a terminal (`agent-core chat < prompts.txt`, or a program writing to a pipe):
 * each line is a prompt or a slash command, taken when the run before it has ended. Returns 0, or
 * 1 when a run did not complete or a command failed, so a script can tell. Ctrl-C (the signal)
 * aborts the run in progress, which then did not complete (1), and ends the chat; while idle it
 * only ends the chat (0), as Ctrl-C does at a terminal.
 */
export async function runLineChat(options: ChatSessionOptions, io: ChatLines): Promise<number> {
  const session = new ChatSession(options, {
    out: io.stdout,
    color: io.color,
    echo: (line) => io.stdout.write(`› ${line}\n`),
    notice: (text) => io.stdout.write(`${text}\n`),
    problem: (text) => io.stderr.write(`agent-core: ${text}\n`),
  });
  const lines = createInterface({ input: io.input, crlfDelay: Number.POSITIVE_INFINITY, terminal: false });
  const stop = () => {
    session.abort();
    lines.close();
  };
  io.signal?.addEventListener("abort", stop, { once: true });
  // A stdin that fails (EIO from a vanished terminal) ends the chat like one that ends.
  io.input.on("error", stop);
  try {
    if (io.signal?.aborted) return 0;
    for await (const line of lines) {
      if ((await session.enter(line)) === "exit" || io.signal?.aborted) break;
    }
  } finally {
    io.signal?.removeEventListener("abort", stop);
    io.input.off("error", stop);
    lines.close();
  }
  return session.failures > 0 ? 1 : 0;
}
