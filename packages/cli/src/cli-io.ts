import type { Readable } from "node:stream";
import type { TextSink } from "./render.js";

/** What the CLI reads and writes instead of the process: its streams, environment and Ctrl-C. */
export interface CliIO {
  /** `isTTY` decides whether the live view uses colours. */
  stdout: TextSink & { isTTY?: boolean };
  stderr: TextSink;
  /** What `agent-core mcp` reads the MCP client's messages from (the bin gives it the process's stdin). */
  stdin?: Readable;
  env: Record<string, string | undefined>;
  /** Aborting it aborts the run (the bin wires Ctrl-C to it). */
  signal?: AbortSignal;
}
