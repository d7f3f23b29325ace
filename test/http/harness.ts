import "@agent-core/agentic";
import { Agent, type AgentConfig, type AgentEvent, defineTool, parseAgentEvent } from "@agent-core/core";
import {
  type AgentServer,
  type AgentServerOptions,
  createAgentServer,
  type NodeServer,
  serveNode,
} from "@agent-core/http";
import { afterEach } from "vitest";
import { z } from "zod";

// What the HTTP tests share: a server on a real loopback port, and a reader of its NDJSON streams
// written from the wire format alone (the client package is tested against the same server elsewhere).

export const SECRET = "test-secret-of-at-least-32-characters!";

export const readPage = defineTool({
  name: "read_page",
  description: "Reads the text of an element of the user's page",
  inputSchema: z.object({ selector: z.string() }),
  execution: "client",
});

export const addNumbers = defineTool({
  name: "add",
  description: "Adds a and b",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

export interface Harness {
  url: string;
  server: AgentServer;
  node: NodeServer;
}

const open: Harness[] = [];
afterEach(async () => {
  for (const harness of open.splice(0)) {
    await harness.server.close();
    await harness.node.close();
  }
});

/** A server whose agents are made by `agent` (default: a new Agent of `config` per conversation). */
export async function startServer(
  config: () => AgentConfig,
  options: Partial<AgentServerOptions> = {},
): Promise<Harness> {
  const server = createAgentServer({
    agent: () => new Agent(config()),
    authorize: (request) => {
      const user = request.headers.get("x-user");
      if (user === null) return undefined;
      const documents = request.headers.get("x-documents");
      return documents === null ? { userId: user } : { userId: user, documents: documents.split(",") };
    },
    hookSecret: SECRET,
    ...options,
  });
  const node = await serveNode(server.fetch);
  const harness = { url: node.url, server, node };
  open.push(harness);
  return harness;
}

export function headers(user = "alice", extra: Record<string, string> = {}): Record<string, string> {
  return { "content-type": "application/json", "x-user": user, ...extra };
}

export function post(url: string, body: unknown, user = "alice", extra: Record<string, string> = {}) {
  return fetch(url, { method: "POST", headers: headers(user, extra), body: JSON.stringify(body) });
}

/** Reads an NDJSON event stream line by line; `next` resolves with the next parsed object. */
export class NdjsonReader {
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  readonly seen: Record<string, unknown>[] = [];

  constructor(response: Response) {
    if (response.body === null) throw new Error(`no body (status ${response.status})`);
    this.#reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  }

  async next(): Promise<Record<string, unknown> | undefined> {
    for (;;) {
      const newline = this.#buffer.indexOf("\n");
      if (newline >= 0) {
        const line = this.#buffer.slice(0, newline);
        this.#buffer = this.#buffer.slice(newline + 1);
        const event = JSON.parse(line) as Record<string, unknown>;
        this.seen.push(event);
        return event;
      }
      const { done, value } = await this.#reader.read();
      if (done) return undefined;
      this.#buffer += value;
    }
  }

  /** Reads until an event matches (returned), or the stream ends (throws). */
  async until(match: (event: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    for (;;) {
      const event = await this.next();
      if (event === undefined) throw new Error(`stream ended; saw ${this.seen.map((e) => e.type).join(",")}`);
      if (match(event)) return event;
    }
  }

  /** Every remaining event, until the stream ends. */
  async rest(): Promise<Record<string, unknown>[]> {
    const events: Record<string, unknown>[] = [];
    for (let event = await this.next(); event !== undefined; event = await this.next()) events.push(event);
    return events;
  }

  cancel(): Promise<void> {
    return this.#reader.cancel();
  }
}

/** The run's events (heartbeats left out), each checked against its schema. */
export function agentEvents(events: readonly Record<string, unknown>[]): AgentEvent[] {
  return events.filter((event) => event.type !== "heartbeat").map((event) => parseAgentEvent(event));
}

/** The events of a whole NDJSON response body, each checked against its schema. */
export function ndjsonEvents(text: string): AgentEvent[] {
  return agentEvents(
    text
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line)),
  );
}

export const ofType = (type: string) => (event: Record<string, unknown>) => event.type === type;
