import { type ChildProcessByStdio, spawn } from "node:child_process";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough, type Readable, type Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { main } from "@agent-core/cli";
import { type AgentEvent, parseAgentEvent } from "@agent-core/core";
import {
  assertEventProtocol,
  eventTypes,
  type FakeOpenAIServer,
  type FakeReply,
  startFakeOpenAIServer,
} from "@agent-core/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it, vi } from "vitest";

// The CLI end to end: main() with captured output against the offline demo model and against a real
// OpenAI-compatible provider over HTTP, then the bin itself as a child process.

const DEMO_ENV = { AGENT_CORE_DEMO_DELAY_MS: "0" };

interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(
  argv: string[],
  env: Record<string, string | undefined> = DEMO_ENV,
  options: { signal?: AbortSignal; onStdout?: (stdout: string) => void } = {},
): Promise<Captured> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: {
      write: (text: string) => {
        stdout += text;
        options.onStdout?.(stdout);
      },
    },
    stderr: { write: (text: string) => (stderr += text) },
    env,
    signal: options.signal,
  });
  return { code, stdout, stderr };
}

function parseNdjson(stdout: string): AgentEvent[] {
  return stdout
    .trimEnd()
    .split("\n")
    .map((line) => parseAgentEvent(JSON.parse(line)));
}

