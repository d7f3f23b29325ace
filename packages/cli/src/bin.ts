#!/usr/bin/env node
const interrupt = new AbortController();
// The first Ctrl-C aborts the run cleanly (tools and the model call stop, the summary still prints).
// `once` removes the listener, so a second Ctrl-C gets Node's default: exit at once. SIGTERM, how
// `kill`, systemd and container runtimes stop a process, stops it as cleanly: `serve` closes its
// runs' streams with their ends, `mcp` its calls, `run` prints its summary.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => interrupt.abort());

// A reader that closed the pipe (`agent-core run --json "…" | head -1`) has all it wanted: end quietly,
// as a Unix filter killed by SIGPIPE would, instead of crashing on the next write with an EPIPE stack.
for (const stream of [process.stdout, process.stderr])
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(0);
  });

// Loaded only now, the handlers above in place: loading takes a second or two, and a Ctrl-C then
// would otherwise kill the process before it could say how the run ended.
const { main } = await import("./cli.js");
process.exitCode = await main(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: interrupt.signal,
});
