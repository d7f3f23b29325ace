import {
  DurableRunClient,
  type DurableRunResult,
  type DurableRuntime,
  durableBackend,
  RunEndedError,
  RunFailedError,
  UnknownRunError,
} from "@agent-core/dbos";
import { createAgentServer, serveNode } from "@agent-core/http";
import { assertEventProtocol, script, scriptedModel } from "@agent-core/testing";
import { DBOS } from "@dbos-inc/dbos-sdk";
import {
  Agent,
  type AgentEvent,
  type AgentMessage,
  ClientToolError,
  defineTool,
  FatalToolError,
  InvalidConfigError,
} from "agent-core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { DurableWorker, hang } from "./harness.js";
import { untilEvent } from "./until-event.js";

// A durable run resumed from a point of its first execution, in process: DBOS forks the workflow
// at a step, so the steps before it return what they recorded and the rest runs live, as in a
// worker that recovers a run whose process died right before that step.

const worker = new DurableWorker();
let databaseUrl: string;
let runtime: DurableRuntime;
let modelCalls = 0;
/** How often each tool call ran, by call id, in every run of this file. */
const executions = new Map<string, number>();
const counted = (id: string) => executions.set(id, (executions.get(id) ?? 0) + 1);

const fatal = defineTool({
  name: "fatal",
  description: "Fails fatally",
  inputSchema: z.object({}),
  execute: (_, { toolCallId }) => {
    counted(toolCallId);
    throw new FatalToolError("the disk is gone");
  },
});
const note = defineTool({
  name: "note",
  description: "Takes a note",
  inputSchema: z.object({}),
  execute: (_, { toolCallId }) => {
    counted(toolCallId);
    return "noted";
  },
});

/** Run by the user's side: its result comes as an answer. */
const readPage = defineTool({
  name: "read_page",
  description: "Reads the user's page",
  inputSchema: z.object({}),
  execution: "client",
});

/** How long `wait` waits (unless its run is aborted first). */
let waitMs = 0;
const wait = defineTool({
  name: "wait",
  description: "Waits a while",
  inputSchema: z.object({}),
  execute: (_, { signal }) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => resolve("waited"), waitMs);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(signal.reason);
      });
    }),
});

/**
 * Replies by the number of assistant messages so far, so a replay continues the script; counts
 * the calls it gets.
 */
function byTurn(...replies: ReturnType<typeof script.text>[][]) {
  const reply = (options: { prompt: { role: string }[] }) => {
    modelCalls++;
    return (
      replies[options.prompt.filter((message) => message.role === "assistant").length] ?? [script.text("?")]
    );
  };
  return scriptedModel(Array.from({ length: 10 }, () => reply));
}

beforeAll(async () => {
  ({ databaseUrl, runtime } = await worker.start("agent_core_recovery", {
    agents: {
      hanging: () =>
        new Agent({
          provider: byTurn([script.toolCall("hang", {}, { id: "h1" })], [script.text("Never.")]),
          tools: [hang],
        }),
      // Factories that fail: the workflow cannot make its agent.
      broken: () => {
        throw new Error("no API key for the provider");
      },
      "not-an-agent": () => Promise.resolve(new Agent({})) as unknown as Agent,
      // Each with a time limit (timeouts.totalMs).
      "timed-note": () =>
        new Agent({
          provider: byTurn([script.toolCall("note", {}, { id: "n4" })], [script.text("Noted.")]),
          tools: [note],
          timeouts: { totalMs: 1500 },
        }),
      "timed-wait": () =>
        new Agent({
          provider: byTurn([script.toolCall("wait", {}, { id: "w1" })], [script.text("Waited.")]),
          tools: [wait],
          timeouts: { totalMs: 3000 },
        }),
      "timed-hang": () =>
        new Agent({
          provider: byTurn([script.toolCall("hang", {}, { id: "h4" })], [script.text("Never.")]),
          tools: [hang],
          timeouts: { totalMs: 500 },
        }),
      // Asks for approval of a note.
      approving: () =>
        new Agent({
          provider: byTurn([script.toolCall("note", {}, { id: "n3" })], [script.text("Noted.")]),
          tools: [note],
          beforeToolCall: () => ({ requireApproval: true }),
        }),
      // Waits for the page's text.
      reading: () =>
        new Agent({
          provider: byTurn([script.toolCall("read_page", {}, { id: "p1" })], [script.text("Read.")]),
          tools: [readPage],
        }),
      // A note, then an answer.
      noting: () =>
        new Agent({
          provider: byTurn([script.toolCall("note", {}, { id: "n2" })], [script.text("Noted.")]),
          tools: [note],
        }),
      // A fatal failure, then a call of the same batch, which it skips.
      fatal: () =>
        new Agent({
          provider: byTurn(
            [script.toolCall("fatal", {}, { id: "f1" }), script.toolCall("note", {}, { id: "n1" })],
            [script.text("Stopped.")],
          ),
          tools: [fatal, note],
        }),
    },
  }));
}, 60_000);

