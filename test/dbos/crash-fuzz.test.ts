import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import {
  type AgentEvent,
  type AgentMessage,
  isAssistantMessage,
  isToolResultMessage,
  textOf,
  validateTranscript,
} from "@agent-core/core";
import {
  type DurableAnswer,
  DurableRunClient,
  type DurableRunResult,
  DurableRuntime,
  EventFollower,
  EventStore,
} from "@agent-core/dbos";
import { assertEventProtocol } from "@agent-core/testing";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FuzzConfigError, wholeNumber } from "../race/property.js";
import { scriptedAgent } from "./crash-fuzz-agent.js";
import { type CrashCase, type CrashScript, crashScript } from "./crash-fuzz-case.js";
import { whileLocked } from "./harness.js";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// The crash fuzz: generated durable runs (tool calls with side effects, approvals, client tools,
// steering and follow-ups) whose worker processes are killed (SIGKILL) at generated moments, a new
// worker started each time, on one throwaway PostgreSQL cluster. After each case it checks what
// docs/durable-runs.md promises of a crash ("What is guaranteed, and what is not"); see
// docs/race-suite.md, "The crash fuzz". FUZZ_SEED, FUZZ_RUNS (default 8), FUZZ_PATH as the race
// suite reads them; `pnpm fuzz:crash` runs 100 cases.

const WORKER = fileURLToPath(new URL("./crash-fuzz-worker.ts", import.meta.url));
const DEFAULT_SEED = 20_260_101;
const WORKER_CONNECTIONS = "crash-fuzz-worker";
const DEFAULT_RUNS = 8;
/** How long a case may take from its first worker's start to its workflow's result. */
const CASE_BOUND_MS = 60_000;

const settings = (() => {
  const env = process.env;
  const path = env.FUZZ_PATH || undefined;
  if (path !== undefined && !env.FUZZ_SEED)
    throw new FuzzConfigError("FUZZ_PATH replays a counterexample of one seed: set FUZZ_SEED too.");
  return {
    seed: wholeNumber(env, "FUZZ_SEED", DEFAULT_SEED, -(2 ** 31)),
    numRuns: wholeNumber(env, "FUZZ_RUNS", DEFAULT_RUNS, 1),
    path,
  };
})();

let postgres: ThrowawayPostgres;
let databaseUrl: string;
let pool: pg.Pool;
let store: EventStore;
/** Steers the runs and answers their waits, from this process, as a client in front of workers would. */
let client: DurableRunClient;
let logDir: string;
/** Runs each case again, uninterrupted, in this process: what the crashed run's history must equal. */
let runtime: DurableRuntime;
let wholeCase: CrashCase | undefined;

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase("agent_core_crash_fuzz");
  pool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  store = new EventStore(pool);
  await store.createTable();
  logDir = mkdtempSync(join(tmpdir(), "agent-core-crash-fuzz-"));
  runtime = new DurableRuntime({
    databaseUrl,
    executorId: "uninterrupted",
    agents: { scripted: () => scriptedAgent(wholeCase as CrashCase) },
  });
  await runtime.launch();
  client = await DurableRunClient.connect({ databaseUrl });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await runtime?.shutdown();
  await pool?.end();
  postgres?.stop();
  if (logDir) rmSync(logDir, { recursive: true, force: true });
});

interface Worker {
  child: ChildProcess;
  exit: Promise<{ killed: boolean; stdout: string }>;
}

function spawnWorker(crashCase: CrashCase): Worker {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", WORKER, databaseUrl, JSON.stringify(crashCase)],
    // Its connections carry this name: the test waits for them to close after a kill.
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PGAPPNAME: WORKER_CONNECTIONS } },
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => (stdout += chunk));
  child.stderr?.on("data", (chunk) => (stderr += chunk));
  const exit = new Promise<{ killed: boolean; stdout: string }>((resolve, reject) =>
    child.on("exit", (code, signal) =>
      code === 0 || signal === "SIGKILL"
        ? resolve({ killed: signal === "SIGKILL", stdout })
        : reject(new Error(`worker exited ${code}: ${stderr}`)),
    ),
  );
  return { child, exit };
}

