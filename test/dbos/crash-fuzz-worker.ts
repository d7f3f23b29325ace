import { appendFileSync } from "node:fs";
import { DurableRuntime } from "@agent-core/dbos";
import { type ScriptPart, script, scriptedModel } from "@agent-core/testing";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { Agent, defineTool } from "agent-core";
import { z } from "zod";
import type { CrashCase } from "./crash-fuzz-case.js";

// A worker process of the crash fuzz (crash-fuzz.test.ts): it launches a durable runtime under the
// case's own executor id (so it recovers that case's run, and no other case's), starts the run if
// no worker did yet, and prints the workflow's result as its last line. The test kills it
// (SIGKILL) at chosen moments and starts another. Every model call and every run of a tool with a
// side effect appends a line to the case's log file, `<what> <id> <pid>`, so the test can count
// them per process.

const [databaseUrl, caseJson] = process.argv.slice(2) as [string, string];
const crashCase = JSON.parse(caseJson) as CrashCase;
const log = (what: string, id: string | number) =>
  appendFileSync(crashCase.logFile, `${what} ${id} ${process.pid}\n`);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A tool with a side effect: the line is written first, so a crash during its pause runs it again.
 * `guarded` is the same behind an approval (`beforeToolCall` below).
 */
const effectTool = (name: string) =>
  defineTool({
    name,
    description: "Does something once per run of it",
    inputSchema: z.object({ ms: z.number(), fails: z.boolean() }),
    execute: async ({ ms, fails }, { toolCallId }) => {
      log("tool", toolCallId);
      await pause(ms);
      if (fails) throw new Error(`${name} ${toolCallId} failed`);
      return `done ${toolCallId}`;
    },
  });
/** A client tool: the run suspends until the test answers it. */
const page = defineTool({
  name: "page",
  description: "Reads the user's page",
  inputSchema: z.object({}),
  execution: "client",
});

/**
 * The model replies by the number of assistant messages in its prompt, so a process that resumes
 * the run goes on with the script: the scripted turns, then the final text, then "ok" for any reply
 * the messages sent during the run ask for.
 */
function reply(options: { prompt: { role: string }[] }): ScriptPart[] {
  const index = options.prompt.filter((message) => message.role === "assistant").length;
  log("model", index);
  const turn = crashCase.turns[index];
  if (turn !== undefined)
    return turn.calls.map((call, c) =>
      call.kind === "client"
        ? script.toolCall("page", {}, { id: `t${index}c${c}` })
        : script.toolCall(
            call.kind === "approval" ? "guarded" : "effect",
            { ms: call.ms, fails: call.fails },
            {
              id: `t${index}c${c}`,
            },
          ),
    );
  if (index > crashCase.turns.length) return [script.text("ok")];
  const { chunks, pauseMs } = crashCase.final;
  return chunks.flatMap((chunk, i) =>
    i === 0 ? [script.text(chunk)] : [script.delay(pauseMs), script.text(chunk)],
  );
}

const runtime = new DurableRuntime({
  databaseUrl,
  executorId: crashCase.runId,
  agents: {
    scripted: () =>
      new Agent({
        provider: scriptedModel(Array.from({ length: 50 }, () => reply)),
        tools: [effectTool("effect"), effectTool("guarded"), page],
        toolExecution: crashCase.execution,
        beforeToolCall: ({ call }) => (call.name === "guarded" ? { requireApproval: true } : undefined),
      }),
  },
});
await runtime.launch();
// The first worker starts the run; a later one finds it (recovered by `launch()`, or not started
// yet when the first died that early) and starts it only if no worker did.
if (!(await DBOS.getWorkflowStatus(crashCase.runId)))
  await runtime.start("scripted", "Follow the script.", { runId: crashCase.runId });
let result: unknown;
try {
  result = await runtime.retrieve(crashCase.runId).result();
} catch (error) {
  result = { failed: (error as Error).message };
}
console.log(JSON.stringify(result));
await runtime.shutdown();
