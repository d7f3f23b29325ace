import "@agent-core/agentic";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, type AgentConfig } from "@agent-core/core";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { afterEach, beforeAll, describe, expect, it } from "vitest";

// A model call that ends before the response headers arrive must still close its HTTP request:
// over real HTTP, through a real AI SDK provider, against a server that never answers.

interface OpenRequest {
  /** Settles when the client closes the connection (the server never responds). */
  closed: Promise<void>;
  isClosed: boolean;
}

let server: Server | undefined;
afterEach(async () => {
  const closing = server;
  server = undefined;
  if (closing === undefined) return;
  closing.closeAllConnections();
  await new Promise((resolve) => closing.close(resolve));
});

/** A chat-completions endpoint that holds every request without ever sending headers. */
async function silentServer() {
  const requests: OpenRequest[] = [];
  server = createServer((req, res) => {
    req.resume();
    const request: OpenRequest = { closed: undefined as unknown as Promise<void>, isClosed: false };
    // `res`, not `req`: a request's 'close' also fires once its body has been read.
    request.closed = new Promise((resolve) =>
      res.once("close", () => {
        request.isClosed = true;
        resolve();
      }),
    );
    requests.push(request);
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const provider = createOpenAICompatible({ name: "local", baseURL: `http://127.0.0.1:${port}/v1` });
  return { model: provider("silent-model"), requests };
}

/** Every request closed; fails (instead of hanging the test) if one is still open after 5 s. */
async function allClosed(requests: readonly OpenRequest[]): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const open = requests.filter((request) => !request.isClosed).length;
      reject(new Error(`${open} of ${requests.length} requests still open 5 s after the run ended`));
    }, 5000);
  });
  try {
    await Promise.race([Promise.all(requests.map((request) => request.closed)), stuck]);
  } finally {
    clearTimeout(timer);
  }
}

// The limits below must run out after the server has seen the request: make the first request
// of the file (which loads and compiles the HTTP client) not be one of them.
beforeAll(async () => {
  const warm = createServer((_req, res) => res.end());
  await new Promise<void>((resolve) => warm.listen(0, "127.0.0.1", resolve));
  await (await fetch(`http://127.0.0.1:${(warm.address() as AddressInfo).port}/`)).text();
  warm.closeAllConnections();
  await new Promise((resolve) => warm.close(resolve));
});

describe("a model call ended before the response headers closes its HTTP request", () => {
  it.each<[string, AgentConfig["timeouts"], string]>([
    ["firstChunkMs", { firstChunkMs: 200 }, "firstChunk"],
    ["stepMs", { stepMs: 200 }, "step"],
  ])("when %s runs out", async (_name, timeouts, kind) => {
    const { model, requests } = await silentServer();
    const result = await new Agent({ provider: model, timeouts }).prompt("hello").result();
    expect(result.stopReason).toBe("timeout");
    expect(result.error).toMatchObject({ code: "timeout", kind });
    expect(requests).toHaveLength(1);
    await allClosed(requests);
  });

  it("on every attempt when timeouts are retried", async () => {
    const { model, requests } = await silentServer();
    const agent = new Agent({
      provider: model,
      timeouts: { firstChunkMs: 200 },
      retry: { retryTimeouts: true, maxRetries: 2, initialDelayMs: 1 },
    });
    const result = await agent.prompt("hello").result();
    expect(result.stopReason).toBe("timeout");
    expect(requests).toHaveLength(3);
    await allClosed(requests);
  });

  it("when the run is aborted", async () => {
    const { model, requests } = await silentServer();
    const agent = new Agent({ provider: model, timeouts: { stepMs: 60_000 } });
    const run = agent.prompt("hello");
    await new Promise((resolve) => server?.once("request", resolve));
    agent.abort();
    expect((await run.result()).stopReason).toBe("aborted");
    await allClosed(requests);
  });
});
