#!/usr/bin/env node
import { main } from "./cli.js";

const interrupt = new AbortController();
// The first Ctrl-C aborts the run cleanly (tools and the model call stop, the summary still prints).
// `once` removes the listener, so a second Ctrl-C gets Node's default: exit at once.
process.once("SIGINT", () => interrupt.abort());

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: interrupt.signal,
});
