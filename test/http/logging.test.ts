import { runInNewContext } from "node:vm";
import { InvalidConfigError, type Logger } from "@agent-core/core";
import { createAgentServer, createUseChatHandler, serveNode } from "@agent-core/http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { unhandledRejectionsOf } from "../unhandled-rejections.js";
import { SECRET } from "./harness.js";

// The server's failures go to its logger (silent by default), never to the console.

function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => {
    lines.push({ level, fields, message });
  };
  return { lines, error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") };
}

afterEach(() => vi.restoreAllMocks());

/** A server for alice whose agent factory throws: each start fails, and is logged to `logger`. */
function failingAgentServer(logger: Logger) {
  return createAgentServer({
    agent: () => {
      throw new Error("no agent today");
    },
    authorize: () => ({ userId: "alice" }),
    hookSecret: SECRET,
    logger,
  });
}

describe("the server's logger", () => {
  it("gets a request that failed, with its method and url; the console gets nothing", async () => {
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
    const logger = recordingLogger();
    const server = failingAgentServer(logger);
    const response = await server.fetch(
      new Request("http://localhost/runs", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "hi" }),
      }),
    );
    server.close();
    expect([response.status, await response.json()]).toEqual([
      500,
      { error: { code: "internal", message: "The server failed to answer this request." } },
    ]);
    expect(logger.lines).toEqual([
      {
        level: "error",
        message: "agent-core http: a request failed",
        fields: { err: new Error("no agent today"), method: "POST", url: "http://localhost/runs" },
      },
    ]);
    expect(consoleError).not.toHaveBeenCalled();
  });

  it("fails a start whose agent() returned no agent with a logged TypeError that says so, and leaves no rejection unhandled", async () => {
    const logger = recordingLogger();
    const server = createAgentServer({
      agent: (() => undefined) as never,
      authorize: () => ({ userId: "alice" }),
      hookSecret: SECRET,
      logger,
    });
    const start = (conversationId?: string) =>
      server.fetch(
        new Request("http://localhost/runs", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt: "hi", conversationId }),
        }),
      );
    const unhandled = await unhandledRejectionsOf(async () => {
      expect((await start("c")).status).toBe(500);
      expect((await start()).status).toBe(500);
    });
    await server.close();
    expect(unhandled).toEqual([]);
    expect(logger.lines.map((line) => String(line.fields.err))).toEqual([
      "TypeError: agent() must return an Agent (or a promise of one), got undefined.",
      "TypeError: agent() must return an Agent (or a promise of one), got undefined.",
    ]);
  });

  it("serveNode refuses a logger without the four levels, as createAgentServer does", async () => {
    const handler = async () => new Response("ok");
    await expect(serveNode(handler, { logger: {} as Logger })).rejects.toThrow(InvalidConfigError);
    const noDebug = { error: () => {}, warn: () => {}, info: () => {} } as unknown as Logger;
    await expect(serveNode(handler, { logger: noDebug })).rejects.toThrow(InvalidConfigError);
  });

  it("serveNode logs a handler that threw", async () => {
    const logger = recordingLogger();
    const node = await serveNode(
      () => {
        throw new Error("broken handler");
      },
      { logger },
    );
    try {
      const response = await fetch(`${node.url}/anything`);
      expect(response.status).toBe(500);
    } finally {
      await node.close();
    }
    expect(logger.lines).toMatchObject([
      {
        level: "error",
        message: "agent-core http: the handler threw",
        fields: { method: "GET", url: "/anything" },
      },
    ]);
  });

  it("a logger that throws loses its line, never the answer: still a 500, and no client left waiting", async () => {
    const fails = () => {
      throw new Error("the log is down");
    };
    const logger = { error: fails, warn: fails, info: fails, debug: fails };
    const agents = failingAgentServer(logger);
    const chats = createUseChatHandler({
      agent: () => {
        throw new Error("no agent today");
      },
      authorize: () => ({ userId: "alice" }),
      logger,
    });
    const node = await serveNode(
      () => {
        throw new Error("broken handler");
      },
      { logger },
    );
    const post = (url: string, body: unknown) =>
      new Request(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    try {
      const answers = await Promise.all([
        agents.fetch(post("http://localhost/runs", { prompt: "hi" })),
        chats.fetch(
          post("http://localhost/api/chat", {
            id: "c1",
            trigger: "submit-message",
            messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }],
          }),
        ),
        fetch(`${node.url}/anything`),
      ]);
      expect(answers.map((response) => response.status)).toEqual([500, 500, 500]);
    } finally {
      agents.close();
      chats.close();
      await node.close();
    }
  });

  // A logger made in another realm (a vm context) returns that realm's promises, not this one's.
  const rejectsHere = async () => {
    throw new Error("the log is down");
  };
  const rejectsInAnotherRealm = runInNewContext("async () => { throw new Error('the log is down'); }");
  it.each([
    ["", rejectsHere],
    [" (of another realm)", rejectsInAnotherRealm],
  ])(
    "an async logger%s whose lines reject: still a 500, and no rejection left unhandled",
    async (_realm, rejects) => {
      const logger = { error: rejects, warn: rejects, info: rejects, debug: rejects };
      const agents = failingAgentServer(logger);
      const node = await serveNode(
        () => {
          throw new Error("broken handler");
        },
        { logger },
      );
      try {
        const unhandled = await unhandledRejectionsOf(async () => {
          const answers = await Promise.all([
            agents.fetch(
              new Request("http://localhost/runs", {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ prompt: "hi" }),
              }),
            ),
            fetch(`${node.url}/anything`),
          ]);
          expect(answers.map((response) => response.status)).toEqual([500, 500]);
        });
        expect(unhandled).toEqual([]);
      } finally {
        agents.close();
        await node.close();
      }
    },
  );

  it("refuses a logger without the four levels", () => {
    expect(() =>
      createAgentServer({
        agent: () => {
          throw new Error("unused");
        },
        authorize: () => undefined,
        hookSecret: SECRET,
        logger: { error() {} } as never,
      }),
    ).toThrow(/logger must have/);
  });
});
