import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import packageJson from "../package.json" with { type: "json" };
import { main } from "./cli.js";

async function cli(...argv: string[]) {
  return cliWithInput(undefined, ...argv);
}

/** The CLI with `lines` as its stdin (a pipe, not a terminal). */
async function cliWithInput(lines: string[] | undefined, ...argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { AGENT_CORE_DEMO_DELAY_MS: "0" },
    stdin: lines && Readable.from(lines.map((line) => `${line}\n`)),
  });
  return { code, stdout, stderr };
}

/** A run of the CLI that must be refused as a usage error: exit 2, nothing on stdout. Its stderr lines. */
async function usageError(running: ReturnType<typeof cli>): Promise<string[]> {
  const { code, stdout, stderr } = await running;
  expect(code).toBe(2);
  expect(stdout).toBe("");
  return stderr.trimEnd().split("\n");
}

describe("main: usage", () => {
  it("prints the help with the model settings and exits 0", async () => {
    for (const flag of ["--help", "-h"]) {
      const { code, stdout, stderr } = await cli(flag);
      expect(code).toBe(0);
      expect(stderr).toBe("");
      expect(stdout).toContain('agent-core run "<prompt>"');
      expect(stdout).toContain("agent-core chat [--load FILE]");
      for (const text of [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "AGENT_CORE_MODEL",
        "Ollama",
        "--parallel-tools",
        "--total-ms",
        "--first-chunk-ms N   … whose model call sends nothing for its first N ms\n                       (default 120000)",
        "--chunk-ms N         … whose model stream stalls for N ms between chunks\n                       (default 60000)",
        "/save FILE",
        "Esc",
        "vLLM",
        "agentic",
        "agent-core mcp [--orchestrator NAME]",
        "ask_agent({ prompt })",
      ])
        expect(stdout).toContain(text);
    }
  });

  it("prints the package version", async () => {
    expect(await cli("--version")).toEqual({ code: 0, stdout: `${packageJson.version}\n`, stderr: "" });
  });

  it.each([
    [[], "Missing command."],
    [["run"], "Missing prompt."],
    [["run", "  "], "Missing prompt."],
    [["ask", "hi"], 'Unknown command "ask"'],
    [["run", "hi", "--verbos"], 'Unknown option "--verbos".'],
    [["run", "hi", "--orchestrator"], "argument missing"],
    [["run", "--total-ms", "-5", "hi"], '--total-ms needs a value, and the word after it starts with "-".'],
    [["run", "--system", "--json", "hi"], '--system needs a value, and the word after it starts with "-".'],
    [["run", "hi", "--max-cycles", "abc"], '--max-cycles must be a whole number >= 1, got "abc"'],
    [["run", "hi", "--max-cycles", "0"], "--max-cycles must be a whole number >= 1"],
    [["run", "hi", "--max-cycles", "2.5"], "--max-cycles must be a whole number >= 1"],
  ])("rejects %j with exit 2, one error line and a hint", async (argv, message) => {
    const lines = await usageError(cli(...argv));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^agent-core: /);
    expect(lines[0]).toContain(message);
    expect(lines[1]).toMatch(/agent-core (run|--help)/);
  });

  it.each([
    [["run", "hi", "--load", "chat.json"], "--load is for chat"],
    [["run", "hi", "--total-ms", "0"], '--total-ms must be a whole number >= 1, got "0".'],
    [["run", "hi", "--max-concurrency", "4"], "--max-concurrency is for parallel tools"],
    [["chat", "hello"], 'chat takes no prompt on the command line, got "hello".'],
    [["chat", "--json"], "--json is for run"],
    [["chat", "--load", ""], "--load needs a file name."],
    [["chat", "--base-url", "ftp://x"], "--base-url must be an http:// or https:// URL"],
    [["chat", "--no-stall", "--stall-calls", "3"], "--no-stall turns stall detection off"],
    [["chat", "--load", "/no/such/chat.json"], "--load /no/such/chat.json: could not read it"],
    [["chat", "--orchestrator", "nope"], 'Unknown orchestrator "nope"'],
    // Settings the agent itself would refuse: a usage error, not a stack trace from new Agent().
    [["run", "hi", "--total-ms", "2147483648"], '--total-ms must be at most 2147483647, got "2147483648".'],
    [["run", "hi", "--tool-ms", "99999999999"], '--tool-ms must be at most 2147483647, got "99999999999".'],
    [["chat", "--chunk-ms", "4294967296"], '--chunk-ms must be at most 2147483647, got "4294967296".'],
    [["run", "hi", "--orchestrator="], "--orchestrator needs a name"],
    [["chat", "--orchestrator", " "], "--orchestrator needs a name"],
    [["run", "hi", "--model="], '--model needs a name, got "".'],
    [["chat", "--model", " "], '--model needs a name, got " ".'],
    // An empty one would get the library's generic system prompt, neither empty nor the CLI's.
    [["run", "hi", "--system", ""], '--system needs a text, got "".'],
    [["run", "hi", "--system="], '--system needs a text, got "".'],
    [["chat", "--system", " \n"], '--system needs a text, got " \\n".'],
  ])("run and chat: reject %j with exit 2, one error line and a hint", async (argv, message) => {
    const lines = await usageError(cliWithInput([], ...argv));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^agent-core: /);
    expect(lines[0]).toContain(message);
  });

  it.each([
    [["mcp", "hi"], 'mcp takes no words, got "hi".'],
    [["mcp", "--max-cycles", "0"], '--max-cycles must be a whole number >= 1, got "0".'],
    [["mcp", "--load", "chat.json"], "--load is for chat: mcp starts a new conversation."],
    [["mcp", "--step-ms", "2147483648"], '--step-ms must be at most 2147483647, got "2147483648".'],
    [["mcp", "--orchestrator="], "--orchestrator needs a name"],
    [["mcp", "--system="], '--system needs a text, got "".'],
  ])("mcp: rejects %j with exit 2 before it serves", async (argv, message) => {
    const [first] = await usageError(cli(...argv));
    expect(first).toContain(`agent-core: ${message}`);
  });

  it.each([
    [["serve", "--database-url", "mysql://db"], '--database-url must be a postgres:// URL, got "mysql://db"'],
    [["serve", "--database-url", "postgres://localhost/db"], "Durable serve needs AGENT_CORE_HOOK_SECRET"],
    [["serve", "--database-url", "POSTGRES://localhost/db"], "Durable serve needs AGENT_CORE_HOOK_SECRET"],
    [["serve", "--worker-id", "w1"], "--worker-id is for durable runs: add --database-url."],
    // Node would listen on every interface for an empty host: the page has no login.
    [["serve", "--host="], '--host needs a host name or an address, got "".'],
    [["serve", "--host", " "], '--host needs a host name or an address, got " ".'],
    [["serve", "--base-url", "ftp://x"], '--base-url must be an http:// or https:// URL, got "ftp://x".'],
    [["serve", "--model="], '--model needs a name, got "".'],
  ])("serve: rejects %j with exit 2 before it starts anything", async (argv, message) => {
    const [first] = await usageError(cli(...argv));
    expect(first).toMatch(/^agent-core: /);
    expect(first).toContain(message);
  });

  it.each([
    [["run", "hi", "--port", "9000"], "--port is for serve: run does not take it."],
    [["run", "hi", "--database-url", "postgres://db"], "--database-url is for serve: run does not take it."],
    [["chat", "--verbose"], "--verbose is for run and serve: chat does not take it."],
    [["chat", "--json"], "--json is for run: chat shows the live view."],
    [["chat", "--static", "page"], "--static is for serve: chat does not take it."],
    [["mcp", "--json"], "--json is for run: mcp does not take it."],
    [["mcp", "--verbose"], "--verbose is for run and serve: mcp does not take it."],
    [["serve", "--max-cycles", "3"], "--max-cycles is for run, chat and mcp: serve does not take it."],
    [["serve", "--no-stall"], "--no-stall is for run, chat and mcp: serve does not take it."],
    [["serve", "--json"], "--json is for run: serve does not take it."],
    [["serve", "--load", "chat.json"], "--load is for chat: serve does not take it."],
  ])("refuses %j, an option of another command, with exit 2 rather than ignore it", async (argv, message) => {
    const lines = await usageError(cliWithInput([], ...argv));
    expect(lines).toEqual([
      `agent-core: ${message}`,
      expect.stringMatching(new RegExp(`^Usage: agent-core ${argv[0]} `)),
    ]);
  });

  it("serve: a port in use, or a host it cannot listen on, is one line and exit 1, not a stack trace", async () => {
    const taken = createServer();
    await new Promise<void>((listening) => taken.listen(0, "127.0.0.1", listening));
    const { port } = taken.address() as AddressInfo;
    try {
      for (const [argv, reason] of [
        [["serve", "--port", String(port)], `address already in use 127.0.0.1:${port}`],
        [["serve", "--port", "0", "--host", "no-such-host.invalid"], "no-such-host.invalid"],
      ] as const) {
        const { code, stdout, stderr } = await cli(...argv);
        expect(code).toBe(1);
        expect(stdout).toBe("");
        const lines = stderr.trimEnd().split("\n");
        expect(lines).toHaveLength(2);
        expect(lines[0]).toMatch(/^agent-core: serve could not start: /);
        expect(lines[0]).toContain(reason);
        expect(stderr).not.toContain("    at ");
      }
    } finally {
      taken.close();
    }
  });

  it("serve: --model and --base-url override AGENT_CORE_MODEL and OPENAI_BASE_URL, as for run", async () => {
    const stop = new AbortController();
    let stdout = "";
    const served = main(
      ["serve", "--port", "0", "--model", "flag-model", "--base-url", "http://127.0.0.1:9/flag"],
      {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: () => {} },
        env: {
          OPENAI_API_KEY: "k",
          AGENT_CORE_MODEL: "env-model",
          OPENAI_BASE_URL: "http://127.0.0.1:9/env",
        },
        signal: stop.signal,
      },
    );
    try {
      await vi.waitFor(() => expect(stdout).toContain("open http"));
    } finally {
      stop.abort();
    }
    expect(await served).toBe(0);
    expect(stdout).toMatch(
      /^agent-core serve: open http:\/\/127\.0\.0\.1:\d+\/ in a browser \(model: flag-model via http:\/\/127\.0\.0\.1:9\/flag\)\. Ctrl-C stops\.\n$/,
    );
  });

  it("refuses a base URL that is not http(s): --base-url's always, OPENAI_BASE_URL's only with OPENAI_API_KEY", async () => {
    const run = async (env: Record<string, string>, ...options: string[]) => {
      let stdout = "";
      let stderr = "";
      const code = await main(["run", ...options, "hi"], {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text) },
        env: { AGENT_CORE_DEMO_DELAY_MS: "0", ...env },
      });
      return { code, stdout, stderr };
    };
    const withKey = await run({ OPENAI_API_KEY: "k", OPENAI_BASE_URL: "ftp://x" });
    expect(withKey).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'agent-core: OPENAI_BASE_URL must be an http:// or https:// URL, got "ftp://x".\nFor example http://localhost:11434/v1 (Ollama); unset it for OpenAI\'s.\n',
    });
    const option = await run({}, "--base-url", "ftp://x");
    expect(option.code).toBe(2);
    expect(option.stderr.split("\n")[0]).toBe(
      'agent-core: --base-url must be an http:// or https:// URL, got "ftp://x".',
    );
    // Without a key the variable is not read: the demo model answers.
    const demo = await run({ OPENAI_BASE_URL: "ftp://x" });
    expect(demo.code).toBe(0);
    expect(demo.stderr).toBe("");
    expect(demo.stdout).toContain("[demo] I am the offline demo model");
  });

  it("names an unknown orchestrator and lists the registered ones", async () => {
    const stderr = (await usageError(cli("run", "hi", "--orchestrator", "nope"))).join("\n");
    expect(stderr).toContain('Unknown orchestrator "nope"');
    expect(stderr).toContain("Registered orchestrators: agentic (default), plan-execute");
    expect(stderr).not.toContain("    at ");
  });

  it("runs the prompt with the chosen orchestrator and cycle limit", async () => {
    const { code, stdout } = await cli(
      "run",
      "--orchestrator",
      "agentic",
      "--max-cycles",
      "1",
      "What is 2+2?",
    );
    // One model call is enough to ask for the calculator, not to answer with its result.
    expect(code).toBe(1);
    expect(stdout).toContain("orchestrator agentic");
    expect(stdout).toContain("max_cycles");
  });

  it("--verbose writes the log lines to stderr as JSON, each with the run's id; without it stderr stays empty", async () => {
    const { code, stdout, stderr } = await cli("run", "--json", "--verbose", "What is 6*7?");
    expect(code).toBe(0);
    const events = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const runId = events[0].runId;
    const lines = stderr
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining(["run started", "tool call", "run ended"]),
    );
    for (const line of lines)
      expect(line).toMatchObject({ runId, level: expect.any(String), time: expect.any(Number) });
    expect((await cli("run", "--json", "What is 6*7?")).stderr).toBe("");
  });

  it("serve --verbose writes the log lines of the server's agents to stderr", async () => {
    const stop = new AbortController();
    let stdout = "";
    let stderr = "";
    const served = main(["serve", "--verbose", "--port", "0"], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { AGENT_CORE_DEMO_DELAY_MS: "0" },
      signal: stop.signal,
    });
    try {
      await vi.waitFor(() => expect(stdout).toContain("open http"));
      const url = /open (\S+?)\/ in a browser/.exec(stdout)?.[1];
      const response = await fetch(`${url}/api/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "How many words are on the page?" }),
      });
      await vi.waitFor(() => expect(stderr).toContain('"msg":"run started"'));
      await response.body?.cancel();
    } finally {
      stop.abort();
    }
    expect(await served).toBe(0);
    const runId = JSON.parse(stderr.split("\n")[0] as string).runId;
    expect(typeof runId).toBe("string");
  });

  it("run exits 1 on a timeout, as on any stop reason but completed", async () => {
    let stdout = "";
    const code = await main(["run", "--total-ms", "100", "What is 15*3 and 10+5?"], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: () => {} },
      env: { AGENT_CORE_DEMO_DELAY_MS: "50" },
    });
    expect(code).toBe(1);
    expect(stdout).toContain("✗ timeout: The run took longer than 100 ms (timeouts.totalMs).");
    expect(stdout.trimEnd().split("\n").at(-1)).toMatch(/^■ timeout · /);
  });

  it("takes the last value of an option given twice", async () => {
    const { code, stdout } = await cli("run", "--max-cycles", "5", "--max-cycles", "1", "What is 2+2?");
    expect(code).toBe(1);
    expect(stdout).toContain("✗ max_cycles: The run reached its limit of 1 model call (limits.maxCycles).");
  });

  it("joins unquoted words into one prompt and reads prompts starting with - after --", async () => {
    expect((await cli("run", "What", "is", "6*7?")).stdout).toContain("6*7 = 42");
    expect((await cli("run", "--", "-5+3?")).stdout).toContain("-5+3 = -2");
  });

  it("chat reads prompts and commands line by line from a pipe, one history throughout", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agent-core-cli-chat-"));
    try {
      const file = join(dir, "chat.json");
      const piped = ["What is 6*7?", "", "What did I ask before?", `/save ${file}`, "/exit", "never read"];
      const { code, stdout, stderr } = await cliWithInput(piped, "chat", "--max-cycles", "3");
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(stdout).toContain("› What is 6*7?\n▶ [demo]");
      expect(stdout).toContain("[demo] 6*7 = 42.");
      expect(stdout).toContain('[demo] Before this you asked: "What is 6*7?".');
      expect(stdout).not.toContain("never read");
      expect(JSON.parse(readFileSync(file, "utf8")).messages).toHaveLength(6);

      const loaded = await cliWithInput(
        ["What did I ask before?", "/load nowhere.json"],
        "chat",
        "--load",
        file,
      );
      expect(loaded.stdout).toContain('Before this you asked: "What is 6*7?" and "What did I ask before?".');
      expect(loaded.stderr).toBe(
        "agent-core: nowhere.json: could not read it (no such file or directory). The conversation is unchanged.\n",
      );
      // A failed command (or run) makes a script's chat exit 1.
      expect(loaded.code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("chat without any input ends at once", async () => {
    expect(await cli("chat")).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});

describe("main: mcp", () => {
  it("exits 1 saying why when the connection fails on its own, rather than serving no one forever", async () => {
    // A message over the SDK's 10 MiB closes its transport, which then stops reading stdin.
    const stdin = new PassThrough();
    let stderr = "";
    const code = main(["mcp"], {
      stdout: { write: () => true },
      stderr: { write: (text: string) => (stderr += text) },
      env: { AGENT_CORE_DEMO_DELAY_MS: "0" },
      stdin,
    });
    stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { x: "x".repeat(11 * 2 ** 20) } })}\n`,
    );
    const stillServing = new Promise((resolve) => setTimeout(() => resolve("still serving"), 5_000).unref());
    expect(await Promise.race([code, stillServing])).toBe(1);
    expect(stderr).toContain(
      "agent-core mcp: the connection failed: ReadBuffer exceeded maximum size of 10485760 bytes",
    );
    stdin.destroy();
  });
});