afterAll(() => worker.stop());

/**
 * The workflow again under a new id, as recovered right before its `occurrence`-th step named
 * `step`: what came before is replayed, the rest runs live (once a worker takes it from
 * `queueName`, when given).
 */
async function resumeBefore(
  workflowId: string,
  step: string,
  occurrence: number,
  newId: string,
  queueName?: string,
): Promise<{ result(): Promise<DurableRunResult> }> {
  const steps = (await DBOS.listWorkflowSteps(workflowId)) ?? [];
  const at = steps.filter((s) => s.name === step)[occurrence - 1]?.functionID;
  if (at === undefined) throw new Error(`no ${step} #${occurrence} in ${workflowId}`);
  const fork = await DBOS.forkWorkflow<DurableRunResult>(workflowId, at, {
    newWorkflowID: newId,
    ...(queueName ? { queueName } : {}),
  });
  return { result: () => fork.getResult() };
}

/**
 * The workflow again under a new id, as recovered after its last recorded step (its worker died
 * right before the workflow ended), and without the messages sent to it.
 */
async function resumeAfterAll(
  workflowId: string,
  newId: string,
): Promise<{ result(): Promise<DurableRunResult> }> {
  const steps = (await DBOS.listWorkflowSteps(workflowId)) ?? [];
  const at = Math.max(...steps.map((s) => s.functionID)) + 1;
  const fork = await DBOS.forkWorkflow<DurableRunResult>(workflowId, at, { newWorkflowID: newId });
  return { result: () => fork.getResult() };
}

/** Lets this worker serve a queue no worker served so far: the runs waiting on it start. */
const serve = (queueName: string) => DBOS.registerQueue(queueName, { minPollingIntervalMs: 50 });

/** Until the run has stored an event of that type. */
const untilStored = (runId: string, type: string) => untilEvent(runtime, runId, type, 10_000);

const results = (messages: AgentMessage[]) =>
  messages.flatMap((m) => (m.role === "toolResult" ? [[m.toolCallId, m.status, m.content]] : []));

/**
 * Recovers `runId` after its last recorded step as `forkId` (its worker died right before the
 * workflow ended): it must end as `original` did, at the same point, with the same events and no
 * further model call.
 */
async function expectRecoveredAsBefore(runId: string, forkId: string, original: DurableRunResult) {
  const calls = modelCalls;
  const resumed = await (await resumeAfterAll(runId, forkId)).result();
  expect(resumed.stopReason).toBe(original.stopReason);
  expect(modelCalls).toBe(calls);
  expect(results(resumed.messages)).toEqual(results(original.messages));
  const events = await runtime.events(forkId);
  assertEventProtocol(events);
  expect(events.map((event) => event.type)).toEqual((await runtime.events(runId)).map((event) => event.type));
  expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: original.stopReason });
}