/** What a case left: everything the checks read. */
interface Observation {
  crashCase: CrashCase;
  result?: DurableRunResult & { failed?: string };
  /**
   * The pid of each worker, in order; for a killed one, the run's stored log at its death and what
   * its workflow had recorded then: the tool calls whose step has its result, and how many model
   * calls were made and recorded.
   */
  workers: {
    pid: number;
    killedWith?: Record<string, AgentEvent[]>;
    recorded?: { tools: string[]; models: number };
  }[];
  /** The events a follower (as an HTTP stream of the run) passed on, by run id. */
  followed: Record<string, AgentEvent[]>;
  /** The stored log at the end, by run id (every run of the workflow). */
  stored: Record<string, AgentEvent[]>;
  /** Each message sent, and how its send ended. */
  sent: { text: string; queue: "steer" | "followUp"; outcome: string }[];
  /** Answers refused (each call waiting is answered once). */
  refusedAnswers: string[];
  /** `<what> <id> <pid>` lines of the worker processes: tool runs and model calls. */
  lines: { what: string; id: string; pid: number }[];
  /** The messages sent to the workflow that it never received. */
  unreceived: string[];
  /** The same script run uninterrupted (when no message was sent: they land by timing). */
  whole?: DurableRunResult;
}

/**
 * Until the killed worker's connections are gone: the server may still be running what the worker
 * sent before it died (a commit), and what the test reads of the run must be final.
 */
async function connectionsClosed(executorId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    // DBOS names its own connections after the executor (the case's run id).
    const { rows } = await pool.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 OR starts_with(application_name, $2)",
      [WORKER_CONNECTIONS, `dbos_transact_${executorId}_`],
    );
    if (rows[0].n === 0) return;
    if (Date.now() > deadline) throw new Error("the killed worker's connections stayed open");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every run of the workflow, `<runId>`, `<runId>.2`, …, as stored. */
async function storedRuns(runId: string): Promise<Record<string, AgentEvent[]>> {
  const { rows } = await pool.query<{ run_id: string; event: AgentEvent }>(
    "SELECT run_id, event FROM agent_core_events WHERE run_id = $1 OR run_id LIKE $1 || '.%' ORDER BY run_id, seq",
    [runId],
  );
  const runs: Record<string, AgentEvent[]> = {};
  for (const { run_id, event } of rows) {
    runs[run_id] ??= [];
    runs[run_id].push(event);
  }
  return runs;
}

/**
 * What the workflow has recorded: the tool calls whose step stored its result, and the number of
 * model calls made and stored (a model step that was `deferred` made none). Model calls are one at
 * a time, so they are the script's first ones.
 */
async function recordedSteps(runId: string): Promise<{ tools: string[]; models: number }> {
  const { rows } = await pool.query<{ function_name: string; output: string }>(
    "SELECT function_name, output FROM dbos.operation_outputs WHERE workflow_uuid = $1 AND output IS NOT NULL ORDER BY function_id",
    [runId],
  );
  const tools = rows.flatMap(({ function_name, output }) =>
    function_name.startsWith("agent-core.tool.") ? [/"toolCallId":"([^"]+)"/.exec(output)?.[1] ?? "?"] : [],
  );
  const models = rows.filter(
    ({ function_name, output }) =>
      function_name === "agent-core.model" && !output.includes('"deferred":true'),
  ).length;
  return { tools, models };
}

/** The test's answer to a call its run waits for (`t<turn>c<index>`, as the script names it). */
function answerFor(crashCase: CrashCase, toolCallId: string): DurableAnswer | undefined {
  const [, turn, index] = /^t(\d+)c(\d+)$/.exec(toolCallId) ?? [];
  const call = crashCase.turns[Number(turn)]?.calls[Number(index)];
  if (call?.kind === "approval")
    return { kind: "approval", toolCallId, approved: call.approve, reason: "no" };
  if (call?.kind === "client")
    return {
      kind: "tool-result",
      toolCallId,
      outcome: call.answer === "result" ? { result: `page ${toolCallId}` } : { error: "no page" },
    };
  return undefined;
}

