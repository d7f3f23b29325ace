import { DurableRunClient, type DurableRuntime, RunEndedError } from "@agent-core/dbos";
import { planExecute } from "@agent-core/plan-execute";
import { type ScriptPart, script, scriptedModel } from "@agent-core/testing";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { Agent, type AgentMessage, defineTool, InvalidConfigError, type Orchestrator } from "agent-core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { DurableWorker, hang } from "./harness.js";
import { untilLockWaiters } from "./lock-waiters.js";
import { untilEvent } from "./until-event.js";

// Steering and follow-ups reach a durable run as DBOS messages, wherever it executes; the run's
// clock is recorded, so a replay of the workflow makes the very same history, timestamps included.

const worker = new DurableWorker();
let runtime: DurableRuntime;
let databaseUrl: string;

/**
 * The `wait` tool holds its run until the test calls `release()`, whether the tool started before
 * or after (its `tool_call` is stored before it runs); `hold()` arms it for the next run.
 */
let released = false;
let wake: () => void = () => {};
const hold = () => {
  released = false;
};
const release = () => {
  released = true;
  wake();
};
const wait = defineTool({
  name: "wait",
  description: "Waits for the test",
  inputSchema: z.object({}),
  execute: () =>
    released
      ? "waited"
      : new Promise<string>((resolve) => {
          wake = () => resolve("waited");
        }),
});

/**
 * Calls `wait` first; then answers what it last heard: a user message is echoed, a tool result
 * acknowledged. The last reply streams slowly when the prompt asks for it ("slow").
 */
function echoModel(tool = "wait") {
  const reply = (options: { prompt: { role: string; content: unknown }[] }): ScriptPart[] => {
    const prompt = options.prompt;
    const tools = (options as { tools?: unknown[] }).tools ?? [];
    if (tools.length > 0 && !prompt.some((message) => message.role === "assistant"))
      return [script.toolCall(tool, {}, { id: "w1" })];
    const last = prompt.at(-1);
    if (last?.role !== "user") {
      const slow = JSON.stringify(prompt[1]?.content).includes("slow");
      return slow ? [script.delay(400), script.text("tool done")] : [script.text("tool done")];
    }
    const content = last.content as { type: string; text: string }[];
    return [script.text(`heard: ${content.map((part) => part.text).join("")}`)];
  };
  return scriptedModel(Array.from({ length: 10 }, () => reply));
}

/** Answers once (the echo model echoes the prompt), then takes 400 ms more, asking for nothing. */
const lingering: Orchestrator = {
  name: "answer-then-linger",
  version: "1",
  async run(ctx) {
    await ctx.decide();
    await new Promise((resolve) => setTimeout(resolve, 400));
  },
};

beforeAll(async () => {
  ({ runtime, databaseUrl } = await worker.start("agent_core_messages", {
    agents: {
      echo: () => new Agent({ provider: echoModel(), tools: [wait] }),
      lingering: () => new Agent({ provider: echoModel(), orchestrator: lingering }),
      // Plans one `wait` step; a plan made after steering has no steps.
      planner: () =>
        new Agent({
          provider: scriptedModel(
            Array.from(
              { length: 10 },
              () => (options: { prompt: unknown[]; responseFormat?: { type: string } }) => {
                if (options.responseFormat?.type !== "json") return [script.text("answered")];
                const steered = JSON.stringify(options.prompt).includes("Stop waiting.");
                const steps = steered ? [] : [{ id: "w", tool: "wait", args: {} }];
                return [script.text(JSON.stringify({ steps }))];
              },
            ),
          ),
          tools: [wait],
          orchestrator: planExecute(),
        }),
      // Its model call after the tool fails; a later run gets the echo model.
      failing: () => {
        const echo = echoModel();
        let calls = 0;
        const provider: LanguageModelV4 = {
          specificationVersion: "v4",
          provider: "test",
          modelId: "failing-once",
          supportedUrls: {},
          doGenerate: (options) => echo.doGenerate(options),
          doStream: (options) =>
            ++calls === 2 ? Promise.reject(new Error("the provider is down")) : echo.doStream(options),
        };
        return new Agent({ provider, tools: [wait] });
      },
      // Runs out of its time while its tool hangs (until the timeout aborts it); the run that
      // continues the workflow has as long, enough for its steps on a busy host.
      short: () => new Agent({ provider: echoModel("hang"), tools: [hang], timeouts: { totalMs: 1500 } }),
      hanging: () =>
        new Agent({
          provider: scriptedModel([[script.toolCall("hang", {}, { id: "h1" })], [script.text("never")]]),
          tools: [hang],
        }),
    },
  }));
}, 60_000);

