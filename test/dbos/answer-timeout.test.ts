import { type DurableRunResult, type DurableRuntime, RunEndedError } from "@agent-core/dbos";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { Agent, defineTool, InvalidConfigError } from "agent-core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { approvingNotes, DurableWorker, gateTool } from "./harness.js";
import { untilLockWaiters } from "./lock-waiters.js";
import { untilEvent } from "./until-event.js";

// A durable run that waits for an answer waits `answerTimeoutMs`, counted from when it began to
// wait: what its result is when no answer comes, and what a run recovered mid-wait has left.

const ANSWER_TIMEOUT_MS = 6000;
const worker = new DurableWorker();
const notes = approvingNotes();
/**
 * An agent whose first run waits for the approval of a note (n1); the run a follow-up begins
 * settles it, opens a gate (a tool that waits until the test opens it), then waits for the approval
 * of another note (n2). `noted` lists the notes taken.
 */
const gated = (() => {
  const noted: string[] = [];
  const note = defineTool({
    name: "note",
    description: "Takes a note",
    inputSchema: z.object({}),
    needsApproval: true,
    // The key is `<runId>:<toolCallId>`.
    execute: (_, { idempotencyKey }) => {
      noted.push(idempotencyKey.split(":").at(-1) as string);
      return "noted";
    },
  });
  const { gate, reached, open } = gateTool();
  const agent = () =>
    new Agent({
      provider: scriptedModel([
        [script.toolCall("note", {}, { id: "n1" })],
        [script.toolCall("gate", {}, { id: "g1" })],
        [script.toolCall("note", {}, { id: "n2" })],
        [script.text("Noted.")],
      ]),
      tools: [note, gate],
    });
  return { agent, noted, reached, open };
})();
/** An agent that calls two notes that need approval, at once (p1, p2), then answers "Noted." */
const pair = () =>
  new Agent({
    provider: scriptedModel([
      [script.toolCall("note", {}, { id: "p1" }), script.toolCall("note", {}, { id: "p2" })],
      [script.text("Noted.")],
    ]),
    tools: [
      defineTool({
        name: "note",
        description: "Takes a note",
        inputSchema: z.object({}),
        needsApproval: true,
        execute: () => "noted",
      }),
    ],
  });
let runtime: DurableRuntime;
let databaseUrl: string;

beforeAll(async () => {
  ({ runtime, databaseUrl } = await worker.start("agent_core_answer_timeout", {
    answerTimeoutMs: ANSWER_TIMEOUT_MS,
    agents: { approving: notes.agent, gated: gated.agent, pair },
  }));
}, 60_000);

afterAll(() => worker.stop());

