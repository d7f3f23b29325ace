import { once } from "node:events";
import type { ServerResponse } from "node:http";
import { connect } from "node:net";
import { silentLogger } from "@agent-core/core";
import { afterEach, describe, expect, it } from "vitest";
import { type NodeServer, serveNode } from "./node-server.js";

// serveNode on a real loopback port, driven by fetch and by raw sockets (to see one connection).

const servers: NodeServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function serve(handler: (request: Request) => Promise<Response>): Promise<NodeServer> {
  const server = await serveNode(handler);
  servers.push(server);
  return server;
}

const refused = () => Response.json({ error: { code: "body-too-large" } }, { status: 413 });

/** Refuses a POST without reading its body, as a 401, a 415 or a 413 by `Content-Length` do. */
async function refuseUnread(request: Request): Promise<Response> {
  return request.method === "POST" ? refused() : new Response("next");
}

/** Reads a little of a POST's body and cancels the rest, as a 413 past `maxBodyBytes` does. */
async function refuseAfterReading(request: Request): Promise<Response> {
  if (request.method !== "POST") return new Response("next");
  const reader = (request.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  await reader.cancel();
  return refused();
}

/**
 * Writes `requests` on one connection and reads until `count` responses came, or the connection
 * ended: their status lines, and how the connection ended.
 */
async function onOneConnection(url: string, requests: (string | Buffer)[], count: number) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = "";
  let ended: string | undefined;
  const statuses = () => received.match(/HTTP\/1\.1 \d{3}/g)?.map((line) => Number(line.slice(9))) ?? [];
  const done = new Promise<void>((resolve) => {
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
      if (statuses().length >= count) resolve();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      ended = error.code;
      resolve();
    });
    socket.on("close", () => {
      ended ??= "closed";
      resolve();
    });
  });
  await once(socket, "connect");
  for (const request of requests) socket.write(request);
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  socket.destroy();
  return { statuses: statuses(), ended };
}

