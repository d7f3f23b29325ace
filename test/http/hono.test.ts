import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { afterEach, expect, it } from "vitest";
import "@agent-core/agentic";
import { Agent } from "@agent-core/core";
import { createAgentServer } from "@agent-core/http";
import { agentEvents, NdjsonReader, ofType, post, readPage, SECRET } from "./harness.js";

// The same handler mounted in Hono, served by @hono/node-server: nothing Node-specific in between.

let close: (() => void) | undefined;
afterEach(() => close?.());

it("serves runs, client tool results and re-attaching from a Hono app", async () => {
  const agents = createAgentServer({
    agent: () =>
      new Agent({
        provider: scriptedModel([
          [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
          [script.text("done")],
        ]),
        tools: [readPage],
      }),
    authorize: (request) => {
      const user = request.headers.get("x-user");
      return user ? { userId: user } : undefined;
    },
    hookSecret: SECRET,
    basePath: "/api",
  });
  const app = new Hono();
  app.get("/health", (c) => c.text("ok"));
  app.all("/api/*", (c) => agents.fetch(c.req.raw));
  const url = await new Promise<string>((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve(`http://127.0.0.1:${info.port}`),
    );
    close = () => {
      agents.close();
      server.close();
    };
  });
  expect(await (await fetch(`${url}/health`)).text()).toBe("ok");
  const reader = new NdjsonReader(await post(`${url}/api/runs`, { prompt: "go" }));
  const call = await reader.until(ofType("tool_call"));
  const replay = new NdjsonReader(
    await fetch(`${url}/api/runs/${call.runId}/events?after=${call.seq}`, { headers: { "x-user": "alice" } }),
  );
  const posted = await post(`${url}/api/runs/${call.runId}/tool-results`, {
    toolCallId: "c1",
    token: call.hookToken,
    result: "Title",
  });
  expect(posted.status).toBe(204);
  const events = agentEvents([...reader.seen, ...(await reader.rest())]);
  assertEventProtocol(events);
  expect(events.at(-1)).toMatchObject({ stopReason: "completed" });
  const tail = await replay.rest();
  expect(tail.map((event) => event.seq)).toEqual(
    events.filter((event) => event.seq > (call.seq as number)).map((event) => event.seq),
  );
  const unauthorized = await fetch(`${url}/api/runs`, { method: "POST" });
  expect(unauthorized.status).toBe(401);
});