describe("agent-core run with the offline demo model", () => {
  it("calls the calculator twice, streams the answer and ends completed", async () => {
    const { code, stdout, stderr } = await cli(["run", "What is 15*3 and 10+5?"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toContain("[demo]");
    expect(lines[0]).toContain("orchestrator agentic");
    expect(stdout).toContain("· thinking: The question needs the calculator");
    expect(stdout).toContain('→ calculator({"expression":"15*3"})');
    expect(stdout).toContain('← calculator: {"expression":"15*3","result":45}');
    expect(stdout).toContain('→ calculator({"expression":"10+5"})');
    expect(stdout).toContain('← calculator: {"expression":"10+5","result":15}');
    expect(stdout).toContain("15*3 = 45 and 10+5 = 15");
    expect(lines.at(-1)).toMatch(/^■ completed · 2 cycles · 2 tool calls · \d+\.\ds · \d+ tokens$/);
  });

  it("plans, runs the steps and answers with --orchestrator plan-execute", async () => {
    const { code, stdout } = await cli(["run", "--orchestrator", "plan-execute", "What is 15*3 and 10+5?"]);
    expect(code).toBe(0);
    expect(stdout).toContain("orchestrator plan-execute");
    expect(stdout).toContain("▤ plan: 2 steps (calculator, calculator)");
    expect(stdout).toContain('✓ step 2/2 calculator: {"expression":"10+5","result":15}');
    expect(stdout).toContain("15*3 = 45 and 10+5 = 15");
    expect(stdout.trimEnd().split("\n").at(-1)).toMatch(/^■ completed · 2 cycles · 2 tool calls/);
  });

  it("answers a plain prompt without tools", async () => {
    const { code, stdout } = await cli(["run", "hello"]);
    expect(code).toBe(0);
    expect(stdout).not.toContain("→");
    expect(stdout).toContain("[demo] I am the offline demo model");
    expect(stdout.trimEnd().split("\n").at(-1)).toMatch(/^■ completed · 1 cycle · 0 tool calls/);
  });

  it("prints only the events as NDJSON with --json", async () => {
    const { code, stdout, stderr } = await cli(["run", "--json", "What is 15*3 and 10+5?"]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    const events = parseNdjson(stdout);
    assertEventProtocol(events);
    expect(events[0]?.type).toBe("agent_start");
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(eventTypes(events)).toEqual(expect.arrayContaining(["tool_call", "tool_result", "text_delta"]));
    const text = events.flatMap((event) => (event.type === "text_delta" ? [event.text] : [])).join("");
    expect(text).toBe("[demo] 15*3 = 45 and 10+5 = 15.");
  });
});

describe("AGENT_CORE_DEMO_DELAY_MS", () => {
  it.each([
    [["run", "hi"], "2147483648"],
    [["chat"], "99999999999"],
    [["serve", "--port", "0"], "2147483648"],
  ])("%j refuses a delay past Node's longest timer, %s, with exit 2 and one line", async (argv, delay) => {
    const { code, stdout, stderr } = await cli(argv, { AGENT_CORE_DEMO_DELAY_MS: delay });
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trimEnd().split("\n")).toEqual([
      `agent-core: AGENT_CORE_DEMO_DELAY_MS must be at most 2147483647, got "${delay}".`,
      "Node's timers wait no longer. Unset it, or set it to e.g. 0 for no delay.",
    ]);
  });

  it("takes the longest delay a timer can wait, 2147483647", async () => {
    const interrupt = new AbortController();
    const running = cli(
      ["run", "hi"],
      { AGENT_CORE_DEMO_DELAY_MS: "2147483647" },
      {
        signal: interrupt.signal,
        onStdout: (stdout) => stdout.includes("▶") && interrupt.abort(),
      },
    );
    const { code, stdout, stderr } = await running;
    expect(stderr).toBe("");
    expect(stdout).toMatch(/■ aborted · /);
    expect(code).toBe(1);
  });
});

describe("agent-core run with an OpenAI-compatible server", () => {
  let server: FakeOpenAIServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function serve(replies: FakeReply[]): Promise<Record<string, string>> {
    server = await startFakeOpenAIServer({
      reply: (_request, index) => replies[index] ?? { text: "(no more)" },
    });
    return { OPENAI_API_KEY: "test-key", OPENAI_BASE_URL: server.baseURL, AGENT_CORE_MODEL: "fake-model" };
  }

  it("runs the tool the model asks for over HTTP and prints the answer", async () => {
    const env = await serve([
      {
        toolCalls: [{ id: "call_1", name: "calculator", arguments: ['{"expression":', '"6*7"}'] }],
        usage: { prompt_tokens: 50, completion_tokens: 10 },
      },
      { text: ["6*7 is ", "42."], usage: { prompt_tokens: 80, completion_tokens: 5 } },
    ]);
    const { code, stdout, stderr } = await cli(["run", "What is 6*7?"], env);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout.split("\n")[0]).toContain(`fake-model via ${server?.baseURL}`);
    expect(stdout).not.toContain("[demo]");
    expect(stdout).toContain('→ calculator({"expression":"6*7"})');
    expect(stdout).toContain('← calculator: {"expression":"6*7","result":42}');
    expect(stdout).toContain("6*7 is 42.");
    expect(stdout).toMatch(/■ completed · 2 cycles · 1 tool call · \d+\.\ds · 145 tokens\n$/);

    const [first, second] = server?.requests ?? [];
    expect(first?.model).toBe("fake-model");
    const tools = first?.tools as { function: { name: string } }[];
    expect(tools.map((tool) => tool.function.name)).toEqual(["calculator", "get_current_time"]);
    const toolMessage = second?.messages.find((message) => message.role === "tool");
    expect(toolMessage?.tool_call_id).toBe("call_1");
    expect(JSON.stringify(toolMessage?.content)).toContain("42");
  });

  it("takes a base URL whose scheme is upper-case, from OPENAI_BASE_URL or --base-url (schemes are case-insensitive)", async () => {
    const env = await serve([{ text: "one" }, { text: "two" }]);
    const upper = env.OPENAI_BASE_URL?.replace(/^http:/, "HTTP:") as string;
    expect(upper).toMatch(/^HTTP:\/\/127\.0\.0\.1:\d+/);
    const fromEnv = await cli(["run", "hi"], { ...env, OPENAI_BASE_URL: upper });
    expect(fromEnv.stderr).toBe("");
    expect(fromEnv.code).toBe(0);
    expect(fromEnv.stdout).toContain(`fake-model via ${upper}`);
    expect(fromEnv.stdout).toContain("one");
    const mixed = upper.replace(/^HTTP:/, "HtTp:");
    const fromOption = await cli(["run", "--base-url", mixed, "hi"], { ...env, OPENAI_BASE_URL: "" });
    expect(fromOption.stderr).toBe("");
    expect(fromOption.code).toBe(0);
    expect(fromOption.stdout).toContain("two");
    expect(server?.requests).toHaveLength(2);
  });

  it("exits 1 with the provider's error, on stderr too with --json", async () => {
    const env = await serve([{ error: { status: 401, message: "Incorrect API key provided" } }]);
    const { code, stdout, stderr } = await cli(["run", "--json", "hi"], env);
    expect(code).toBe(1);
    const events = parseNdjson(stdout);
    expect(events.find((event) => event.type === "error")?.message).toContain("Incorrect API key provided");
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "error" });
    expect(stderr).toMatch(/^agent-core: .*Incorrect API key provided.*\n$/);
  });

  it("run --json shows the provider's error on stderr as text: its control characters do not act on the terminal", async () => {
    const env = await serve([{ error: { status: 400, message: "bad \x1b]0;pwned\x07\x1b[2J request" } }]);
    const { code, stderr } = await cli(["run", "--json", "hi"], env);
    expect(code).toBe(1);
    expect(stderr).not.toContain("\x1b");
    expect(stderr).toContain("bad ␛]0;pwned␇␛[2J request");
  });

  it("aborts mid-stream through io.signal and ends aborted", async () => {
    const chunks = Array.from({ length: 100 }, (_, index) => `chunk${index} `);
    const env = await serve([{ text: chunks, chunkDelayMs: 20 }]);
    const interrupt = new AbortController();
    const abortOnFirstText = (stdout: string) => {
      if (stdout.includes("chunk0")) interrupt.abort();
    };
    const started = Date.now();
    const { code, stdout } = await cli(["run", "Count slowly"], env, {
      signal: interrupt.signal,
      onStdout: abortOnFirstText,
    });
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(stdout).not.toContain("chunk99");
    expect(stdout).toContain("✗ aborted: The run was aborted.");
    expect(stdout.trimEnd().split("\n").at(-1)).toMatch(/^■ aborted · /);
  });
});

