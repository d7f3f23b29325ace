import { once } from "node:events";
import { connect } from "node:net";
import type { AgentEvent } from "@agent-core/core";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { describe, expect, it } from "vitest";
import {
  agentEvents,
  headers,
  NdjsonReader,
  ndjsonEvents,
  ofType,
  post,
  readPage,
  startServer,
} from "./harness.js";

// A client that goes away, comes back, or reads slowly.

const waitsForClient = () => ({
  provider: scriptedModel([
    [script.toolCall("read_page", { selector: "h1" }, { id: "c1" })],
    [script.text("done")],
  ]),
  tools: [readPage],
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("re-attaching", () => {
  it("gives exactly the events after ?after= or Last-Event-ID, then the live ones", async () => {
    const { url } = await startServer(waitsForClient);
    const first = new NdjsonReader(await post(`${url}/runs`, { prompt: "go", outliveStream: true }));
    const call = await first.until(ofType("tool_call"));
    await first.cancel();
    const seq = call.seq as number;
    const byQuery = new NdjsonReader(
      await fetch(`${url}/runs/${call.runId}/events?after=1`, { headers: headers() }),
    );
    const byHeader = await fetch(`${url}/runs/${call.runId}/events`, {
      headers: { ...headers(), "last-event-id": String(seq), accept: "text/event-stream" },
    });
    expect((await byQuery.until(ofType("tool_call"))).seq).toBe(seq);
    expect(byQuery.seen.map((event) => event.seq)).toEqual(Array.from({ length: seq - 1 }, (_, i) => i + 2));
    await post(`${url}/runs/${call.runId}/tool-results`, {
      toolCallId: "c1",
      token: call.hookToken,
      result: "T",
    });
    await byQuery.rest();
    const all = agentEvents([...first.seen.filter((event) => (event.seq as number) <= 1), ...byQuery.seen]);
    assertEventProtocol(all);
    const sse = (await byHeader.text()).split("\n\n").filter((frame) => frame.startsWith("id: "));
    expect(sse.map((frame) => Number(frame.split("\n")[0]?.slice(4)))).toEqual(
      all.filter((event) => event.seq > seq).map((event) => event.seq),
    );
  });

  it("re-attaches to an ended run for its whole log, and refuses a seq it never had", async () => {
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.text("hi")]]) }));
    const text = await (await post(`${url}/runs`, { prompt: "go" })).text();
    const events = text
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    const runId = events[0].runId;
    const again = await (await fetch(`${url}/runs/${runId}/events`, { headers: headers() })).text();
    expect(again).toBe(text);
    const last = events.at(-1).seq;
    expect(
      await (await fetch(`${url}/runs/${runId}/events?after=${last}`, { headers: headers() })).text(),
    ).toBe("");
    const beyond = await fetch(`${url}/runs/${runId}/events?after=${last + 5}`, { headers: headers() });
    expect([beyond.status, (await beyond.json()).error.code]).toEqual([416, "after-out-of-range"]);
    const bad = await fetch(`${url}/runs/${runId}/events?after=abc`, { headers: headers() });
    expect([bad.status, (await bad.json()).error.code]).toEqual([400, "invalid-after"]);
    const stranger = await fetch(`${url}/runs/${runId}/events`, { headers: headers("mallory") });
    expect(stranger.status).toBe(404);
  });

  it("names a seq beyond 2^53-1 in its 416 as the client sent it, not rounded", async () => {
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.text("hi")]]) }));
    const end = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text()).at(-1) as AgentEvent;
    // 9007199254740993 is 2^53 + 1: as a number it would read 9007199254740992.
    const cases = [
      ["?after=9007199254740993", {}, "9007199254740993"],
      ["", { "last-event-id": "9007199254740993" }, "9007199254740993"],
      ["?after=9007199254740992", { "last-event-id": "9007199254740993" }, "9007199254740993"],
      ["?after=123456789012345678901234567890", {}, "123456789012345678901234567890"],
    ] as const;
    for (const [query, extra, sent] of cases) {
      const beyond = await fetch(`${url}/runs/${end.runId}/events${query}`, {
        headers: headers("alice", extra),
      });
      const { error } = await beyond.json();
      expect([beyond.status, error.code, error.message]).toEqual([
        416,
        "after-out-of-range",
        `The run has no event ${sent} yet (its last is ${end.seq}).`,
      ]);
    }
  });

  it("answers 204 to a re-attach after an ended run's last event, so that an EventSource stops reconnecting", async () => {
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.text("hi")]]) }));
    const text = await (await post(`${url}/runs`, { prompt: "go" })).text();
    const end = ndjsonEvents(text).at(-1) as AgentEvent;
    expect(end.type).toBe("agent_end");
    // What an EventSource sends when the stream it read to agent_end closes.
    const sse = { accept: "text/event-stream", "last-event-id": String(end.seq) };
    for (const extra of [sse, { "last-event-id": String(end.seq) }]) {
      const done = await fetch(`${url}/runs/${end.runId}/events`, { headers: headers("alice", extra) });
      expect([done.status, done.headers.get("x-run-id"), await done.text()]).toEqual([204, end.runId, ""]);
    }
    const last = await fetch(`${url}/runs/${end.runId}/events?after=${end.seq - 1}`, {
      headers: headers("alice", { accept: "text/event-stream" }),
    });
    expect([last.status, await last.text()]).toEqual([
      200,
      `id: ${end.seq}\nevent: agent_end\ndata: ${text.trimEnd().split("\n").at(-1)}\n\n`,
    ]);
  });

  it("takes a seq only in decimal digits: anything else, even empty, is 400 invalid-after, never a silent skip", async () => {
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.text("a", "b")]]) }));
    const [start] = ndjsonEvents(await (await post(`${url}/runs`, { prompt: "go" })).text());
    const events = `${url}/runs/${start?.runId}/events`;
    const refused: [string, Record<string, string>][] = [
      ["?after=", {}],
      ["?after=%20", {}],
      ["?after=0x2", {}],
      ["?after=1e0", {}],
      ["?after=01", {}],
      ["?after=017", {}],
      ["?after=-1", {}],
      ["?after=+1", {}],
      ["?after=1.0", {}],
      ["", { "last-event-id": "" }],
      ["", { "last-event-id": "0x2" }],
      // ?after= is read first, even when Last-Event-ID is good.
      ["?after=", { "last-event-id": "1" }],
    ];
    for (const [query, extra] of refused) {
      const response = await fetch(`${events}${query}`, { headers: headers("alice", extra) });
      const answer = { query, extra, status: response.status, body: await response.text() };
      expect(answer).toEqual({ query, extra, status: 400, body: expect.stringContaining('"invalid-after"') });
    }
    const seqs = async (query: string, extra: Record<string, string> = {}) =>
      ndjsonEvents(await (await fetch(`${events}${query}`, { headers: headers("alice", extra) })).text()).map(
        (event) => event.seq,
      );
    expect((await seqs("")).slice(0, 2)).toEqual([0, 1]);
    expect((await seqs("?after=0"))[0]).toBe(1);
    expect((await seqs("", { "last-event-id": "2" }))[0]).toBe(3);
  });

  it("aborts the run when its client goes away and does not come back within the grace period", async () => {
    const { url } = await startServer(waitsForClient, { detachGraceMs: 30 });
    const reader = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await reader.until(ofType("tool_call"));
    await reader.cancel();
    await sleep(150);
    const log = await (await fetch(`${url}/runs/${call.runId}/events`, { headers: headers() })).text();
    expect(JSON.parse(log.trimEnd().split("\n").at(-1) as string)).toMatchObject({
      type: "agent_end",
      stopReason: "aborted",
    });
  });

  it("aborts the run when its client went away while the run was being started, even if its stream is never cancelled", async () => {
    // An adapter that drops the response of an aborted request without cancelling its body.
    const { server } = await startServer(waitsForClient, { detachGraceMs: 30 });
    const gone = new AbortController();
    const request = new Request("http://localhost/runs", {
      method: "POST",
      headers: headers(),
      body: JSON.stringify({ prompt: "go" }),
      signal: gone.signal,
    });
    const started = server.fetch(request);
    gone.abort();
    const runId = (await started).headers.get("x-run-id") as string;
    await sleep(150);
    const log = await server.fetch(
      new Request(`http://localhost/runs/${runId}/events`, { headers: headers() }),
    );
    const text = await Promise.race([log.text(), sleep(2_000).then(() => '{"type":"still running"}')]);
    expect(JSON.parse(text.trimEnd().split("\n").at(-1) as string)).toMatchObject({
      type: "agent_end",
      stopReason: "aborted",
    });
  });

  it("keeps the run when the client comes back within the grace period: nothing lost, nothing twice, the tool answered once", async () => {
    const { url } = await startServer(waitsForClient, { detachGraceMs: 2_000 });
    const first = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const call = await first.until(ofType("tool_call"));
    await first.cancel();
    await sleep(50);
    const second = new NdjsonReader(
      await fetch(`${url}/runs/${call.runId}/events?after=${call.seq}`, { headers: headers() }),
    );
    const body = { toolCallId: "c1", token: call.hookToken, result: "T" };
    // The client retries its post after the drop: the run takes it once.
    expect((await post(`${url}/runs/${call.runId}/tool-results`, body)).status).toBe(204);
    expect((await post(`${url}/runs/${call.runId}/tool-results`, body)).status).toBe(204);
    const events = agentEvents([...first.seen, ...(await second.rest())]);
    assertEventProtocol(events);
    expect(events.filter((event) => event.type === "tool_result")).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ stopReason: "completed" });
  });

  it("lets a run started with outliveStream go on with no stream at all", async () => {
    const { url } = await startServer(waitsForClient, { detachGraceMs: 0 });
    const first = new NdjsonReader(await post(`${url}/runs`, { prompt: "go", outliveStream: true }));
    const call = await first.until(ofType("tool_call"));
    await first.cancel();
    await sleep(50);
    expect(
      (
        await post(`${url}/runs/${call.runId}/tool-results`, {
          toolCallId: "c1",
          token: call.hookToken,
          result: "T",
        })
      ).status,
    ).toBe(204);
    await sleep(50);
    const log = await (await fetch(`${url}/runs/${call.runId}/events`, { headers: headers() })).text();
    expect(JSON.parse(log.trimEnd().split("\n").at(-1) as string)).toMatchObject({ stopReason: "completed" });
  });

  it("refuses a stream past maxStreamsPerRun open on the run (429 too-many-streams), and takes one again once a stream closed", async () => {
    const { url } = await startServer(waitsForClient, { maxStreamsPerRun: 2 });
    const started = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const { runId } = await started.until(ofType("tool_call"));
    const attach = () => fetch(`${url}/runs/${runId}/events`, { headers: headers() });
    const second = await attach();
    expect(second.status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const refused = await attach();
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect((await refused.json()).error).toEqual({
        code: "too-many-streams",
        message: `Run "${runId}" has 2 streams open (maxStreamsPerRun); close one first.`,
      });
    }
    await second.body?.cancel();
    // The server learns of the close from the socket: asked again until it has.
    let third = await attach();
    while (third.status === 429) {
      await third.body?.cancel();
      await sleep(10);
      third = await attach();
    }
    expect(third.status).toBe(200);
    // The refused ones never counted, and the run was never left without a stream.
    const reader = new NdjsonReader(third);
    expect((await reader.until(ofType("tool_call"))).runId).toBe(runId);
    await reader.cancel();
    await started.cancel();
  });

  it("by default keeps 16 streams open on a run, the start's included: the 16th re-attach is refused", async () => {
    const { url } = await startServer(waitsForClient);
    const started = new NdjsonReader(await post(`${url}/runs`, { prompt: "go" }));
    const { runId } = await started.until(ofType("tool_call"));
    const open: Response[] = [];
    for (let i = 0; i < 15; i++) {
      const stream = await fetch(`${url}/runs/${runId}/events`, { headers: headers() });
      expect(stream.status).toBe(200);
      open.push(stream);
    }
    const refused = await fetch(`${url}/runs/${runId}/events`, { headers: headers() });
    expect([refused.status, refused.headers.get("retry-after"), (await refused.json()).error.code]).toEqual([
      429,
      "1",
      "too-many-streams",
    ]);
    for (const stream of open) await stream.body?.cancel();
    await started.cancel();
  });

  it("answers 410 for events the bounded log no longer keeps", async () => {
    const { url } = await startServer(
      () => ({ provider: scriptedModel([[script.text(...Array.from({ length: 40 }, (_, i) => `w${i} `))]]) }),
      { maxEventsPerRun: 10 },
    );
    const text = await (await post(`${url}/runs`, { prompt: "go" })).text();
    const runId = JSON.parse(text.split("\n")[0] as string).runId;
    const expired = await fetch(`${url}/runs/${runId}/events?after=0`, { headers: headers() });
    expect([expired.status, (await expired.json()).error.code]).toEqual([410, "events-expired"]);
  });

  it("forgets an ended run after retainEndedMs: a re-attach then answers 404 run-not-found", async () => {
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.text("hi")]]) }), {
      retainEndedMs: 300,
    });
    const text = await (await post(`${url}/runs`, { prompt: "go" })).text();
    const runId = JSON.parse(text.split("\n")[0] as string).runId;
    const kept = await fetch(`${url}/runs/${runId}/events?after=0`, { headers: headers() });
    expect(kept.status).toBe(200);
    await kept.text();
    await sleep(600);
    const forgotten = await fetch(`${url}/runs/${runId}/events?after=0`, { headers: headers() });
    expect([forgotten.status, (await forgotten.json()).error.code]).toEqual([404, "run-not-found"]);
  });
});