describe("a durable run resumed after a step", () => {
  it("a replayed FatalToolError stops its batch again: the call it skipped stays skipped", async () => {
    const original = await (await runtime.start("fatal", "Go.", { runId: "fatal" })).result();
    expect(results(original.messages)).toEqual([
      ["f1", "error", "the disk is gone"],
      ["n1", "skipped", 'not run: "fatal" failed fatally'],
    ]);
    // Recovered while the model answered the failure.
    const resumed = await (await resumeBefore("fatal", "agent-core.model", 2, "fatal-resumed")).result();
    expect(results(resumed.messages)).toEqual(results(original.messages));
    expect(Object.fromEntries(executions)).toEqual({ f1: 1 });
    assertEventProtocol(await runtime.events("fatal-resumed"));
  });

  it("a run cancelled while no worker ran it, recovered mid-tool, ends aborted: the tool and the model not called again", async () => {
    await (await runtime.start("noting", "Note it.", { runId: "noted" })).result();
    const [calls, notes] = [modelCalls, executions.get("n2")];
    // Recovered right before its tool call, by a worker that only now serves the queue it is on;
    // the cancel comes while no worker runs it.
    const resumed = await resumeBefore(
      "noted",
      "agent-core.tool.note",
      1,
      "noted-cancelled",
      "held-recovered",
    );
    await runtime.cancel("noted-cancelled");
    await serve("held-recovered");
    const result = await resumed.result();
    expect(result.stopReason).toBe("aborted");
    expect([modelCalls, executions.get("n2")]).toEqual([calls, notes]);
    const events = await runtime.events("noted-cancelled");
    assertEventProtocol(events);
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ status: "aborted" });
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "aborted" });
  });

  it("a run cancelled live while a tool ran, recovered before its workflow ended, ends aborted at the same point", async () => {
    const run = await runtime.start("hanging", "Hang.", { runId: "cancelled-live" });
    await untilStored("cancelled-live", "tool_call");
    await runtime.cancel("cancelled-live");
    const original = await run.result();
    expect(original.stopReason).toBe("aborted");
    // Its worker died right after the abort, before the workflow ended; the fork has none of the
    // run's messages, so only what the steps recorded can end it.
    await expectRecoveredAsBefore("cancelled-live", "cancelled-live-recovered", original);
  });

  it("a queued run cancelled before any worker took it ends aborted without calling the model", async () => {
    const client = await DurableRunClient.connect({ databaseUrl, queue: "held-queued" });
    try {
      const calls = modelCalls;
      const runId = await client.start("noting", "Note it.", { runId: "queued-cancelled" });
      await client.cancel(runId);
      await serve("held-queued");
      const result = await client.result(runId);
      expect(result.stopReason).toBe("aborted");
      expect(modelCalls).toBe(calls);
      const events = await runtime.events(runId);
      assertEventProtocol(events);
      expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "aborted" });
    } finally {
      await client.close();
    }
  });
});