const big = "x".repeat(1_000_000);
const postHead = (length: number) =>
  `POST /runs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;
const next = "GET /next HTTP/1.1\r\nhost: x\r\n\r\n";

describe("a body the handler does not read", () => {
  for (const [name, handler] of [
    ["never read", refuseUnread],
    ["read in part", refuseAfterReading],
  ] as const) {
    it(`${name}: fetch gets the refusal at once, and the connection takes the next request`, async () => {
      const { url } = await serve(handler);
      const startedAt = Date.now();
      const response = await fetch(`${url}/runs`, { method: "POST", body: big });
      expect(response.status).toBe(413);
      await response.text();
      expect(Date.now() - startedAt).toBeLessThan(2_000);
      expect(await (await fetch(`${url}/next`)).text()).toBe("next");

      const sized = await onOneConnection(url, [postHead(big.length), big, next], 2);
      expect(sized).toEqual({ statuses: [413, 200], ended: undefined });
      const chunk = "x".repeat(16_384);
      const chunked = [
        "POST /runs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        ...Array.from({ length: 40 }, () => `4000\r\n${chunk}\r\n`),
        `0\r\n\r\n${next}`,
      ];
      expect(await onOneConnection(url, chunked, 2)).toEqual({ statuses: [413, 200], ended: undefined });
    });
  }
});

describe("a slow reader", () => {
  it("leaves no listener behind on the response for each wait for the socket", async () => {
    const chunk = new Uint8Array(64 * 1024);
    const closeListeners: number[] = [];
    let response: ServerResponse | undefined;
    const node = await serve(async () => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>(
        {
          // Each chunk is past the socket's high-water mark: every write waits for 'drain'.
          pull(controller) {
            closeListeners.push(response?.listenerCount("close") ?? 0);
            if (sent++ === 40) controller.close();
            else controller.enqueue(chunk);
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(body);
    });
    node.server.on("request", (_request, res: ServerResponse) => {
      response = res;
    });
    const received = await (await fetch(node.url)).arrayBuffer();
    expect(received.byteLength).toBe(40 * chunk.byteLength);
    // The count while the body streams: the same after 40 waits as after the first.
    expect(new Set(closeListeners.slice(2))).toEqual(new Set([closeListeners[2]]));
    expect(response?.listenerCount("error")).toBeLessThanOrEqual(1);
  });
});

describe("a reader that stops reading", () => {
  /** A body of endless 64 KiB chunks, cancelled (`cancelled` resolves) when the connection goes. */
  function endless() {
    let cancel!: () => void;
    const cancelled = new Promise<void>((resolve) => {
      cancel = resolve;
    });
    const chunk = new Uint8Array(64 * 1024);
    const handler = async () =>
      new Response(
        new ReadableStream<Uint8Array>(
          { pull: (controller) => controller.enqueue(chunk), cancel },
          { highWaterMark: 0 },
        ),
      );
    return { handler, cancelled };
  }

  it("is let go once the socket took nothing for stalledWriteMs: the connection closes and the body is cancelled", async () => {
    const { handler, cancelled } = endless();
    const node = await serveNode(handler, { stalledWriteMs: 200 });
    servers.push(node);
    const { hostname, port } = new URL(node.url);
    const socket = connect(Number(port), hostname);
    socket.write(`GET / HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
    socket.pause(); // reads nothing: the kernel's buffers fill, then the server's writes wait
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve("still streaming after 10 s"), 10_000);
    });
    const outcome = await Promise.race([cancelled.then(() => "cancelled"), deadline]);
    clearTimeout(timer);
    // The server's end of the connection is closed too (the paused client has not read its end yet).
    const connections = await new Promise<number>((resolve, reject) =>
      node.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
    socket.destroy();
    expect({ outcome, connections }).toEqual({ outcome: "cancelled", connections: 0 });
  });

  it("a reader that reads slowly, but reads, keeps its connection", async () => {
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024);
    const node = await serveNode(
      async () =>
        new Response(
          new ReadableStream<Uint8Array>(
            {
              pull(controller) {
                if (sent++ === 60) controller.close();
                else controller.enqueue(chunk);
              },
            },
            { highWaterMark: 0 },
          ),
        ),
      { stalledWriteMs: 300 },
    );
    servers.push(node);
    const reader = ((await fetch(node.url)).body as ReadableStream<Uint8Array>).getReader();
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      // Pauses shorter than stalledWriteMs, many of them: far longer than it in all.
      if (bytes % (1024 * 1024) < value.byteLength) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(bytes).toBe(60 * chunk.byteLength);
  });

  it("refuses a stalledWriteMs that is not a whole number of ms from 1 to 2147483647", async () => {
    for (const stalledWriteMs of [0, -1, 1.5, Number.NaN, 2 ** 31, "60000"])
      await expect(
        serveNode(async () => new Response("x"), { stalledWriteMs: stalledWriteMs as number }),
        String(stalledWriteMs),
      ).rejects.toThrow(/stalledWriteMs/);
  });
});

describe("a request no URL can be made of", () => {
  it("answers 400 invalid-request, without calling the handler, and the connection takes the next request", async () => {
    let called = 0;
    const server = await serve(async () => {
      called++;
      return new Response("next");
    });
    for (const host of ["a b", "user@x", "x:y"]) {
      const bad = `GET /runs HTTP/1.1\r\nhost: ${host}\r\n\r\n`;
      expect(await onOneConnection(server.url, [bad, next], 2)).toEqual({
        statuses: [400, 200],
        ended: undefined,
      });
    }
    expect(called).toBe(3);
  });
});