describe("a slow reader", () => {
  it("gets the whole run after reading nothing for a while (the server waits for the socket, never drops)", async () => {
    const words = Array.from({ length: 1000 }, (_, i) => `${"x".repeat(200)}${i} `);
    const { url } = await startServer(() => ({ provider: scriptedModel([[script.text(...words)]]) }), {
      maxEventsPerRun: 100_000,
    });
    // A raw socket that reads nothing for a while: the server must not buffer the whole run for it.
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    await once(socket, "connect");
    const body = JSON.stringify({ prompt: "go" });
    socket.pause();
    socket.write(
      `POST /runs HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\nx-user: alice\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await sleep(300);
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    const ended = new Promise((resolve) => socket.on("end", resolve));
    socket.resume();
    await ended;
    expect(received).toBeGreaterThan(1000 * 200);
  });

  it("is handed a large event in pieces, never the run at once: a reader that stops holds no copy of the log", async () => {
    // 2 MB deltas of characters outside the BMP: the pieces cut between surrogate pairs.
    const large = "🙂".repeat(500_000);
    const { url, server } = await startServer(() => ({
      provider: scriptedModel([[script.text(large, large)]]),
    }));
    const whole = await (await post(`${url}/runs`, { prompt: "go" })).text();
    const runId = JSON.parse(whole.split("\n")[0] as string).runId;
    for (const accept of ["application/x-ndjson", "text/event-stream"]) {
      // The handler's own body, as any adapter reads it: each read is one piece the server made.
      const response = await server.fetch(
        new Request(`${url}/runs/${runId}/events`, { headers: headers("alice", { accept }) }),
      );
      const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
      const decoder = new TextDecoder("utf-8", { fatal: true });
      let text = "";
      const sizes: number[] = [];
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        sizes.push(chunk.value.byteLength);
        text += decoder.decode(chunk.value, { stream: true });
      }
      expect(Math.max(...sizes)).toBeLessThanOrEqual(256 * 1024);
      if (accept === "application/x-ndjson") expect(text).toBe(whole);
      else
        expect(
          text
            .split("\n\n")
            .filter(Boolean)
            .map((frame) => frame.split("data: ")[1]),
        ).toEqual(whole.trimEnd().split("\n"));
    }
  });

  it("never holds the run back: a reader that stops reading gets everything later, and the run ends on time", async () => {
    const { url, server } = await startServer(() => ({
      provider: scriptedModel([[script.text(...Array.from({ length: 500 }, (_, i) => `word${i} `))]]),
    }));
    const response = await post(`${url}/runs`, { prompt: "go" });
    const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    const first = await reader.read();
    const runId = JSON.parse(new TextDecoder().decode(first.value).split("\n")[0] as string).runId;
    // The run finishes while this reader reads nothing: its log is complete.
    for (let i = 0; i < 100; i++) {
      const log = await (await fetch(`${url}/runs/${runId}/events?after=0`, { headers: headers() })).text();
      if (log.includes('"agent_end"')) break;
      await sleep(20);
    }
    expect(server.runCount).toBe(1);
    let text = new TextDecoder().decode(first.value);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      text += new TextDecoder().decode(chunk.value);
    const events = ndjsonEvents(text);
    assertEventProtocol(events);
    expect(events.filter((event) => event.type === "text_delta")).toHaveLength(500);
  });
});