describe("a durable run whose workflow fails before its agent runs", () => {
  const factoryFailure = {
    code: "agent_factory_failed",
    message: 'The factory of agent "broken" threw: no API key for the provider',
  };

  /** What every `result()` of the run rejects with. */
  async function failure(result: Promise<unknown>): Promise<RunFailedError> {
    const error = await result.then(
      () => expect.unreachable("the result resolved"),
      (error: unknown) => error,
    );
    expect(error).toBeInstanceOf(RunFailedError);
    return error as RunFailedError;
  }

  it("rejects every result() with a RunFailedError saying what failed, and ends the run's log as a failed run's", async () => {
    const run = await runtime.start("broken", "Hi.", { runId: "broken" });
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      const errors = await Promise.all(
        [run.result(), runtime.retrieve("broken").result(), client.result("broken")].map(failure),
      );
      for (const error of errors) {
        expect(error).toMatchObject({ code: "run_failed", runId: "broken", failure: factoryFailure });
        expect(error.message).toBe(
          'Durable run "broken" failed: The factory of agent "broken" threw: no API key for the provider',
        );
      }
      // The workflow ended (DBOS: ERROR, never run again): it takes no more messages.
      expect((await DBOS.getWorkflowStatus("broken"))?.status).toBe("ERROR");
      await expect(runtime.steer("broken", "Go on.")).rejects.toBeInstanceOf(RunEndedError);
    } finally {
      await client.close();
    }
    const events = await runtime.events("broken");
    assertEventProtocol(events);
    expect(events.map((event) => event.type)).toEqual(["agent_start", "error", "agent_end"]);
    expect(events[1]).toMatchObject(factoryFailure);
    expect(events[2]).toMatchObject({ stopReason: "error" });
  });

  it("says when a factory makes something else than an Agent", async () => {
    const run = await runtime.start("not-an-agent", "Hi.", { runId: "not-an-agent" });
    expect((await failure(run.result())).failure).toEqual({
      code: "agent_factory_failed",
      message: 'The factory of agent "not-an-agent" made a Promise, not an Agent.',
    });
  });

  it("says when the worker that takes a queued run has no agent of its name", async () => {
    const client = await DurableRunClient.connect({ databaseUrl, queue: "held-nobody" });
    try {
      const runId = await client.start("nobody", "Hi.", { runId: "nobody" });
      await serve("held-nobody");
      expect((await failure(client.result(runId))).failure).toEqual({
        code: "invalid_config",
        message: 'No agent "nobody" in this process.',
      });
      assertEventProtocol(await runtime.events(runId));
    } finally {
      await client.close();
    }
  });

  it("ends an HTTP stream of the run with the failure's error and agent_end, instead of leaving it open", async () => {
    const backend = await durableBackend({ databaseUrl, runs: runtime, agentName: "broken", pollMs: 200 });
    const server = createAgentServer({
      backend,
      ledger: backend.ledger,
      hookSecret: "a shared secret of at least 32 characters",
      authorize: () => ({ userId: "u1" }),
    });
    const node = await serveNode(server.fetch);
    try {
      const response = await fetch(`${node.url}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "Hi" }),
        signal: AbortSignal.timeout(10_000),
      });
      const events = (await response.text())
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as AgentEvent);
      expect(events.map((event) => event.type)).toEqual(["agent_start", "error", "agent_end"]);
      expect(events[1]).toMatchObject(factoryFailure);
      expect(events[2]).toMatchObject({ stopReason: "error" });
    } finally {
      await node.close();
      server.close(); // closes the backend too
    }
  });
});

describe("a durable run's timeouts.totalMs", () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("counts from the run's recorded start: recovered after its time ran out, the run ends as timeout before its next call", async () => {
    const startedAt = Date.now();
    const original = await (await runtime.start("timed-note", "Note it.", { runId: "timed-note" })).result();
    expect(original.stopReason).toBe("completed");
    await sleep(startedAt + 1700 - Date.now());
    const calls = modelCalls;
    // Recovered before its answer, after its 1.5 s: no model call, however little the replay took.
    const resumed = await (
      await resumeBefore("timed-note", "agent-core.model", 2, "timed-note-late")
    ).result();
    expect(resumed.stopReason).toBe("timeout");
    expect(modelCalls).toBe(calls);
    expect(results(resumed.messages)).toEqual([["n4", "ok", "noted"]]);
    const events = await runtime.events("timed-note-late");
    assertEventProtocol(events);
    expect(events.filter((event) => event.type === "error")).toEqual([
      expect.objectContaining({
        code: "timeout",
        message: "The run took longer than 1500 ms (timeouts.totalMs).",
      }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: "agent_end", stopReason: "timeout" });
  });

  it("recovered after its time ran out, right before a tool call: the call is not run, and says the run timed out", async () => {
    const startedAt = Date.now();
    const original = await (await runtime.start("timed-note", "Note it.", { runId: "timed-tool" })).result();
    expect(original.stopReason).toBe("completed");
    await sleep(startedAt + 1700 - Date.now());
    const resumed = await (
      await resumeBefore("timed-tool", "agent-core.tool.note", 1, "timed-tool-late")
    ).result();
    expect(resumed.stopReason).toBe("timeout");
    // What a model reading this history later is told: the run's time limit, not an abort.
    expect(results(resumed.messages)).toEqual([
      ["n4", "aborted", "not run: The run took longer than 1500 ms (timeouts.totalMs)."],
    ]);
    assertEventProtocol(await runtime.events("timed-tool-late"));
  });

  it("gives a recovered run what was left of its time, not all of it again", async () => {
    waitMs = 0;
    const startedAt = Date.now();
    const original = await (await runtime.start("timed-wait", "Wait.", { runId: "timed-wait" })).result();
    expect(original.stopReason).toBe("completed");
    // Recovered 1.5 s into its 3 s, right before a call that now waits 10 s.
    await sleep(startedAt + 1500 - Date.now());
    waitMs = 10_000;
    const recoveredAt = Date.now();
    const resumed = await (
      await resumeBefore("timed-wait", "agent-core.tool.wait", 1, "timed-wait-late")
    ).result();
    const took = Date.now() - recoveredAt;
    expect(resumed.stopReason).toBe("timeout");
    // About the 1.5 s left (the whole 3 s again would be 3 s).
    expect(took).toBeLessThan(2500);
    assertEventProtocol(await runtime.events("timed-wait-late"));
  });

  it("ran out live during a tool call: recovered before its workflow ended, the run ends as timeout at the same point", async () => {
    const original = await (await runtime.start("timed-hang", "Hang.", { runId: "timed-hang" })).result();
    expect(original.stopReason).toBe("timeout");
    await expectRecoveredAsBefore("timed-hang", "timed-hang-recovered", original);
  });
});

describe("a durable run that waits", () => {
  it("cancelled, ends as aborted", async () => {
    const run = await runtime.start("approving", "Note it.", { runId: "approving-cancelled" });
    await untilStored("approving-cancelled", "agent_end");
    await runtime.cancel("approving-cancelled");
    const result = await run.result();
    expect(result.stopReason).toBe("aborted");
    expect(result.runIds).toEqual(["approving-cancelled"]);
    expect(executions.get("n3")).toBeUndefined();
  });

  it("an answer to a workflow that has ended, or never was, is refused: RunEndedError", async () => {
    const approval = { kind: "approval", toolCallId: "n3", approved: true } as const;
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      for (const answer of [runtime.answer.bind(runtime), client.answer.bind(client)]) {
        await expect(answer("approving-cancelled", approval)).rejects.toBeInstanceOf(RunEndedError);
        await expect(answer("no-such-run", approval)).rejects.toBeInstanceOf(RunEndedError);
      }
    } finally {
      await client.close();
    }
  });
});

describe("an answer the waiting run could not take", () => {
  it("is refused as the agent refuses it in process, and the run still waits for the right one", async () => {
    const run = await runtime.start("approving", "Note it.", { runId: "approving-checked" });
    await untilStored("approving-checked", "agent_end");
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      for (const answer of [runtime.answer.bind(runtime), client.answer.bind(client)]) {
        await expect(
          answer("approving-checked", { kind: "approval", toolCallId: "n9", approved: true }),
        ).rejects.toThrow(new InvalidConfigError('No tool call "n9" is waiting for approval.'));
        await expect(
          answer("approving-checked", { kind: "tool-result", toolCallId: "n3", outcome: { result: 1 } }),
        ).rejects.toThrow(new ClientToolError('No client tool call "n3" is waiting for a result.'));
        const reason = 42 as unknown as string;
        await expect(
          answer("approving-checked", { kind: "approval", toolCallId: "n3", approved: false, reason }),
        ).rejects.toThrow(new InvalidConfigError("A denial's reason must be a string, got number."));
        const outcome = { error: 42 } as unknown as { error: string };
        await expect(
          answer("approving-checked", { kind: "tool-result", toolCallId: "n3", outcome }),
        ).rejects.toThrow(
          new ClientToolError(
            'The outcome for client tool call "n3" must be { result } or { error: string }: error must be a string, got number.',
          ),
        );
      }
      // None of them reached the run: the right answer resumes it.
      await client.answer("approving-checked", { kind: "approval", toolCallId: "n3", approved: true });
      const result = await run.result();
      expect(result).toMatchObject({
        stopReason: "completed",
        runIds: ["approving-checked", "approving-checked.2"],
      });
      expect(results(result.messages)).toEqual([["n3", "ok", "noted"]]);
    } finally {
      await client.close();
    }
  });
});

describe("a second answer to a call", () => {
  it("is refused as the agent refuses it in process, unless it is the same one again: the first one counts", async () => {
    const approving = await runtime.start("approving", "Note it.", { runId: "approving-twice" });
    const reading = await runtime.start("reading", "Read it.", { runId: "reading-twice" });
    await untilStored("approving-twice", "agent_end");
    await untilStored("reading-twice", "agent_end");
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      await runtime.answer("approving-twice", { kind: "approval", toolCallId: "n3", approved: true });
      await expect(
        client.answer("approving-twice", {
          kind: "approval",
          toolCallId: "n3",
          approved: false,
          reason: "no",
        }),
      ).rejects.toThrow(new InvalidConfigError('Tool call "n3" was already approved.'));
      // The same answer again, as a retried send: taken as sent, nothing sent twice.
      await client.answer("approving-twice", { kind: "approval", toolCallId: "n3", approved: true });
      const approved = await approving.result();
      expect(approved).toMatchObject({
        stopReason: "completed",
        runIds: ["approving-twice", "approving-twice.2"],
      });
      expect(results(approved.messages)).toEqual([["n3", "ok", "noted"]]);

      await client.answer("reading-twice", {
        kind: "tool-result",
        toolCallId: "p1",
        outcome: { result: "Welcome" },
      });
      await expect(
        runtime.answer("reading-twice", {
          kind: "tool-result",
          toolCallId: "p1",
          outcome: { error: "gone" },
        }),
      ).rejects.toThrow(new ClientToolError('Client tool call "p1" already has its result.'));
      const read = await reading.result();
      expect(read.stopReason).toBe("completed");
      expect(results(read.messages)).toEqual([["p1", "ok", "Welcome"]]);
    } finally {
      await client.close();
    }
  });

  it("sent again after the run ended (a send retried after a timeout) is taken as sent; another one is refused", async () => {
    const run = await runtime.start("approving", "Note it.", { runId: "approving-retried" });
    await untilStored("approving-retried", "agent_end");
    const approval = { kind: "approval", toolCallId: "n3", approved: true } as const;
    await runtime.answer("approving-retried", approval);
    expect((await run.result()).stopReason).toBe("completed");
    await runtime.answer("approving-retried", approval);
    await expect(
      runtime.answer("approving-retried", { kind: "approval", toolCallId: "n3", approved: false }),
    ).rejects.toThrow(new InvalidConfigError('Tool call "n3" was already approved.'));
    // A call it never took: the workflow takes no more.
    await expect(
      runtime.answer("approving-retried", { kind: "approval", toolCallId: "n4", approved: true }),
    ).rejects.toBeInstanceOf(RunEndedError);
  });

  it("sent at the same time from two processes: one is taken, the other refused", async () => {
    const run = await runtime.start("approving", "Note it.", { runId: "approving-at-once" });
    await untilStored("approving-at-once", "agent_end");
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      const sent = await Promise.allSettled([
        runtime.answer("approving-at-once", { kind: "approval", toolCallId: "n3", approved: true }),
        client.answer("approving-at-once", {
          kind: "approval",
          toolCallId: "n3",
          approved: false,
          reason: "no",
        }),
      ]);
      const taken = sent.findIndex((outcome) => outcome.status === "fulfilled");
      const refused = sent[1 - taken];
      expect(refused?.status).toBe("rejected");
      expect((refused as PromiseRejectedResult).reason).toEqual(
        new InvalidConfigError(`Tool call "n3" was already ${taken === 0 ? "approved" : "denied"}.`),
      );
      const result = await run.result();
      expect(results(result.messages)).toEqual([
        taken === 0 ? ["n3", "ok", "noted"] : ["n3", "denied", "denied: no"],
      ]);
    } finally {
      await client.close();
    }
  });
});

describe("a run id", () => {
  it("of the form of a workflow's later runs (<runId>.2, …) is refused: it would share their events", async () => {
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      await expect(runtime.start("noting", "Note it.", { runId: "invoice.2" })).rejects.toThrow(
        /ends in "\.<digits>"/,
      );
      await expect(client.start("noting", "Note it.", { runId: "noted.12" })).rejects.toThrow(
        /ends in "\.<digits>"/,
      );
      expect(await DBOS.getWorkflowStatus("invoice.2")).toBeNull();
    } finally {
      await client.close();
    }
  });

  it("that is empty or not a string, or a prompt that is not a string, is refused before any workflow starts", async () => {
    const client = await DurableRunClient.connect({ databaseUrl });
    const before = (await DBOS.listWorkflows({})).length;
    try {
      // An empty id would be no id: each start a new run, not the same one again.
      for (const start of [
        (runId: unknown) => runtime.start("noting", "Note it.", { runId } as { runId: string }),
        (runId: unknown) => client.start("noting", "Note it.", { runId } as { runId: string }),
      ]) {
        await expect(start("")).rejects.toThrow(
          new InvalidConfigError('runId must be a non-empty string, got "".'),
        );
        await expect(start(42)).rejects.toThrow(
          new InvalidConfigError("runId must be a non-empty string, got 42."),
        );
      }
      for (const start of [
        (prompt: unknown) => runtime.start("noting", prompt as string),
        (prompt: unknown) => client.start("noting", prompt as string),
      ])
        await expect(start({ role: "user", content: "Note it." })).rejects.toThrow(
          new InvalidConfigError("A durable run's prompt must be a string, got an object."),
        );
      expect((await DBOS.listWorkflows({})).length).toBe(before);
    } finally {
      await client.close();
    }
  });

  it("start() options that are no object, and runtime.events() after a position that is no seq, are refused with InvalidConfigError", async () => {
    const client = await DurableRunClient.connect({ databaseUrl });
    const before = (await DBOS.listWorkflows({})).length;
    try {
      for (const start of [
        (options: unknown) => runtime.start("noting", "Note it.", options as { runId: string }),
        (options: unknown) => client.start("noting", "Note it.", options as { runId: string }),
      ])
        for (const options of [null, "run-1", 7])
          await expect(start(options), String(options)).rejects.toThrow(
            /^start\(\)'s options must be an object \(\{ runId\? \}\), got /,
          );
      expect((await DBOS.listWorkflows({})).length).toBe(before);
      for (const after of [Number.NaN, 1.5, -2, "3", Number.POSITIVE_INFINITY])
        await expect(runtime.events("some-run", after as number), String(after)).rejects.toThrow(
          /^after must be a whole number from -1 \(the seq of the last event read\), got /,
        );
      // Within that: read as before.
      expect(await runtime.events("some-run", -1)).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

describe("cancel()", () => {
  it("still reaches a running run at once after the worker's connection for it dropped", async () => {
    const run = await runtime.start("hanging", "Hang.", { runId: "hanging-cancelled" });
    await untilStored("hanging-cancelled", "tool_call");
    // The database drops the connection the worker listens for cancels on (a restart, a failover).
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    try {
      const { rowCount } = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN agent_core_cancel'",
      );
      expect(rowCount).toBe(1);
    } finally {
      await admin.end();
    }
    await runtime.cancel("hanging-cancelled");
    const ended = await Promise.race([
      run.result().then((result) => result.stopReason),
      new Promise((resolve) => setTimeout(() => resolve("still running after 5 s"), 5000)),
    ]);
    expect(ended).toBe("aborted");
  });
});

describe("cancel() of a run that is not running", () => {
  it("leaves an ended run as it ended, sending nothing; refuses an id no workflow has: UnknownRunError", async () => {
    const ended = await (
      await runtime.start("noting", "Note it.", { runId: "noted-then-cancelled" })
    ).result();
    const messages = async () => {
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      try {
        const { rows } = await admin.query(
          "SELECT count(*)::int AS n FROM dbos.notifications WHERE destination_uuid = $1",
          ["noted-then-cancelled"],
        );
        return rows[0].n;
      } finally {
        await admin.end();
      }
    };
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      for (const cancel of [runtime.cancel.bind(runtime), client.cancel.bind(client)]) {
        await cancel("noted-then-cancelled");
        await expect(cancel("no-such-run")).rejects.toThrow(new UnknownRunError("no-such-run"));
        await expect(cancel("noted-then-cancelled.2")).rejects.toBeInstanceOf(UnknownRunError);
      }
      expect(await messages()).toBe(0);
      expect(await runtime.retrieve("noted-then-cancelled").result()).toEqual(ended);
      expect(await client.result("noted-then-cancelled")).toEqual(ended);
    } finally {
      await client.close();
    }
  });
});

describe("runtime.prompt()", () => {
  it("refuses an agent that has run before: its runs would keep that run's services, not the workflow's", async () => {
    const agent = new Agent({ provider: byTurn([script.text("One.")], [script.text("Two.")]) });
    const first = await (await runtime.prompt(agent, "First.")).result();
    expect(first.text).toBe("One.");
    await expect(runtime.prompt(agent, "Second.")).rejects.toThrow(/has run before/);
    const inMemory = new Agent({ provider: byTurn([script.text("One.")], [script.text("Two.")]) });
    await inMemory.prompt("Here.").result();
    await expect(runtime.prompt(inMemory, "Durably.")).rejects.toThrow(/has run before/);
    // Steered before its first prompt, an agent has not run: its run is the workflow's.
    const steered = new Agent({ provider: byTurn([script.text("Steered.")]) });
    steered.steer("Briefly.");
    const steeredRun = await runtime.prompt(steered, "Go.");
    await steeredRun.result();
    expect(await runtime.retrieve(steeredRun.runId).result()).toMatchObject({ runIds: [steeredRun.runId] });
    // The conversation goes on durably in a new agent with its history.
    const next = new Agent({ provider: byTurn([], [script.text("Two.")]), messages: first.messages });
    const second = await runtime.prompt(next, "Second.");
    const result = await second.result();
    expect(result.text).toBe("Two.");
    expect(result.messages).toHaveLength(4);
    // Its own workflow, its own log.
    expect(await runtime.retrieve(second.runId).result()).toMatchObject({ runIds: [second.runId] });
    assertEventProtocol(await runtime.events(second.runId));
  });

  it("refuses what is not an Agent, or a prompt that is not a string, before any workflow starts", async () => {
    const before = (await DBOS.listWorkflows({})).length;
    await expect(runtime.prompt(undefined as unknown as Agent, "Hi.")).rejects.toThrow(
      new InvalidConfigError("runtime.prompt() takes an Agent, got undefined."),
    );
    await expect(runtime.prompt({ name: "agent" } as unknown as Agent, "Hi.")).rejects.toThrow(
      new InvalidConfigError("runtime.prompt() takes an Agent, got an object."),
    );
    const agent = new Agent({ provider: byTurn([script.text("One.")]) });
    await expect(runtime.prompt(agent, 5 as unknown as string)).rejects.toThrow(
      new InvalidConfigError("A durable run's prompt must be a string, got 5."),
    );
    expect((await DBOS.listWorkflows({})).length).toBe(before);
  });
});

describe("a run's result", () => {
  it("of an id no workflow has (a later run's, <id>.2) is refused at once, not waited for forever", async () => {
    const client = await DurableRunClient.connect({ databaseUrl });
    try {
      for (const result of [
        (id: string) => runtime.retrieve(id).result(),
        (id: string) => client.result(id),
      ]) {
        await expect(result("no-such-run")).rejects.toBeInstanceOf(UnknownRunError);
        await expect(result("noted.2")).rejects.toThrow(/a later run of workflow "noted"/);
        expect((await result("noted")).stopReason).toBe("completed");
      }
    } finally {
      await client.close();
    }
  });
});
