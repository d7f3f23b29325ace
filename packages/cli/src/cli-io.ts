import type { TextSink } from "./render.js";

/** What the CLI reads and writes instead of the process: its streams, environment and Ctrl-C. */
export interface CliIO {
  /** `isTTY` decides whether the live view uses colours. */
  stdout: TextSink & { isTTY?: boolean };
  stderr: TextSink;
  env: Record<string, string | undefined>;
  /** Aborting it aborts the run (the bin wires Ctrl-C to it). */
  signal?: AbortSignal;
}
