import "@agent-core/agentic";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Agent, InvalidConfigError } from "@agent-core/core";
import {
  type AgentMcpHttpOptions,
  type AgentMcpServerOptions,
  connectMcp,
  createAgentMcpHttpHandler,
  createAgentMcpServer,
} from "@agent-core/mcp";
import { script, scriptedModel } from "@agent-core/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, describe, expect, it } from "vitest";

// The reverse: an agent served as an MCP tool, called with the SDK's own client.

const root = join(import.meta.dirname, "..", "..");

async function connected(agent: () => Agent): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createAgentMcpServer({ agent }).connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

describe("createAgentMcpServer", () => {
  it("answers ask_agent with the agent's text, and a run that fails with isError saying why", async () => {
    const replies = [[script.text("Hello from the agent.")], { throws: new Error("the provider is down") }];
    const client = await connected(() => new Agent({ provider: scriptedModel([replies.shift() as never]) }));
    const answered = await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } });
    expect(answered).toEqual({ content: [{ type: "text", text: "Hello from the agent." }] });
    const failed = await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } });
    expect(failed.isError).toBe(true);
    expect(failed.content).toEqual([
      { type: "text", text: expect.stringMatching(/^The agent did not answer: .*the provider is down/) },
    ]);
    await client.close();
  });

  it("refuses options a server cannot be made of, naming the key: a misspelt allowedHosts would check no host", () => {
    const agent = () => new Agent({ provider: scriptedModel([[script.text("Hello.")]]) });
    expect(() => createAgentMcpHttpHandler({ agent, allowedHost: ["localhost:3000"] } as never)).toThrow(
      new InvalidConfigError(
        "Invalid createAgentMcpHttpHandler() options: allowedHost is not an option (known: agent, name, toolName, description, allowedHosts, allowedOrigins, sessionIdleMs).",
      ),
    );
    // A string would be searched as text, letting in any origin it contains.
    expect(() =>
      createAgentMcpHttpHandler({ agent, allowedOrigins: "http://localhost:3000" } as never),
    ).toThrow(
      new InvalidConfigError(
        'createAgentMcpHttpHandler(): allowedOrigins must be an array of strings, got "http://localhost:3000".',
      ),
    );
    expect(() => createAgentMcpServer({ agnet: agent } as never)).toThrow(
      new InvalidConfigError(
        "Invalid createAgentMcpServer() options: agnet is not an option (known: agent, name, toolName, description).",
      ),
    );
    // Without an agent, every call would be answered with a TypeError.
    expect(() => createAgentMcpServer({} as never)).toThrow(
      new InvalidConfigError(
        "createAgentMcpServer(): agent must be a function that makes the agent of a call, got undefined.",
      ),
    );
    expect(() => createAgentMcpServer({ agent, toolName: " " })).toThrow(
      new InvalidConfigError('createAgentMcpServer(): toolName must be a non-blank string, got " ".'),
    );
  });

  it("answers a blank prompt with an isError result saying so, and starts no run", async () => {
    let agents = 0;
    const client = await connected(() => {
      agents++;
      return new Agent({ provider: scriptedModel([[script.text("an answer to nothing")]]) });
    });
    for (const prompt of ["", "   ", "\n\t"]) {
      const answered = await client.callTool({ name: "ask_agent", arguments: { prompt } });
      expect(answered.isError, JSON.stringify(prompt)).toBe(true);
      expect(answered.content).toEqual([
        { type: "text", text: expect.stringContaining("The prompt is blank: say what to ask the agent.") },
      ]);
    }
    expect(agents).toBe(0);
    await client.close();
  });

  it("aborts the agent's run when the client cancels the call", async () => {
    let ended: (stopReason: string) => void = () => {};
    const runEnded = new Promise<string>((resolve) => (ended = resolve));
    const client = await connected(() => {
      const agent = new Agent({ provider: scriptedModel([[script.hang()]]) });
      agent.on("agent_end", (event) => ended(event.stopReason));
      return agent;
    });
    const cancel = new AbortController();
    const call = client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } }, undefined, {
      signal: cancel.signal,
    });
    setTimeout(() => cancel.abort("no longer needed"), 100);
    await expect(call).rejects.toThrow("no longer needed");
    expect(await runEnded).toBe("aborted");
    await client.close();
  });
});