/** The case run again in this process, with no crash and no message, each wait answered alike. */
async function uninterrupted(crashCase: CrashCase): Promise<DurableRunResult> {
  const runId = `${crashCase.runId}-whole`;
  wholeCase = { ...crashCase, runId, logFile: join(logDir, `${runId}.log`) };
  const run = await runtime.start("scripted", "Follow the script.", { runId });
  let ended: DurableRunResult | undefined;
  const ending = run.result().then((result) => {
    ended = result;
  });
  const answered = new Set<string>();
  const deadline = Date.now() + CASE_BOUND_MS;
  while (ended === undefined && Date.now() < deadline) {
    for (const event of Object.values(await storedRuns(runId)).flat())
      if (event.type === "agent_end")
        for (const { toolCallId } of [
          ...(event.pendingApprovals ?? []),
          ...(event.pendingClientTools ?? []),
        ]) {
          const answer = answerFor(crashCase, toolCallId);
          if (answer === undefined || answered.has(toolCallId)) continue;
          answered.add(toolCallId);
          await runtime.answer(runId, answer);
        }
    await Promise.race([ending, new Promise((resolve) => setTimeout(resolve, 20))]);
  }
  if (ended === undefined) throw new Error(`the uninterrupted run did not end within ${CASE_BOUND_MS} ms`);
  return ended;
}

async function runCase(script: CrashScript, runId: string): Promise<Observation> {
  const crashCase: CrashCase = { ...script, runId, logFile: join(logDir, `${runId}.log`) };
  writeFileSync(crashCase.logFile, "");
  const observation: Observation = {
    crashCase,
    workers: [],
    followed: {},
    stored: {},
    sent: [],
    refusedAnswers: [],
    lines: [],
    unreceived: [],
  };
  const crashes = [...script.crashes];
  const messages = script.messages.map((message, i) => ({
    ...message,
    text: `${message.queue} ${i}`,
    sent: false,
  }));
  const sending: Promise<unknown>[] = [];
  let seen = 0;
  let worker!: Worker;
  let seenAtStart = 0;
  let timer: NodeJS.Timeout | undefined;
  const kill = (target: Worker) => {
    if (target === worker && target.child.exitCode === null && target.child.signalCode === null)
      target.child.kill("SIGKILL");
  };
  const start = () => {
    worker = spawnWorker(crashCase);
    observation.workers.push({ pid: worker.child.pid as number });
    seenAtStart = seen;
    const crash = crashes[0];
    const target = worker;
    if (crash?.after === "ms") timer = setTimeout(() => kill(target), crash.ms);
  };

  // Follows the workflow's runs one after another, as a client of its HTTP stream would; every
  // event it passes on may trigger a crash, a message or the answers to a wait.
  const follower = new EventFollower(store, databaseUrl, { pollMs: 200 });
  const follows: { stop(): void }[] = [];
  const follow = (run: number) => {
    const id = run === 1 ? runId : `${runId}.${run}`;
    observation.followed[id] = [];
    follows.push(
      follower.follow(id, -1, (event) => {
        observation.followed[id]?.push(event);
        seen++;
        const crash = crashes[0];
        if (crash?.after === "events" && seen - seenAtStart === crash.events) {
          const target = worker;
          if (crash.ms === 0) kill(target);
          else timer = setTimeout(() => kill(target), crash.ms);
        }
        for (const message of messages)
          if (!message.sent && !message.whileDown && seen >= message.afterEvents) {
            message.sent = true;
            sending.push(send(message));
          }
        if (event.type !== "agent_end") return;
        for (const pending of [...(event.pendingApprovals ?? []), ...(event.pendingClientTools ?? [])])
          sending.push(answer(pending.toolCallId));
        // A wait resumes as the next run, and so do messages that came after the last model call.
        follow(run + 1);
      }),
    );
  };
  const send = async (message: { queue: "steer" | "followUp"; text: string }) => {
    const sent: Observation["sent"][number] = {
      text: message.text,
      queue: message.queue,
      outcome: "pending",
    };
    observation.sent.push(sent);
    try {
      await client[message.queue](runId, message.text);
      sent.outcome = "taken";
    } catch (error) {
      sent.outcome = (error as Error).name;
    }
  };
  const answer = async (toolCallId: string) => {
    const answer = answerFor(crashCase, toolCallId);
    try {
      if (answer !== undefined) await client.answer(runId, answer);
      else observation.refusedAnswers.push(`${toolCallId}: waits, but the script has no such wait`);
    } catch (error) {
      observation.refusedAnswers.push(`${toolCallId}: ${(error as Error).message}`);
    }
  };

  const deadline = Date.now() + CASE_BOUND_MS;
  start();
  follow(1);
  try {
    for (;;) {
      const bound = new Promise<"bound">((resolve) =>
        setTimeout(resolve, deadline - Date.now(), "bound").unref(),
      );
      const exit = await Promise.race([worker.exit, bound]);
      if (exit === "bound") {
        kill(worker);
        break;
      }
      clearTimeout(timer);
      if (!exit.killed) {
        observation.result = JSON.parse(exit.stdout.trim().split("\n").at(-1) as string);
        break;
      }
      await connectionsClosed(runId);
      const dead = observation.workers.at(-1) as Observation["workers"][number];
      dead.killedWith = await storedRuns(runId);
      dead.recorded = await recordedSteps(runId);
      for (const message of messages)
        if (!message.sent && message.whileDown && seen >= message.afterEvents) {
          message.sent = true;
          await send(message);
        }
      crashes.shift();
      start();
    }
    // The follower reads each run to its end (stored before the workflow returned).
    const until = Date.now() + 10_000;
    const runIds = observation.result?.runIds ?? [];
    while (Date.now() < until && runIds.some((id) => observation.followed[id]?.at(-1)?.type !== "agent_end"))
      await new Promise((resolve) => setTimeout(resolve, 20));
    await Promise.all(sending);
  } finally {
    clearTimeout(timer);
    for (const each of follows) each.stop();
    await follower.close();
  }
  observation.stored = await storedRuns(runId);
  observation.lines = readFileSync(crashCase.logFile, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [what, id, pid] = line.split(" ") as [string, string, string];
      return { what, id, pid: Number(pid) };
    });
  const { rows: unreceived } = await pool.query(
    "SELECT message FROM dbos.notifications WHERE destination_uuid = $1 AND NOT consumed",
    [runId],
  );
  observation.unreceived = unreceived.map((row) => String(row.message));
  return observation;
}