afterAll(() => worker.stop());

/** Until the run has stored an event of that type. */
const untilStored = (runId: string, type: string) => untilEvent(runtime, runId, type, 20_000);

const userTexts = (messages: AgentMessage[]) =>
  messages.flatMap((message) =>
    message.role === "user" ? [typeof message.content === "string" ? message.content : "(parts)"] : [],
  );

describe("steering and follow-ups of a durable run", () => {
  it("a steering message sent while a tool runs is delivered after the next model call", async () => {
    hold();
    const run = await runtime.start("echo", "Wait, then answer.", { runId: "steered" });
    await untilStored("steered", "tool_call");
    await runtime.steer("steered", "Also mind the budget.");
    release();
    const result = await run.result();
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("heard: Also mind the budget.");
    expect(userTexts(result.messages)).toEqual(["Wait, then answer.", "Also mind the budget."]);
    const roles = result.messages.map((message) => message.role);
    expect(roles).toEqual(["user", "assistant", "toolResult", "assistant", "user", "assistant"]);
    // It entered the history with the time it was sent, and the log says it was delivered.
    const events = await runtime.events("steered");
    expect(events.some((event) => event.type === "steering_applied")).toBe(true);
  });

  it("a plan-execute run steered while a step runs: the plan and its answer go on, then the steering revises the plan (docs/plan-execute.md)", async () => {
    hold();
    const run = await runtime.start("planner", "Wait, then answer.", { runId: "steered-plan" });
    await untilStored("steered-plan", "tool_call");
    await runtime.steer("steered-plan", "Stop waiting.");
    release();
    const result = await run.result();
    expect(result.stopReason).toBe("completed");
    expect(userTexts(result.messages)).toEqual(["Wait, then answer.", "Stop waiting."]);
    const types = (await runtime.events("steered-plan"))
      .map((event) => event.type)
      .filter((type) => /^(plan_|steering_applied|text_delta|turn_)/.test(type));
    expect(types.filter((type, index) => type !== "text_delta" || types[index - 1] !== "text_delta")).toEqual(
      [
        "turn_start",
        "plan_created",
        "plan_step_start",
        "plan_step_end",
        "text_delta",
        "steering_applied",
        "plan_created",
        "text_delta",
        "turn_end",
      ],
    );
  });

  it("a follow-up continues the run once it would stop", async () => {
    hold();
    const run = await runtime.start("echo", "Wait, then answer.", { runId: "followed" });
    await untilStored("followed", "tool_call");
    await runtime.followUp("followed", "And one more thing.");
    release();
    const result = await run.result();
    expect(result.text).toBe("heard: And one more thing.");
    expect(userTexts(result.messages)).toEqual(["Wait, then answer.", "And one more thing."]);
    expect(result.runIds).toEqual(["followed"]);
  });

  it("a follow-up sent while the last reply streams is taken by the same run", async () => {
    hold();
    const run = await runtime.start("echo", "Wait, then answer slow.", { runId: "streaming" });
    await untilStored("streaming", "tool_call");
    release();
    // The last reply streams for 400 ms: the message arrives while it does.
    await untilStored("streaming", "tool_result");
    await new Promise((resolve) => setTimeout(resolve, 150));
    await runtime.followUp("streaming", "Late news.");
    const result = await run.result();
    expect(result.runIds).toEqual(["streaming"]);
    expect(result.text).toBe("heard: Late news.");
    expect(userTexts(result.messages)).toEqual(["Wait, then answer slow.", "Late news."]);
  });

  it("a message the run did not use, or that came after its last model call, continues the workflow in a run of its own", async () => {
    // Its orchestrator answers once and lingers, asking for no follow-up: the message arrives then.
    const run = await runtime.start("lingering", "Hello.", { runId: "late" });
    await untilStored("late", "text_delta");
    await runtime.followUp("late", "Late news.");
    const result = await run.result();
    expect(result.runIds).toEqual(["late", "late.2"]);
    expect(result.runId).toBe("late.2");
    expect(result.text).toBe("heard: Late news.");
    expect(userTexts(result.messages)).toEqual(["Hello.", "Late news."]);
    const continued = await runtime.events("late.2");
    expect(continued.at(-1)).toMatchObject({ type: "agent_end", stopReason: "completed" });
  });

  for (const queue of ["steer", "followUp"] as const)
    it(`a message ${queue}() took is read also when the run then fails: it continues the workflow in a run of its own`, async () => {
      hold();
      const runId = `failed-${queue}`;
      const run = await runtime.start("failing", "Wait, then answer.", { runId });
      await untilStored(runId, "tool_call");
      await runtime[queue](runId, "Try again.");
      release();
      const result = await run.result();
      expect((await runtime.events(runId)).at(-1)).toMatchObject({ type: "agent_end", stopReason: "error" });
      expect(result.runIds).toEqual([runId, `${runId}.2`]);
      expect(result.stopReason).toBe("completed");
      expect(result.text).toBe("heard: Try again.");
      expect(userTexts(result.messages)).toEqual(["Wait, then answer.", "Try again."]);
    });

  it("a follow-up taken by a run that then runs out of time continues the workflow in a run of its own, with time of its own", async () => {
    const run = await runtime.start("short", "Wait, then answer.", { runId: "timed-out" });
    await untilStored("timed-out", "tool_call");
    await runtime.followUp("timed-out", "Are you there?");
    const result = await run.result();
    expect((await runtime.events("timed-out")).at(-1)).toMatchObject({
      type: "agent_end",
      stopReason: "timeout",
    });
    expect(result.runIds).toEqual(["timed-out", "timed-out.2"]);
    expect(result.stopReason).toBe("completed");
    expect(result.text).toBe("heard: Are you there?");
    // A replay of every recorded step ends as the first execution did: the timeout stays in the
    // run it ended, and the run the follow-up continued in completes.
    const steps = (await DBOS.listWorkflowSteps("timed-out")) ?? [];
    const replay = await DBOS.forkWorkflow<typeof result>(
      "timed-out",
      Math.max(...steps.map((step) => step.functionID)) + 1,
      { newWorkflowID: "timed-out-replay" },
    );
    const replayed = await replay.getResult();
    expect([replayed.stopReason, replayed.text]).toEqual(["completed", "heard: Are you there?"]);
    expect(replayed.messages).toEqual(result.messages);
  });

  it("a follow-up that meets the workflow closing its mailbox is run or refused, never taken and left unread", async () => {
    // A lock the test holds makes the follow-up and the workflow's close meet: whichever asked
    // for it first goes first once it is let go.
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    const waiting = (count: number) => untilLockWaiters(db, count);
    const meet = async (runId: string, first: "message" | "close") => {
      await db.query("SELECT pg_advisory_lock(hashtext($1))", [`agent-core.mailbox:${runId}`]);
      const run = await runtime.start("lingering", "Hello.", { runId });
      if (first === "close") await waiting(1);
      const sent = runtime.followUp(runId, "Late news.").then(
        () => "taken",
        (error: unknown) => error,
      );
      await waiting(first === "close" ? 2 : 1);
      if (first === "message") await waiting(2);
      await db.query("SELECT pg_advisory_unlock(hashtext($1))", [`agent-core.mailbox:${runId}`]);
      return { sent: await sent, result: await run.result() };
    };
    try {
      const closedFirst = await meet("closing", "close");
      expect(closedFirst.sent).toBeInstanceOf(RunEndedError);
      expect(closedFirst.result.runIds).toEqual(["closing"]);
      expect(userTexts(closedFirst.result.messages)).toEqual(["Hello."]);

      const sentFirst = await meet("sent-while-closing", "message");
      expect(sentFirst.sent).toBe("taken");
      expect(sentFirst.result.runIds).toEqual(["sent-while-closing", "sent-while-closing.2"]);
      expect(sentFirst.result.text).toBe("heard: Late news.");
      expect(userTexts(sentFirst.result.messages)).toEqual(["Hello.", "Late news."]);
      for (const runId of ["closing", "sent-while-closing"]) {
        const { rowCount } = await db.query(
          "SELECT 1 FROM dbos.notifications WHERE destination_uuid = $1 AND NOT consumed",
          [runId],
        );
        expect(rowCount, runId).toBe(0);
      }
    } finally {
      await db.end();
    }
  });

  it("cancel() aborts the run in the worker running it: the tool's signal, agent_end aborted", async () => {
    const run = await runtime.start("hanging", "Hang.", { runId: "cancelled" });
    await untilStored("cancelled", "tool_call");
    await runtime.cancel("cancelled");
    const result = await run.result();
    expect(result.stopReason).toBe("aborted");
    const events = await runtime.events("cancelled");
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ status: "aborted" });
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "aborted" });
  });

  it("a message that is not a string is refused before it is sent, by the runtime and a client: the run goes on", async () => {
    hold();
    const run = await runtime.start("echo", "Wait, then answer.", { runId: "not-strings" });
    await untilStored("not-strings", "tool_call");
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      for (const sender of [runtime, client]) {
        await expect(sender.steer("not-strings", 5 as unknown as string)).rejects.toThrow(
          new InvalidConfigError("A steering message must be a string, got 5."),
        );
        await expect(sender.followUp("not-strings", { role: "user" } as unknown as string)).rejects.toThrow(
          new InvalidConfigError("A follow-up must be a string, got an object."),
        );
      }
    } finally {
      await client.close();
    }
    release();
    const result = await run.result();
    expect(result.stopReason).toBe("completed");
    expect(result.runIds).toEqual(["not-strings"]);
  });

  it("an ended run takes no more messages: RunEndedError, nothing sent", async () => {
    await expect(runtime.steer("steered", "Too late.")).rejects.toBeInstanceOf(RunEndedError);
    await expect(runtime.followUp("no-such-run", "Hello?")).rejects.toThrow(
      /has ended \(or does not exist\)/,
    );
  });

  it("a replay of the workflow makes the same history, timestamps and all (the clock is recorded)", async () => {
    const original = await runtime.retrieve("steered").result();
    const steps = (await DBOS.listWorkflowSteps("steered")) ?? [];
    expect(steps.map((step) => step.name)).toEqual(
      expect.arrayContaining([
        "agent-core.orchestrator",
        "agent-core.model",
        "agent-core.tool.wait",
        "DBOS.recv",
      ]),
    );
    // A copy of the workflow that replays every recorded step: no model call, no tool run, no
    // message waiting; only the records.
    const replay = await DBOS.forkWorkflow<typeof original>(
      "steered",
      Math.max(...steps.map((s) => s.functionID)) + 1,
      {
        newWorkflowID: "steered-replay",
      },
    );
    const replayed = await replay.getResult();
    expect(replayed.messages).toEqual(original.messages);
    for (const message of replayed.messages) expect(typeof message.timestamp).toBe("number");
    // The replay's events carry the same times as the original's.
    const times = (runId: string) =>
      runtime.events(runId).then((events) => events.map((event) => [event.type, event.ts]));
    expect(await times("steered-replay")).toEqual(await times("steered"));
  });
});