describe("agent-core run with a model that never answers", () => {
  it("ends on its own by default: timeout after 120 s without a first chunk, exit 1", async () => {
    // Accepts the request, never answers: no headers, no chunk.
    let received: () => void = () => {};
    const requested = new Promise<void>((resolve) => (received = resolve));
    const silent = createServer((request) => {
      request.resume();
      received();
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const env = {
      OPENAI_API_KEY: "test-key",
      OPENAI_BASE_URL: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`,
    };
    // The model limits' timers, not the network, run on the test's clock: two minutes pass at once.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const running = cli(["run", "hi"], env);
      await requested;
      await vi.advanceTimersByTimeAsync(120_000);
      const { code, stdout } = await running;
      expect(code).toBe(1);
      expect(stdout).toContain(
        "✗ timeout: The model's first chunk took longer than 120000 ms (timeouts.firstChunkMs).",
      );
      expect(stdout.trimEnd().split("\n").at(-1)).toMatch(/^■ timeout · /);
    } finally {
      vi.useRealTimers();
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("the model limits' options, each over its default", () => {
  let slow: FakeOpenAIServer | undefined;
  afterEach(async () => {
    await slow?.close();
    slow = undefined;
  });

  /** A model that waits 400 ms before each chunk of its answer. */
  async function slowModel(): Promise<Record<string, string>> {
    slow = await startFakeOpenAIServer({ reply: () => ({ text: ["one ", "two"], chunkDelayMs: 400 }) });
    return { OPENAI_API_KEY: "test-key", OPENAI_BASE_URL: slow.baseURL, AGENT_CORE_MODEL: "fake-model" };
  }

  it("run --first-chunk-ms and --chunk-ms: each sets its own limit and leaves the other's", async () => {
    const env = await slowModel();
    const first = await cli(["run", "--first-chunk-ms", "100", "hi"], env);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain(
      "✗ timeout: The model's first chunk took longer than 100 ms (timeouts.firstChunkMs).",
    );
    const between = await cli(["run", "--chunk-ms", "100", "hi"], env);
    expect(between.code).toBe(1);
    expect(between.stdout).toContain("one ");
    expect(between.stdout).toMatch(/✗ timeout: .*100 ms \(timeouts\.chunkMs\)/);
  });

  it("mcp refuses an unknown orchestrator at start, as run does: bad usage, exit 2, not an error in every call", async () => {
    let stderr = "";
    const code = await main(["mcp", "--orchestrator", "nope"], {
      stdin: new PassThrough(),
      stdout: { write: () => true },
      stderr: { write: (text: string) => (stderr += text) },
      env: DEMO_ENV,
      // Stopped as soon as it serves: a server that started has nothing to say about its options.
      signal: AbortSignal.abort(),
    });
    expect(stderr).toBe(
      'agent-core: Unknown orchestrator "nope". Registered orchestrators: agentic (default), plan-execute.\n' +
        "Pass one of them to --orchestrator, or leave the option out for the default.\n",
    );
    expect(code).toBe(2);
  });

  it("mcp --first-chunk-ms: ask_agent answers isError with the timeout", async () => {
    const env = await slowModel();
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [
          "--import",
          "tsx",
          "--conditions=@agent-core/source",
          "packages/cli/src/bin.ts",
          "mcp",
          "--first-chunk-ms",
          "100",
        ],
        cwd: fileURLToPath(new URL("..", import.meta.url)),
        env,
        stderr: "ignore",
      }),
    );
    try {
      const result = await client.callTool({ name: "ask_agent", arguments: { prompt: "hi" } });
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([
        {
          type: "text",
          text: "The agent did not answer: The model's first chunk took longer than 100 ms (timeouts.firstChunkMs).",
        },
      ]);
    } finally {
      await client.close();
    }
  }, 30_000);
});

describe("the agent-core bin", () => {
  const root = fileURLToPath(new URL("..", import.meta.url));

  /** Runs the bin from its sources, as `node dist/bin.js` would run the build, without a real API key. */
  function spawnBin(args: string[], env: Record<string, string>) {
    return spawn(process.execPath, [...BIN, ...args], {
      cwd: root,
      env: binEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    });
  }

  /** The bin with stdin a pipe the test writes to, and keeps open as a program driving `chat` would. */
  function spawnPiped(args: string[], env: Record<string, string>) {
    return spawn(process.execPath, [...BIN, ...args], {
      cwd: root,
      env: binEnv(env),
      stdio: ["pipe", "pipe", "pipe"],
    });
  }

  const BIN = ["--import", "tsx", "--conditions=@agent-core/source", "packages/cli/src/bin.ts"];

  function binEnv(env: Record<string, string>): NodeJS.ProcessEnv {
    const { OPENAI_API_KEY: _ignored, ...inherited } = process.env;
    return { ...inherited, ...env };
  }

  /** Resolves once the child has written `text` to stdout. */
  function printed(child: { stdout: Readable }, text: string): Promise<void> {
    let stdout = "";
    return new Promise((resolve) => {
      const read = (chunk: Buffer) => {
        stdout += chunk.toString();
        if (!stdout.includes(text)) return;
        child.stdout.off("data", read);
        resolve();
      };
      child.stdout.on("data", read);
    });
  }

  function finished(child: ChildProcessByStdio<Writable | null, Readable, Readable>): Promise<Captured> {
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
  }

  it("runs a prompt as a real process", async () => {
    const { code, stdout, stderr } = await finished(spawnBin(["run", "What is 2*(3+4)?"], DEMO_ENV));
    expect(stderr).toBe("");
    expect(stdout).toContain("2*(3+4) = 14");
    expect(code).toBe(0);
  });

  /** A run ended by a signal: the summary says aborted, exit 1, nothing on stderr. */
  async function endsAborted(child: ReturnType<typeof spawnBin>): Promise<void> {
    const { code, stdout, stderr } = await finished(child);
    expect(stderr).toBe("");
    expect(stdout).toMatch(/■ aborted · .*\n$/);
    expect(code).toBe(1);
  }

  /** The address `serve` prints once it listens. */
  function servingUrl(child: ReturnType<typeof spawnBin>): Promise<string> {
    return new Promise((resolve) => {
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        const found = /open (http:\/\/\S+?)\/ in a browser/.exec(stdout)?.[1];
        if (found) resolve(found);
      });
    });
  }

  /** The status `serve` answers a start with, sent under the `Host` header given. */
  function startStatus(url: string, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const request = httpRequest(`${url}/api/runs`, {
        method: "POST",
        headers: { host, "content-type": "application/json", accept: "application/x-ndjson" },
      });
      request.on("error", reject);
      request.on("response", (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
        request.destroy();
      });
      request.end(JSON.stringify({ prompt: "What is 2+2?" }));
    });
  }

  it.each(["SIGINT", "SIGTERM"] as const)("aborts the run cleanly on %s", async (signal) => {
    // A slow demo stream, so the run is still going when the signal arrives.
    const child = spawnBin(["run", "What is 2*(3+4)?"], { AGENT_CORE_DEMO_DELAY_MS: "200" });
    child.stdout.once("data", () => child.kill(signal));
    await endsAborted(child);
  });

  it("serve stops cleanly on SIGTERM, as a process manager stops it: the run in flight ends aborted, exit 0", {
    timeout: 30_000,
  }, async () => {
    // A slow demo stream, so the run is still going when the signal arrives.
    const child = spawnBin(["serve", "--port", "0"], { AGENT_CORE_DEMO_DELAY_MS: "200" });
    const ended = finished(child);
    const url = await servingUrl(child);
    const response = await fetch(`${url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/x-ndjson" },
      body: JSON.stringify({ prompt: "What is 2+2?" }),
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    child.kill("SIGTERM");
    let stream = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      stream += new TextDecoder().decode(chunk.value);
    const { code, stderr } = await ended;
    expect(stderr).toBe("");
    expect(JSON.parse(stream.trimEnd().split("\n").at(-1) as string)).toMatchObject({
      type: "agent_end",
      stopReason: "aborted",
    });
    expect(code).toBe(0);
  });

  it("a Ctrl-C while the CLI is still loading aborts the run as cleanly as one during it", async () => {
    // A module hook sends the SIGINT while cli.ts loads: the moment a Ctrl-C typed right after
    // Enter lands in (loading takes a second or two).
    const hook = `export async function load(url, context, next) {
      if (/\\/cli\\/(src|dist)\\/cli\\.[jt]s$/.test(url)) process.kill(process.pid, "SIGINT");
      return next(url, context);
    }`;
    const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const child = spawn(
      process.execPath,
      ["--import", `data:text/javascript,${encodeURIComponent(register)}`, ...BIN, "run", "What is 2+2?"],
      // A slow demo stream: the signal, sent from the hooks' thread, is taken at a turn of the
      // event loop, which a run without a wait could finish before.
      { cwd: root, env: binEnv({ AGENT_CORE_DEMO_DELAY_MS: "200" }), stdio: ["ignore", "pipe", "pipe"] },
    );
    await endsAborted(child);
  });

  it("chat from a pipe ends with 0 on SIGINT while idle: no run failed", async () => {
    const child = spawnPiped(["chat"], DEMO_ENV);
    const ended = finished(child);
    // The pipe stays open: after the answer the chat waits for the next line.
    child.stdin.write("What is 2+2?\n");
    await printed(child, "■ completed");
    child.kill("SIGINT");
    const { code, stdout, stderr } = await ended;
    expect(stderr).toBe("");
    expect(stdout).toContain("[demo] 2+2 = 4.");
    expect(code).toBe(0);
  });

  it("chat from a pipe ends with 1 on SIGINT during a run: the run is aborted", async () => {
    const child = spawnPiped(["chat"], { AGENT_CORE_DEMO_DELAY_MS: "200" });
    const ended = finished(child);
    child.stdin.write("What is 2+2?\n");
    await printed(child, "▶ [demo]");
    child.kill("SIGINT");
    const { code, stdout, stderr } = await ended;
    expect(stderr).toBe("");
    expect(stdout).toMatch(/■ aborted · .*\n$/);
    expect(code).toBe(1);
  });

  it("serve with a database out of reach says so in one line and exits 1, neither a stack trace nor a hang", {
    timeout: 30_000,
  }, async () => {
    const child = spawnBin(["serve", "--port", "0", "--database-url", "postgres://u:p@127.0.0.1:1/none"], {
      AGENT_CORE_HOOK_SECRET: "s".repeat(32),
    });
    const { code, stdout, stderr } = await finished(child);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^agent-core: serve could not start: .*ECONNREFUSED/m);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(code).toBe(1);
  });

  it("serve on this machine answers only its own host names: a page reaching it through DNS rebinding gets 403", {
    timeout: 30_000,
  }, async () => {
    const child = spawnBin(["serve", "--port", "0"], { AGENT_CORE_DEMO_DELAY_MS: "0" });
    const ended = finished(child);
    try {
      const url = await servingUrl(child);
      const { port } = new URL(url);
      expect(await startStatus(url, `rebound.example:${port}`)).toBe(403);
      expect(await startStatus(url, `localhost:${port}`)).toBe(200);
      expect(await startStatus(url, `127.0.0.1:${port}`)).toBe(200);
    } finally {
      child.kill("SIGINT");
      expect((await ended).code).toBe(0);
    }
  });

  it("serve on a loopback host spelled another way (LOCALHOST, 127.1) still answers only this machine's names", {
    timeout: 30_000,
  }, async () => {
    for (const host of ["LOCALHOST", "127.1"]) {
      const child = spawnBin(["serve", "--port", "0", "--host", host], { AGENT_CORE_DEMO_DELAY_MS: "0" });
      const ended = finished(child);
      try {
        const url = await servingUrl(child);
        const status = await startStatus(url, `rebound.example:${new URL(url).port}`);
        expect(status, `--host ${host}`).toBe(403);
      } finally {
        child.kill("SIGINT");
        expect((await ended).code).toBe(0);
      }
    }
  });

  it("ends quietly when the reader closes stdout, as `| head -1` does", async () => {
    // A slow demo stream, so the bin is still writing events after the reader has gone.
    const child = spawnBin(["run", "--json", "What is 2*(3+4)?"], { AGENT_CORE_DEMO_DELAY_MS: "50" });
    let firstLine = "";
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on("data", (chunk: Buffer) => {
      firstLine += chunk.toString();
      if (firstLine.includes("\n")) child.stdout.destroy();
    });
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (exitCode, exitSignal) => resolve([exitCode, exitSignal]));
    });
    expect(JSON.parse(firstLine.split("\n")[0] as string)).toMatchObject({ type: "agent_start" });
    expect(stderr).not.toContain("EPIPE");
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(signal === "SIGPIPE" || code === 0 || code === 141, `exit ${code}, signal ${signal}`).toBe(true);
  });
});
