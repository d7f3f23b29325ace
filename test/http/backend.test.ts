import type { AgentEvent } from "@agent-core/core";
import { type BackendRun, createAgentServer, HttpError, type RunBackend, serveNode } from "@agent-core/http";
import { expect, it } from "vitest";
import { headers, NdjsonReader, post, SECRET } from "./harness.js";

// A RunBackend of one's own, written from the members docs/http.md lists: its runs are events
// handed to the server by hand, so what the server makes of each member shows.

/** A run whose events are sent by `emit`; what the server asked of it is in `asked`. */
function handRun(runId: string, userId: string) {
  const listeners = new Set<(event: AgentEvent) => void>();
  const events: AgentEvent[] = [];
  const asked: string[] = [];
  const emit = (type: string, fields: Record<string, unknown> = {}) => {
    const event = { type, runId, seq: events.length, ts: Date.now(), ...fields } as unknown as AgentEvent;
    events.push(event);
    for (const listener of listeners) listener(event);
  };
  const run: BackendRun = {
    runId,
    owner: { userId, documentId: undefined },
    subscribe(onEvent) {
      for (const event of events) onEvent(event);
      listeners.add(onEvent);
      return { stop: () => listeners.delete(onEvent), caughtUp: Promise.resolve() };
    },
    async submitToolResult() {
      return undefined;
    },
    async steer(message) {
      asked.push(`steer ${message}`);
      throw new HttpError(409, "steering-off", "This backend takes no steering.");
    },
    async followUp(message) {
      asked.push(`followUp ${message}`);
    },
    cancel(reason) {
      asked.push(`cancel ${reason}`);
    },
  };
  return { run, emit, asked };
}

it("serves the runs of a RunBackend made of the documented members alone, and closes it", async () => {
  const made = handRun("r1", "alice");
  let closed = false;
  const backend: RunBackend = {
    async start(request, prompt) {
      made.emit("agent_start");
      made.emit("text_delta", { text: `${request.userId}: ${prompt}` });
      return made.run;
    },
    find: async () => undefined,
    runsOutliveStreams: true,
    close() {
      closed = true;
    },
  };
  const server = createAgentServer({
    backend,
    authorize: (request) => {
      const user = request.headers.get("x-user");
      return user === null ? undefined : { userId: user };
    },
    hookSecret: SECRET,
    detachGraceMs: 0,
  });
  const node = await serveNode(server.fetch);
  try {
    const started = await post(`${node.url}/runs`, { prompt: "hi" });
    expect(started.headers.get("x-run-id")).toBe("r1");
    const stream = new NdjsonReader(started);
    expect(await stream.next()).toMatchObject({ type: "agent_start", seq: 0 });
    expect(await stream.next()).toMatchObject({ type: "text_delta", text: "alice: hi", seq: 1 });
    // Its runs outlive their streams: the client going away aborts nothing.
    await stream.cancel();

    const stranger = await fetch(`${node.url}/runs/r1/events`, { headers: headers("mallory") });
    expect([stranger.status, (await stranger.json()).error.code]).toEqual([404, "run-not-found"]);
    const steered = await post(`${node.url}/runs/r1/steer`, { message: "left" });
    expect([steered.status, (await steered.json()).error.code]).toEqual([409, "steering-off"]);
    expect((await post(`${node.url}/runs/r1/follow-up`, { message: "more" })).status).toBe(202);
    expect((await post(`${node.url}/runs/r1/cancel`, {})).status).toBe(202);

    const again = new NdjsonReader(await fetch(`${node.url}/runs/r1/events?after=1`, { headers: headers() }));
    made.emit("agent_end", { stopReason: "aborted" });
    expect(await again.rest()).toEqual([expect.objectContaining({ type: "agent_end", seq: 2 })]);
    expect(made.asked).toEqual(["steer left", "followUp more", "cancel cancelled by the client"]);
  } finally {
    await server.close();
    await node.close();
  }
  expect(closed).toBe(true);
  expect(made.asked.filter((asked) => asked.startsWith("cancel"))).toHaveLength(1);
});