/** What the case broke of what docs/durable-runs.md promises; empty when nothing. */
function problemsOf(o: Observation): string[] {
  const problems: string[] = [];
  const { result } = o;

  // The run ends, as the script implies: every wait is answered, so it completes.
  if (result === undefined) return [`the run did not end within ${CASE_BOUND_MS} ms`];
  if (result.failed !== undefined) return [`the workflow failed: ${result.failed}`];
  if (result.stopReason !== "completed") problems.push(`it ended ${result.stopReason}, not completed`);
  problems.push(...o.refusedAnswers.map((refused) => `an answer was refused: ${refused}`));

  // Its log, as stored and as followed: seq 0..n once each, agent_start first, agent_end last and
  // once, one tool_result per tool_call; a run for each of the workflow's runs, and no other.
  const runIds = Object.keys(o.stored).sort();
  if (JSON.stringify(runIds) !== JSON.stringify([...result.runIds].sort()))
    problems.push(`runs stored ${runIds.join(", ")}, runs of the workflow ${result.runIds.join(", ")}`);
  for (const [runId, events] of Object.entries(o.stored)) {
    try {
      assertEventProtocol(events);
    } catch (error) {
      problems.push(`${runId}: ${(error as Error).message}`);
    }
    if (JSON.stringify(o.followed[runId]) !== JSON.stringify(events))
      problems.push(`${runId}: the follower passed on other events than the stored ones`);
  }
  // What was stored before a crash stays as it was: the log goes on from there.
  for (const { pid, killedWith } of o.workers)
    for (const [runId, events] of Object.entries(killedWith ?? {}))
      if (JSON.stringify(o.stored[runId]?.slice(0, events.length)) !== JSON.stringify(events))
        problems.push(`${runId}: the events stored before worker ${pid} died were changed`);

  // "A recorded step never runs again": a tool call or model call whose result was stored before a
  // crash is not made by any worker started after it. "A tool call running at the crash runs again
  // (at least once)": each call that ran has a run, and no worker runs a call twice.
  const runsOf = (what: string, id: string) => o.lines.filter((line) => line.what === what && line.id === id);
  const allEvents = Object.values(o.stored).flat();
  for (const line of o.lines)
    if (runsOf(line.what, line.id).filter((other) => other.pid === line.pid).length > 1)
      problems.push(`worker ${line.pid} made ${line.what} ${line.id} more than once`);
  o.workers.forEach(({ pid, killedWith, recorded }, w) => {
    if (killedWith === undefined || recorded === undefined) return;
    const later = new Set(o.workers.slice(w + 1).map((worker) => worker.pid));
    const ranLater = (what: string, id: string) => runsOf(what, id).some((line) => later.has(line.pid));
    // The log never runs ahead of the record: a result of a call that ran (client calls too: a
    // step hands them over; the others, denied or skipped, the loop makes again on replay) is one
    // no replay can change.
    for (const event of Object.values(killedWith).flat())
      if (
        event.type === "tool_result" &&
        (event.status === "ok" || event.status === "error") &&
        !recorded.tools.includes(event.toolCallId)
      )
        problems.push(
          `tool call ${event.toolCallId} had its result logged, not recorded, when worker ${pid} died`,
        );
    for (const id of new Set(o.lines.filter((line) => line.what === "tool").map((line) => line.id)))
      if (recorded.tools.includes(id)) {
        if (ranLater("tool", id))
          problems.push(`tool call ${id}, recorded before worker ${pid} died, ran again`);
      } else if (runsOf("tool", id).some((line) => line.pid === pid) && !ranLater("tool", id))
        problems.push(`tool call ${id} was running when worker ${pid} died, and never ran again`);
    for (const id of new Set(o.lines.filter((line) => line.what === "model").map((line) => line.id)))
      if (Number(id) < recorded.models) {
        if (ranLater("model", id))
          problems.push(`model call ${id}, recorded before worker ${pid} died, was made again`);
      } else if (runsOf("model", id).some((line) => line.pid === pid) && !ranLater("model", id))
        problems.push(`model call ${id} was streaming when worker ${pid} died, and was not made again`);
  });
  for (const event of allEvents) {
    if (event.type !== "tool_result" || event.toolName === "page") continue;
    const ran = runsOf("tool", event.toolCallId).length;
    if ((event.status === "ok" || event.status === "error") && ran === 0)
      problems.push(`tool call ${event.toolCallId} has a result (${event.status}) but never ran`);
    if ((event.status === "denied" || event.status === "skipped") && ran > 0)
      problems.push(`tool call ${event.toolCallId} ran ${ran} time(s) but is ${event.status}`);
  }

  // The history is whole, and it is what the log tells: each turn's final reply (a turn may call
  // the model more than once: steering), in order, every reply's text as its deltas streamed it,
  // and the calls' results with the statuses logged.
  problems.push(...validateTranscript(result.messages).map((problem) => `transcript: ${problem}`));
  const logged = result.runIds.flatMap((runId) => o.stored[runId] ?? []);
  const replies = result.messages.filter(isAssistantMessage);
  let next = 0;
  for (const event of logged) {
    if (event.type !== "turn_end") continue;
    const found = replies.findIndex((reply, i) => i >= next && isDeepStrictEqual(reply, event.message));
    if (found === -1)
      problems.push(`${event.runId} seq ${event.seq}: its turn's reply is not in the history`);
    else next = found + 1;
  }
  const streamed = logged.flatMap((event) => (event.type === "text_delta" ? [event.text] : [])).join("");
  const said = result.messages.filter(isAssistantMessage).map(textOf).join("");
  if (streamed !== said) problems.push(`the log streamed "${streamed}", the history's replies say "${said}"`);
  const statuses = (list: { toolCallId: string; status?: string }[]) =>
    JSON.stringify(list.map(({ toolCallId, status }) => [toolCallId, status]).sort());
  const resultMessages = result.messages.filter(isToolResultMessage);
  const resultEvents = logged.filter((event) => event.type === "tool_result");
  if (statuses(resultMessages) !== statuses(resultEvents))
    problems.push(
      `the history's tool results ${statuses(resultMessages)} are not the log's ${statuses(resultEvents)}`,
    );

  // "The history equals an uninterrupted run's" (timestamps aside: the runs are not at the same time).
  const comparable = (messages: AgentMessage[]) =>
    JSON.parse(JSON.stringify(messages, (key, value) => (key === "timestamp" ? undefined : value)));
  if (o.whole !== undefined && !isDeepStrictEqual(comparable(result.messages), comparable(o.whole.messages)))
    problems.push(`the history differs from the uninterrupted run's: ${JSON.stringify(o.whole.messages)}`);
  // Its log is ordered in time too: `ts` never goes back.
  for (const events of Object.values(o.stored))
    for (const [i, event] of events.entries())
      if (i > 0 && event.ts < (events[i - 1] as AgentEvent).ts)
        problems.push(`${event.runId} seq ${event.seq}: ts ${event.ts} is before the previous event's`);

  // No message is lost: each one sent is in the history once, or its send was refused as the run
  // had ended (its mailbox closed).
  const userTexts = result.messages.flatMap((message: AgentMessage) =>
    message.role === "user" && typeof message.content === "string" ? [message.content] : [],
  );
  for (const sent of o.sent) {
    const inHistory = userTexts.filter((text) => text === sent.text).length;
    if (sent.outcome === "taken") {
      if (inHistory > 1) problems.push(`"${sent.text}" is in the history ${inHistory} times`);
      const unreceived = o.unreceived.some((message) => message.includes(`"content":"${sent.text}"`));
      if (inHistory === 0)
        problems.push(
          unreceived
            ? `"${sent.text}" was taken, and never received`
            : `"${sent.text}" was received, but is not in the history`,
        );
    } else if (sent.outcome !== "RunEndedError")
      problems.push(`sending "${sent.text}" failed: ${sent.outcome}`);
    else if (inHistory > 0) problems.push(`"${sent.text}" was refused, yet is in the history`);
  }
  return problems;
}

