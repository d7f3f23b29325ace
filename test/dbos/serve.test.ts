import { type ChildProcess, spawn } from "node:child_process";
import type { AgentEvent } from "@agent-core/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// `agent-core serve --database-url`: the page server with durable runs. A run waits for a page
// tool; the process dies (SIGKILL) and starts again; the new process serves the run's events
// from the database and takes the tool's result, and the run goes on to its answer.

let postgres: ThrowawayPostgres;
let databaseUrl: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = postgres.url("agent_core_serve");
  await postgres.createDatabase("agent_core_serve");
}, 60_000);

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  postgres?.stop();
});

/** `agent-core serve --database-url …` from the sources; resolves with its URL and process. */
function serve(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--conditions=@agent-core/source",
      "packages/cli/src/bin.ts",
      "serve",
      "--port",
      "0",
      "--database-url",
      databaseUrl,
      "--worker-id",
      "serve-1",
    ],
    {
      env: {
        ...process.env,
        AGENT_CORE_HOOK_SECRET: "a secret every serve process shares, 32+",
        AGENT_CORE_DEMO_DELAY_MS: "0",
        OPENAI_API_KEY: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  children.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    let stdout = "";
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
      const url = /open (http:\/\/\S+?)\/ in a browser/.exec(stdout)?.[1];
      if (url) {
        expect(stdout).toContain('durable runs as worker "serve-1"');
        resolve({ url, child });
      }
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

async function events(response: Response): Promise<AgentEvent[]> {
  const lines = (await response.text()).split("\n").filter((line) => line !== "");
  return lines.map((line) => JSON.parse(line)).filter((event) => event.type !== "heartbeat");
}

describe("agent-core serve --database-url", () => {
  it("keeps a run across a crash of the process: its events, its waiting tool call, its answer", async () => {
    const first = await serve();
    const started = await fetch(`${first.url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "How many words are on the page?" }),
    });
    const runId = started.headers.get("x-run-id") as string;
    const before = await events(started);
    const end = before.at(-1) as Extract<AgentEvent, { type: "agent_end" }> & {
      pendingClientTools: { toolCallId: string; hookToken: string }[];
    };
    expect(end).toMatchObject({ type: "agent_end", stopReason: "awaiting_client_tool" });
    const [call] = end.pendingClientTools;
    expect(call).toMatchObject({ toolName: "read_page", args: { selector: "main" } });

    first.child.kill("SIGKILL");
    const second = await serve();
    // The new process serves the run from the database, as it was.
    expect(await events(await fetch(`${second.url}/api/runs/${runId}/events`))).toEqual(before);
    const answered = await fetch(`${second.url}/api/runs/${runId}/tool-results`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ toolCallId: call?.toolCallId, token: call?.hookToken, result: "one two three" }),
    });
    expect(answered.status).toBe(202);
    const { runId: resumedId } = await answered.json();
    const after = await events(await fetch(`${second.url}/api/runs/${resumedId}/events`));
    expect(after.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
    const text = after.flatMap((event) => (event.type === "text_delta" ? [event.text] : [])).join("");
    expect(text).toContain("The page has 3 words");
  }, 90_000);
});
