/**
 * 1,000 concurrent streamed runs against one @agent-core/http server on loopback, each with a
 * client tool call answered over HTTP (stream → `tool_call` with a hook token → POST the result →
 * the rest of the run), against the same runs in process (listeners + `submitToolResult`), in one
 * process, alternating. Every stream is checked: seq 0..n once each, `agent_end` last, completed.
 * Reports wall time per batch, runs/s and events/s, the HTTP/in-process ratio, and the peak RSS
 * growth during a batch.
 * Run: `pnpm bench:http`. Options: BENCH_HTTP_RUNS (default 1000), BENCH_HTTP_ROUNDS (default 5).
 */
import "@agent-core/agentic";
import { Agent, type AgentEvent, defineTool } from "@agent-core/core";
import { createAgentServer, serveNode } from "@agent-core/http";
import { script, scriptedModel } from "@agent-core/testing";
import { z } from "zod";
import { benchOption } from "./options.js";

const runs = benchOption("BENCH_HTTP_RUNS", 1000);
const rounds = benchOption("BENCH_HTTP_ROUNDS", 5);

const readPage = defineTool({
  name: "read_page",
  description: "Reads the page",
  inputSchema: z.object({ selector: z.string() }),
  execution: "client",
});

const agentConfig = () => ({
  provider: scriptedModel([
    [script.toolCall("read_page", { selector: "h1" })],
    [script.text("The ", "title ", "is ", "Hello", ".")],
  ]),
  tools: [readPage],
});

function check(events: readonly { type: string; seq?: number; stopReason?: string }[]): number {
  const seqs = events.filter((event) => event.type !== "heartbeat").map((event) => event.seq);
  seqs.forEach((seq, index) => {
    if (seq !== index) throw new Error(`event ${index} has seq ${seq}`);
  });
  const last = events.at(-1);
  if (last?.type !== "agent_end" || last.stopReason !== "completed")
    throw new Error(`run ended with ${JSON.stringify(last)}`);
  return seqs.length;
}

async function inProcessBatch(): Promise<number> {
  let total = 0;
  await Promise.all(
    Array.from({ length: runs }, async () => {
      const agent = new Agent(agentConfig());
      const events: AgentEvent[] = [];
      agent.on("*", (event) => {
        events.push(event);
        if (event.type === "tool_call" && event.execution === "client")
          queueMicrotask(() => agent.submitToolResult(event.toolCallId, { result: "Hello" }));
      });
      await agent.prompt("What is the title?").result();
      total += check(events);
    }),
  );
  return total;
}

async function httpBatch(url: string): Promise<number> {
  let total = 0;
  await Promise.all(
    Array.from({ length: runs }, async () => {
      const response = await fetch(`${url}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-user": "bench" },
        body: JSON.stringify({ prompt: "What is the title?" }),
      });
      if (response.status !== 200 || response.body === null) throw new Error(`status ${response.status}`);
      const events: { type: string; seq?: number; runId?: string }[] = [];
      let buffer = "";
      const posts: Promise<unknown>[] = [];
      for await (const chunk of response.body.pipeThrough(new TextDecoderStream())) {
        buffer += chunk;
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const event = JSON.parse(buffer.slice(0, newline));
          buffer = buffer.slice(newline + 1);
          events.push(event);
          if (event.type === "tool_call" && event.hookToken)
            posts.push(
              fetch(`${url}/runs/${event.runId}/tool-results`, {
                method: "POST",
                headers: { "content-type": "application/json", "x-user": "bench" },
                body: JSON.stringify({
                  toolCallId: event.toolCallId,
                  token: event.hookToken,
                  result: "Hello",
                }),
              }).then((posted) => {
                if (posted.status !== 204) throw new Error(`tool result: status ${posted.status}`);
              }),
            );
          newline = buffer.indexOf("\n");
        }
      }
      await Promise.all(posts);
      total += check(events);
    }),
  );
  return total;
}

/** Runs `batch`, sampling RSS every 10 ms: wall ms, events, and the peak RSS growth in MB. */
async function measure(batch: () => Promise<number>): Promise<{ ms: number; events: number; rssMb: number }> {
  const startRss = process.memoryUsage.rss();
  let peak = startRss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 10);
  const started = performance.now();
  const events = await batch();
  const ms = performance.now() - started;
  clearInterval(sampler);
  return { ms, events, rssMb: (peak - startRss) / 2 ** 20 };
}

async function main(): Promise<void> {
  const server = createAgentServer({
    agent: () => new Agent(agentConfig()),
    authorize: (request) => ({ userId: request.headers.get("x-user") ?? "anonymous" }),
    hookSecret: "bench-secret-bench-secret-bench-secret",
    rateLimits: { start: false, callback: false },
    maxRuns: runs * 2,
    retainEndedMs: 0,
  });
  const node = await serveNode(server.fetch);
  // Warm-up: one small batch each.
  await httpBatch(node.url);
  await inProcessBatch();
  const samples: { http: Awaited<ReturnType<typeof measure>>; local: Awaited<ReturnType<typeof measure>> }[] =
    [];
  for (let round = 0; round < rounds; round++) {
    globalThis.gc?.();
    const http = await measure(() => httpBatch(node.url));
    globalThis.gc?.();
    const local = await measure(inProcessBatch);
    samples.push({ http, local });
  }
  await server.close();
  await node.close();
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const httpMs = median(samples.map((sample) => sample.http.ms));
  const localMs = median(samples.map((sample) => sample.local.ms));
  const events = samples[0]?.http.events ?? 0;
  console.log(`${runs} concurrent runs, each: a client tool call answered over HTTP, then 5 text chunks`);
  console.log(`events per batch: ${events} (every stream checked: seq gapless, agent_end last, completed)`);
  console.log(
    `HTTP (NDJSON on loopback): median ${httpMs.toFixed(0)} ms per batch, ${((runs / httpMs) * 1000).toFixed(0)} runs/s, ${((events / httpMs) * 1000).toFixed(0)} events/s`,
  );
  console.log(
    `in process:               median ${localMs.toFixed(0)} ms per batch, ${((runs / localMs) * 1000).toFixed(0)} runs/s`,
  );
  console.log(`ratio HTTP / in process: ${(httpMs / localMs).toFixed(2)}`);
  console.log(
    `peak RSS growth per batch: HTTP median ${median(samples.map((s) => s.http.rssMb)).toFixed(0)} MB, in process ${median(samples.map((s) => s.local.rssMb)).toFixed(0)} MB`,
  );
}

await main();