function report(o: Observation, problems: string[]): string {
  const runs = Object.entries(o.stored)
    .map(([runId, events]) => `${runId}:\n${events.map((e) => `  ${JSON.stringify(e)}`).join("\n")}`)
    .join("\n");
  const workers = o.workers.map(({ pid, killedWith }) =>
    killedWith === undefined
      ? `${pid} (ran to the end)`
      : `${pid} killed with ${Object.entries(killedWith)
          .map(([runId, events]) => `${runId}: ${events.length} events`)
          .join(", ")}`,
  );
  return [
    `Broken:\n- ${problems.join("\n- ")}`,
    `Workers: ${workers.join("; ")}`,
    `Sent: ${JSON.stringify(o.sent)}`,
    `Lines: ${o.lines.map((l) => `${l.what} ${l.id} ${l.pid}`).join(", ")}`,
    `Result: ${JSON.stringify(o.result)}`,
    `Stored:\n${runs}`,
  ].join("\n\n");
}

const PROPERTY = "crash fuzz: durable runs killed at generated moments";

describe("the crash fuzz", () => {
  it(
    PROPERTY,
    async () => {
      let index = 0;
      // What the cases did, printed at the end: a run whose crashes never landed checks little.
      const tally = {
        cases: 0,
        killed: 0,
        killedReplaying: 0,
        runs: 0,
        messages: 0,
        refused: 0,
        reran: 0,
        compared: 0,
      };
      const property = fc.asyncProperty(crashScript, async (script) => {
        const observation = await runCase(script, `fuzz-${settings.seed}-${index++}`);
        if (observation.result?.messages !== undefined && observation.sent.length === 0)
          observation.whole = await uninterrupted(observation.crashCase);
        if (observation.whole !== undefined) tally.compared++;
        tally.cases++;
        tally.runs += observation.result?.runIds?.length ?? 0;
        tally.messages += observation.sent.length;
        tally.refused += observation.sent.filter((sent) => sent.outcome !== "taken").length;
        observation.workers.forEach(({ killedWith }, w) => {
          if (killedWith === undefined) return;
          tally.killed++;
          // Killed before it stored an event of its own: while launching or replaying.
          const before = w === 0 ? {} : observation.workers[w - 1]?.killedWith;
          if (JSON.stringify(before) === JSON.stringify(killedWith)) tally.killedReplaying++;
        });
        tally.reran += new Set(
          observation.lines
            .filter(
              (line, i, lines) => lines.findIndex((l) => l.what === line.what && l.id === line.id) !== i,
            )
            .map((line) => `${line.what} ${line.id}`),
        ).size;
        const problems = problemsOf(observation);
        if (problems.length > 0) throw new Error(report(observation, problems));
      });
      const details = await fc.check(property, {
        seed: settings.seed,
        numRuns: settings.numRuns,
        ...(settings.path === undefined ? {} : { path: settings.path }),
        // A case costs seconds of real processes, and its crashes land by timing: the first
        // failure is reported as it is, not shrunk.
        endOnFailure: true,
      });
      console.log(
        `crash fuzz, seed ${settings.seed}: ${tally.cases} cases, ${tally.killed} workers killed (${tally.killedReplaying} before storing an event), ${tally.runs} runs, ${tally.messages} messages sent (${tally.refused} refused), ${tally.reran} calls made again, ${tally.compared} histories compared with an uninterrupted run's`,
      );
      if (!details.failed) return;
      const replay = `Replay: FUZZ_SEED=${details.seed} FUZZ_PATH=${details.counterexamplePath} pnpm exec vitest run test/dbos/crash-fuzz.test.ts`;
      const cause =
        details.errorInstance instanceof Error
          ? details.errorInstance.message
          : String(details.errorInstance);
      throw new Error(`${replay}\n\n${fc.defaultReportMessage(details) ?? ""}\n\n${cause}\n\n${replay}`);
    },
    settings.numRuns * 75_000 + 30_000,
  );
});