/** A stateless server takes a call without initialize: one POST of `ask_agent`. */
const ASK_AGENT_CALL = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: { name: "ask_agent", arguments: { prompt: "Hi" } },
});

describe("createAgentMcpHttpHandler", () => {
  let http: Server | undefined;
  afterEach(async () => {
    const closing = http;
    http = undefined;
    if (closing === undefined) return; // a test that served nothing
    closing.closeAllConnections();
    await new Promise((resolve) => closing.close(resolve));
  });

  /** The handler on a real HTTP server, on a free local port: its URL. */
  async function serving(
    agent: AgentMcpServerOptions["agent"],
    checks: Omit<AgentMcpHttpOptions, "agent"> = {},
  ): Promise<string> {
    const handler = createAgentMcpHttpHandler({ agent, ...checks });
    http = createServer((request, response) => void handler(request, response));
    await new Promise<void>((resolve) => http?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  }

  it("answers the SDK's client over Streamable HTTP, a new agent per call", async () => {
    const url = await serving(
      () => new Agent({ provider: scriptedModel([[script.text("Hello over HTTP.")]]) }),
    );
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["ask_agent"]);
    for (let call = 0; call < 2; call++)
      expect(await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } })).toEqual({
        content: [{ type: "text", text: "Hello over HTTP." }],
      });
    await client.close();
    const get = await fetch(url, { headers: { accept: "text/event-stream" } });
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST, DELETE"]);
    const end = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": "any" } });
    expect([end.status, (await end.json()).error.code]).toEqual([404, -32001]);
  });

  /** An agent whose model hangs, and how its runs start and end. */
  function hangingAgents() {
    const models: ReturnType<typeof scriptedModel>[] = [];
    const starts: string[] = [];
    const ends: string[] = [];
    let startedOne: () => void = () => {};
    let endedOne: (stopReason: string) => void = () => {};
    const agent = () => {
      const model = scriptedModel([[script.text("thinking"), script.hang()]]);
      models.push(model);
      const made = new Agent({ provider: model });
      made.on("agent_start", (event) => {
        starts.push(event.runId);
        startedOne();
      });
      made.on("agent_end", (event) => {
        ends.push(event.stopReason);
        endedOne(event.stopReason);
      });
      return made;
    };
    return {
      agent,
      models,
      ends,
      started: () => new Promise<void>((resolve) => (startedOne = resolve)),
      ended: () => new Promise<string>((resolve) => (endedOne = resolve)),
    };
  }

  it("takes the client's cancel, a POST of its own, to the call it names: the run is aborted", async () => {
    const agents = hangingAgents();
    const url = await serving(agents.agent);
    const client = new Client({ name: "test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    expect(transport.sessionId).toEqual(expect.any(String));
    const cancel = new AbortController();
    const started = agents.started();
    const ended = agents.ended();
    const call = client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } }, undefined, {
      signal: cancel.signal,
    });
    await started;
    cancel.abort("no longer needed");
    await expect(call).rejects.toThrow("no longer needed");
    expect(await ended).toBe("aborted");
    expect(agents.models[0]?.doStreamCalls[0]?.abortSignal?.aborted).toBe(true);
    await client.close();
  });

  it("aborts the served run when agent-core's own client aborts its call or runs out of toolMs", async () => {
    const agents = hangingAgents();
    const url = await serving(agents.agent);
    const mcp = await connectMcp({ url }, { name: "inner" });
    const tools = await mcp.tools();
    const outer = (timeouts = {}) =>
      new Agent({
        provider: scriptedModel([[script.toolCall("ask_agent", { prompt: "Hi" })], [script.text("ok")]]),
        tools,
        timeouts,
      });
    const aborting = outer();
    const started = agents.started();
    let ended = agents.ended();
    const run = aborting.prompt("go");
    await started;
    aborting.abort("stop");
    expect((await run.result()).stopReason).toBe("aborted");
    expect(await ended).toBe("aborted");
    ended = agents.ended();
    expect((await outer({ toolMs: 150 }).prompt("go").result()).stopReason).toBe("completed");
    expect(await ended).toBe("aborted");
    expect(agents.ends).toEqual(["aborted", "aborted"]);
    await mcp.close();
  });

  it("in a session too, aborts the run of a POST whose connection drops before its answer", async () => {
    const agents = hangingAgents();
    const url = await serving(agents.agent);
    const client = new Client({ name: "test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    const started = agents.started();
    const ended = agents.ended();
    const post = httpRequest(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": transport.sessionId as string,
        "mcp-protocol-version": transport.protocolVersion as string,
      },
    });
    post.on("error", () => {});
    post.end(ASK_AGENT_CALL);
    await started;
    post.destroy();
    expect(await ended).toBe("aborted");
    await client.close();
  });

  it("ends a session on DELETE, and one no request used for sessionIdleMs, but not while its call runs", async () => {
    const url = await serving(
      // Idle time long enough that a loaded machine's pause between the requests of one client's
      // connect does not end its session (100 ms did, now and then).
      () => new Agent({ provider: scriptedModel([[script.delay(1_500), script.text("slow answer")]]) }),
      { sessionIdleMs: 500 },
    );
    const connect = async () => {
      const transport = new StreamableHTTPClientTransport(new URL(url));
      const client = new Client({ name: "test", version: "1.0.0" });
      await client.connect(transport);
      return { client, transport };
    };
    const named = (sessionId: string) =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": sessionId,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
      });
    const ending = await connect();
    const ended = ending.transport.sessionId as string;
    await ending.transport.terminateSession();
    expect((await named(ended)).status).toBe(404);

    const busy = await connect();
    // The call outlasts the idle time three times over.
    expect(await busy.client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } })).toEqual({
      content: [{ type: "text", text: "slow answer" }],
    });
    const idle = busy.transport.sessionId as string;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const expired = await named(idle);
    expect([expired.status, (await expired.json()).error.code]).toEqual([404, -32001]);
    await busy.client.close();
  });

  it("answers a body that is no JSON 400 and one over 4 MiB 413, and refuses a bad sessionIdleMs", async () => {
    const url = await serving(() => new Agent({ provider: scriptedModel([[script.text("Hello.")]]) }));
    const post = (body: string) =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body,
      });
    const broken = await post("{ not json");
    expect([broken.status, (await broken.json()).error.code]).toEqual([400, -32700]);
    const huge = await post(JSON.stringify({ padding: "x".repeat(4 * 1024 * 1024) }));
    expect([huge.status, (await huge.json()).error.code]).toEqual([413, -32000]);
    for (const sessionIdleMs of [0, -1, 1.5, 2 ** 31, Number.NaN])
      expect(() => createAgentMcpHttpHandler({ agent: () => new Agent(), sessionIdleMs })).toThrow(
        InvalidConfigError,
      );
  });

  it("with allowedHosts and allowedOrigins, refuses another Host (a DNS-rebinding page) or another Origin with 403, before any run", async () => {
    let agents = 0;
    const url = await serving(
      () => {
        agents++;
        return new Agent({ provider: scriptedModel([[script.text("Hello.")]]) });
      },
      { allowedHosts: ["agent.test"], allowedOrigins: ["http://app.example"] },
    );
    const call = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const post = httpRequest(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...headers,
          },
        });
        post.on("error", reject);
        post.on("response", async (response) => {
          let body = "";
          for await (const chunk of response) body += chunk;
          resolve({ status: response.statusCode ?? 0, body });
        });
        post.end(ASK_AGENT_CALL);
      });
    expect((await call({ host: "rebound.example" })).status).toBe(403);
    expect((await call({ host: "agent.test", origin: "http://evil.example" })).status).toBe(403);
    expect(agents).toBe(0);
    const answered = await call({ host: "agent.test", origin: "http://app.example" });
    expect(answered.status).toBe(200);
    expect(answered.body).toContain("Hello.");
    expect(agents).toBe(1);
  });

  it("takes the lists as they are: an empty allowedHosts or allowedOrigins answers none, and a request with no Origin passes allowedOrigins", async () => {
    let agents = 0;
    const agent = () => {
      agents++;
      return new Agent({ provider: scriptedModel([[script.text("Hello.")]]) });
    };
    const call = (url: string, headers: Record<string, string>) =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "ask_agent", arguments: { prompt: "Hi" } },
        }),
      });
    const noHost = await serving(agent, { allowedHosts: [] });
    const refused = await call(noHost, {});
    expect(refused.status).toBe(403);
    expect((await refused.json()).error).toMatchObject({ code: -32000 });
    http?.closeAllConnections();
    http?.close();
    const noOrigin = await serving(agent, { allowedOrigins: [] });
    expect((await call(noOrigin, { origin: "http://app.example" })).status).toBe(403);
    expect(agents).toBe(0);
    // A request without an Origin (not a browser's) is not checked against allowedOrigins.
    const answered = await call(noOrigin, {});
    expect(answered.status).toBe(200);
    expect(await answered.text()).toContain("Hello.");
    expect(agents).toBe(1);
  });

  it("aborts the agent's run when the POST's connection drops mid-call, and stops its model call", async () => {
    const model = scriptedModel([[script.hang()]]);
    let started: () => void = () => {};
    const runStarted = new Promise<void>((resolve) => (started = resolve));
    let ended: (stopReason: string) => void = () => {};
    const runEnded = new Promise<string>((resolve) => (ended = resolve));
    const url = await serving(() => {
      const agent = new Agent({ provider: model });
      agent.on("agent_start", () => started());
      agent.on("agent_end", (event) => ended(event.stopReason));
      return agent;
    });
    // A stateless server takes a call without initialize: one POST, as a client whose network fails mid-call sends.
    const post = httpRequest(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    });
    post.on("error", () => {});
    post.end(ASK_AGENT_CALL);
    await runStarted;
    post.destroy();
    expect(await runEnded).toBe("aborted");
    expect(model.doStreamCalls[0]?.abortSignal?.aborted).toBe(true);
  });
});

describe("agent-core mcp", () => {
  it("serves the CLI's agent to an MCP client over stdio: one tool, ask_agent, answered by the demo model", async () => {
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", "--conditions=@agent-core/source", "packages/cli/src/bin.ts", "mcp"],
        cwd: root,
        // No OPENAI_API_KEY: the SDK passes the server only HOME, PATH and the like, and `env`.
        env: { AGENT_CORE_DEMO_DELAY_MS: "0" },
        stderr: "ignore",
      }),
    );
    const { tools } = await client.listTools();
    expect(tools).toEqual([
      expect.objectContaining({
        name: "ask_agent",
        inputSchema: expect.objectContaining({
          type: "object",
          properties: { prompt: expect.objectContaining({ type: "string" }) },
          required: ["prompt"],
        }),
      }),
    ]);
    const result = await client.callTool({ name: "ask_agent", arguments: { prompt: "What is 15*3?" } });
    expect(result.isError).toBeUndefined();
    expect(result.content).toEqual([{ type: "text", text: expect.stringContaining("15*3 = 45") }]);
    await client.close();
  }, 30_000);
});