describe("a durable run whose wait for an answer times out", () => {
  it("ends its workflow with the run's own stop reason; the answers and messages that come later are refused", async () => {
    const run = await runtime.start("approving", "Note it.", { runId: "unanswered" });
    const began = Date.now();
    const result = await run.result();
    expect(Date.now() - began).toBeGreaterThanOrEqual(ANSWER_TIMEOUT_MS);
    expect(result.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(result).toMatchObject({
      runId: "unanswered",
      runIds: ["unanswered"],
      stopReason: "awaiting_approval",
      text: "",
    });
    const log = await runtime.events("unanswered");
    assertEventProtocol(log);
    expect(log.filter((event) => event.type === "agent_end")).toEqual([
      expect.objectContaining({ stopReason: "awaiting_approval" }),
    ]);
    await expect(
      runtime.answer("unanswered", { kind: "approval", toolCallId: "n1", approved: true }),
    ).rejects.toBeInstanceOf(RunEndedError);
    await expect(runtime.steer("unanswered", "Too late.")).rejects.toBeInstanceOf(RunEndedError);
    expect(notes.runs()).toBe(0);
  }, 60_000);

  it("reads what was sent while it waited: a follow-up continues the workflow in a run of its own, the waiting call denied", async () => {
    const run = await runtime.start("approving", "Note it.", { runId: "followed-up" });
    // Taken while the run waits (the workflow has not ended): not left unread when no answer comes.
    await untilEvent(runtime, "followed-up", "agent_end", 20_000);
    await runtime.followUp("followed-up", "Any news?");
    const result = await run.result();
    expect(result).toMatchObject({
      runId: "followed-up.2",
      runIds: ["followed-up", "followed-up.2"],
      stopReason: "completed",
      text: "Noted.",
    });
    expect(result.messages.slice(2)).toEqual([
      expect.objectContaining({ role: "toolResult", toolCallId: "n1", status: "denied" }),
      expect.objectContaining({ role: "user", content: "Any news?" }),
      expect.objectContaining({ role: "assistant" }),
    ]);
    assertEventProtocol(await runtime.events("followed-up.2"));
    expect(notes.runs()).toBe(0);
  }, 60_000);

  it("takes an answer that meets the wait's time-out, or refuses it: never one taken and left unread", async () => {
    // A lock the test holds makes the answer and the workflow's close as its wait times out meet:
    // whichever asked for it first goes first once it is let go.
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    const waiting = (count: number) => untilLockWaiters(db, count);
    const meet = async (runId: string, first: "answer" | "close") => {
      const run = await runtime.start("approving", "Note it.", { runId });
      await untilEvent(runtime, runId, "agent_end", 20_000);
      await db.query("SELECT pg_advisory_lock(hashtext($1))", [`agent-core.mailbox:${runId}`]);
      if (first === "close") await waiting(1);
      const sent = runtime.answer(runId, { kind: "approval", toolCallId: "n1", approved: true }).then(
        () => "taken",
        (error: unknown) => error,
      );
      await waiting(first === "close" ? 2 : 1);
      if (first === "answer") await waiting(2);
      await db.query("SELECT pg_advisory_unlock(hashtext($1))", [`agent-core.mailbox:${runId}`]);
      return { sent: await sent, result: await run.result() };
    };
    try {
      const closedFirst = await meet("closed-on-the-answer", "close");
      expect(closedFirst.sent).toBeInstanceOf(RunEndedError);
      expect(closedFirst.result).toMatchObject({
        runIds: ["closed-on-the-answer"],
        stopReason: "awaiting_approval",
      });
      expect(notes.runs()).toBe(0);

      const answeredFirst = await meet("answered-as-it-timed-out", "answer");
      expect(answeredFirst.sent).toBe("taken");
      expect(answeredFirst.result).toMatchObject({
        runIds: ["answered-as-it-timed-out", "answered-as-it-timed-out.2"],
        stopReason: "completed",
        text: "Noted.",
      });
      expect(notes.runs()).toBe(1);
    } finally {
      await db.end();
    }
  }, 60_000);

  it("refuses an answer to a call that a follow-up's run settled, sent while that run goes on: the next wait does not take it and drop it", async () => {
    const run = await runtime.start("gated", "Note it.", { runId: "settled-by-follow-up" });
    await untilEvent(runtime, "settled-by-follow-up", "agent_end", 20_000);
    await runtime.followUp("settled-by-follow-up", "Any news?");
    // The wait times out; the follow-up's run (.2) denies n1 as it begins, then holds at its gate.
    await gated.reached;
    const late = await runtime
      .answer("settled-by-follow-up", { kind: "approval", toolCallId: "n1", approved: true })
      .then(
        () => "taken",
        (error: unknown) => error,
      );
    expect(late).toBeInstanceOf(InvalidConfigError);
    expect((late as Error).message).toBe('Tool call "n1" was already denied.');
    gated.open();
    // The run waits for n2 now, and takes its answer.
    await untilEvent(runtime, "settled-by-follow-up.2", "agent_end", 20_000);
    await runtime.answer("settled-by-follow-up", { kind: "approval", toolCallId: "n2", approved: true });
    const result = await run.result();
    expect(result).toMatchObject({
      runIds: ["settled-by-follow-up", "settled-by-follow-up.2", "settled-by-follow-up.3"],
      stopReason: "completed",
      text: "Noted.",
    });
    expect(result.messages).toContainEqual(
      expect.objectContaining({ role: "toolResult", toolCallId: "n1", status: "denied" }),
    );
    expect(gated.noted).toEqual(["n2"]);
  }, 60_000);

  it("keeps the deadline its wait began with when an answer leaves a call waiting: the answer does not begin the wait again", async () => {
    const run = await runtime.start("pair", "Note both.", { runId: "half-answered" });
    await untilEvent(runtime, "half-answered", "agent_end", 20_000);
    // Half its wait passes before p1's answer comes.
    await new Promise((resolve) => setTimeout(resolve, ANSWER_TIMEOUT_MS / 2));
    await runtime.answer("half-answered", { kind: "approval", toolCallId: "p1", approved: true });
    // Each receive of an answer records the time it waits until (DBOS's durable sleep, its step's output).
    const deadlines = async () =>
      ((await DBOS.listWorkflowSteps("half-answered")) ?? [])
        .filter((step) => step.name === "DBOS.sleep")
        .map((step) => Number(step.output));
    for (const until = Date.now() + 20_000; (await deadlines()).length < 2; ) {
      if (Date.now() > until) throw new Error("the wait for p2 never began");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The same deadline, give or take the time DBOS takes to record it (begun again, it would be
    // half a wait later).
    const [first, second] = (await deadlines()) as [number, number];
    expect(Math.abs(second - first)).toBeLessThan(ANSWER_TIMEOUT_MS / 4);
    await runtime.answer("half-answered", { kind: "approval", toolCallId: "p2", approved: true });
    expect(await run.result()).toMatchObject({
      runIds: ["half-answered", "half-answered.2"],
      stopReason: "completed",
      text: "Noted.",
    });
  }, 60_000);

  it("takes an answer's sentAt from the future as now: the recorded clock, and the next run's time, do not jump ahead", async () => {
    const run = await runtime.start("approving", "Note it.", { runId: "sent-from-the-future" });
    await untilEvent(runtime, "sent-from-the-future", "agent_end", 20_000);
    const nextYear = Date.now() + 365 * 86_400_000;
    await runtime.answer("sent-from-the-future", {
      kind: "approval",
      toolCallId: "n1",
      approved: true,
      sentAt: nextYear,
    });
    const result = await run.result();
    expect(result.stopReason).toBe("completed");
    const now = Date.now();
    for (const message of result.messages) expect(message.timestamp).toBeLessThanOrEqual(now);
    for (const event of await runtime.events("sent-from-the-future.2"))
      expect(event.ts).toBeLessThanOrEqual(now);
  }, 60_000);

  it("recovered while it waits, waits what was left of its time, not all of it again", async () => {
    await runtime.start("approving", "Note it.", { runId: "waiting" });
    await untilEvent(runtime, "waiting", "agent_end", 20_000);
    // Two thirds of its wait pass; then its worker dies, and another recovers the workflow: a
    // fork after its recorded steps replays them (the wait's deadline among them) and goes on live.
    await new Promise((resolve) => setTimeout(resolve, (ANSWER_TIMEOUT_MS * 2) / 3));
    const steps = (await DBOS.listWorkflowSteps("waiting")) ?? [];
    const recovered = Date.now();
    const fork = await DBOS.forkWorkflow<DurableRunResult>(
      "waiting",
      Math.max(...steps.map((step) => step.functionID)) + 1,
      { newWorkflowID: "waiting-recovered" },
    );
    expect((await fork.getResult()).stopReason).toBe("awaiting_approval");
    // A third was left (2 s); the whole wait again would be 6 s.
    expect(Date.now() - recovered).toBeLessThan(ANSWER_TIMEOUT_MS - 1000);
  }, 60_000);
});