// What the fuzz found, as plain tests.

describe("a parallel batch killed after a call's step was recorded, before its result was logged", () => {
  it("logs each call's result once on resume: a replay hands the recorded results back in the log's order", async () => {
    // Four calls that end in the reverse of their order: t0c3 first, t0c0 last.
    const crashCase: CrashCase = {
      runId: "parallel-unlogged",
      logFile: join(logDir, "parallel-unlogged.log"),
      execution: "parallel",
      turns: [{ calls: [400, 300, 200, 100].map((ms) => ({ kind: "effect", ms, fails: false })) }],
      final: { chunks: ["All ", "done"], pauseMs: 0 },
      messages: [],
      crashes: [],
    };
    writeFileSync(crashCase.logFile, "");
    const first = spawnWorker(crashCase);
    const logged = async () =>
      Object.values(await storedRuns(crashCase.runId))
        .flat()
        .flatMap((event) => (event.type === "tool_result" ? [event.toolCallId] : []));
    await until(async () => (await logged()).includes("t0c1"), "t0c1's result");
    // While this lock is held no event is stored; the steps go on: t0c0's result is recorded.
    await whileLocked(databaseUrl, "agent_core_events", async () => {
      await until(
        async () => (await recordedSteps(crashCase.runId)).tools.includes("t0c0"),
        "t0c0's recorded result",
      );
      first.child.kill("SIGKILL");
      await first.exit;
      // The dead worker's insert of t0c0's result still waits for the lock: it never happens.
      await pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
      );
      await connectionsClosed(crashCase.runId);
    });
    expect(await logged()).toEqual(["t0c3", "t0c2", "t0c1"]);
    const before = await storedRuns(crashCase.runId);

    const resumed = spawnWorker(crashCase);
    const result = JSON.parse((await resumed.exit).stdout.trim().split("\n").at(-1) as string);
    expect(result).toMatchObject({ stopReason: "completed", text: "All done" });
    const log = (await storedRuns(crashCase.runId))[crashCase.runId] as AgentEvent[];
    expect(log.slice(0, before[crashCase.runId]?.length)).toEqual(before[crashCase.runId]);
    assertEventProtocol(log);
    expect(await logged()).toEqual(["t0c3", "t0c2", "t0c1", "t0c0"]);
    // Each ran once: t0c0's result was recorded before the kill.
    const lines = readFileSync(crashCase.logFile, "utf8").trim().split("\n");
    const ran = lines.filter((line) => line.startsWith("tool ")).map((line) => line.split(" ")[1]);
    expect(ran.sort()).toEqual(["t0c0", "t0c1", "t0c2", "t0c3"]);
  }, 60_000);
});

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