describe("a method the Fetch API has no Request for", () => {
  it("answers TRACE and CONNECT 501 not-implemented in the JSON error shape, without calling the handler", async () => {
    let called = 0;
    const server = await serve(async () => {
      called++;
      return new Response("x");
    });
    for (const request of ["TRACE /runs", "CONNECT x:1"]) {
      const answer = await halfClosed(server.url, `${request} HTTP/1.1\r\nhost: x\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 501 Not Implemented\r\n/);
      expect(answer).toContain('"code":"not-implemented"');
    }
    expect(called).toBe(0);
  });
});

describe("a request target in absolute form", () => {
  it("is the request's URL, as HTTP/1.1 has servers take it", async () => {
    const server = await serve(async (request) => new Response(new URL(request.url).pathname));
    const { host } = new URL(server.url);
    const response = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
      let received = "";
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString();
      });
      socket.on("end", () => resolve(received));
      socket.write(
        `GET http://${host}/runs/r1/events?after=2 HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`,
      );
    });
    expect(response.startsWith("HTTP/1.1 200")).toBe(true);
    expect(response).toContain("\r\n/runs/r1/events\r\n");
  });
});

describe("a response Node cannot send", () => {
  it("is a 500 internal, logged, and its body cancelled: never an unhandled rejection or a client left waiting", async () => {
    let cancelled = 0;
    const body = () =>
      new ReadableStream({
        cancel() {
          cancelled++;
        },
      });
    const responses = [
      () => Response.error(), // status 0
      () => new Response(body(), { headers: { "x-a": "a\u0001b" } }),
    ];
    const logged: string[] = [];
    const logger = { ...silentLogger, error: (_: unknown, message: string) => void logged.push(message) };
    for (const make of responses) {
      const server = await serveNode(async () => make(), { logger });
      servers.push(server);
      const response = await fetch(`${server.url}/x`);
      expect([response.status, await response.json()]).toEqual([
        500,
        { error: { code: "internal", message: "The server failed." } },
      ]);
    }
    expect(cancelled).toBe(1);
    expect(logged).toEqual([
      "agent-core http: the response was refused",
      "agent-core http: the response was refused",
    ]);
  });
});

/** Writes `request` on a new connection, half-closes it, and reads the whole answer. */
async function halfClosed(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = "";
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString("latin1");
  });
  await once(socket, "connect");
  socket.end(request);
  await once(socket, "close");
  return received;
}

describe("a request Node's parser refuses", () => {
  it("answers 400 malformed-request in the JSON error shape, for a body cut off or malformed chunks", async () => {
    const server = await serve(async (request) => new Response(await request.text()));
    const cutOff = `${postHead(100)}{"prompt":"h`;
    const badChunks = `POST /runs HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`;
    for (const request of [cutOff, badChunks]) {
      const answer = await halfClosed(server.url, request);
      const [head, body] = answer.split("\r\n\r\n") as [string, string];
      expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(head.toLowerCase()).toContain("content-type: application/json");
      expect(JSON.parse(body)).toEqual({
        error: { code: "malformed-request", message: expect.stringContaining("not valid HTTP") },
      });
    }
  });

  it("answers headers past Node's limit 431 headers-too-large, in the same shape", async () => {
    const server = await serve(async () => new Response("x"));
    const answer = await halfClosed(
      server.url,
      `GET / HTTP/1.1\r\nhost: x\r\nx-big: ${"y".repeat(20_000)}\r\n\r\n`,
    );
    const [head, body] = answer.split("\r\n\r\n") as [string, string];
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(body).error.code).toBe("headers-too-large");
  });

  it("writes nothing into a response already begun: the connection is only closed", async () => {
    const begun = new TextEncoder().encode("begun");
    const server = await serve(
      async () => new Response(new ReadableStream({ start: (controller) => controller.enqueue(begun) })),
    );
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
      // The first response is under way: now a request the parser refuses, on the same connection.
      if (received.includes("begun")) socket.end("GET /x HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n");
    });
    await once(socket, "connect");
    socket.write(next);
    await once(socket, "close");
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(received.match(/HTTP\/1\.1/g)).toHaveLength(1);
  });
});
