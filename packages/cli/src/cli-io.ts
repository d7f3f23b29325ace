import type { Readable } from "node:stream";
import type { TerminalInput } from "./chat/interactive-chat.js";
import type { TerminalOutput } from "./chat/terminal-screen.js";
import type { TextSink } from "./render.js";

/** What the CLI reads and writes instead of the process: its streams, environment and Ctrl-C. */
export interface CliIO {
  /** `isTTY` decides whether the live view uses colours (and, with stdin's, whether chat is interactive). */
  stdout: TerminalOutput & { isTTY?: boolean };
  /**
   * The process's stdin: where `chat` reads prompts (keys from a terminal, or lines from a pipe;
   * none reads as empty), and `mcp` the MCP client's messages.
   */
  stdin?: TerminalInput & Readable;
  stderr: TextSink;
  env: Record<string, string | undefined>;
  /** Aborting it aborts the run (the bin wires Ctrl-C, SIGINT, and SIGTERM to it). */
  signal?: AbortSignal;
}
