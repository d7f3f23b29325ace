import { appendFileSync } from "node:fs";
import { type ScriptPart, script, scriptedModel } from "@agent-core/testing";
import { Agent, defineTool } from "agent-core";
import { z } from "zod";
import type { CrashCase } from "./crash-fuzz-case.js";

/**
 * The agent a crash fuzz case runs (in a worker process, or in the test for the uninterrupted run
 * it is compared with). Every model call and every run of a tool with a side effect appends a line
 * to the case's log file, `<what> <id> <pid>`, so the test can count them per process.
 */
export function scriptedAgent(crashCase: CrashCase): Agent {
  const log = (what: string, id: string | number) =>
    appendFileSync(crashCase.logFile, `${what} ${id} ${process.pid}\n`);

  /**
   * A tool with a side effect: the line is written first, so a crash during its pause runs it
   * again. `guarded` is the same behind an approval (`beforeToolCall` below).
   */
  const effectTool = (name: string) =>
    defineTool({
      name,
      description: "Does something once per run of it",
      inputSchema: z.object({ ms: z.number(), fails: z.boolean() }),
      execute: async ({ ms, fails }, { toolCallId }) => {
        log("tool", toolCallId);
        await new Promise((resolve) => setTimeout(resolve, ms));
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
   * the run goes on with the script: the scripted turns, then the final text, then "ok" for any
   * reply the messages sent during the run ask for.
   */
  const reply = (options: { prompt: { role: string }[] }): ScriptPart[] => {
    const index = options.prompt.filter((message) => message.role === "assistant").length;
    log("model", index);
    const turn = crashCase.turns[index];
    if (turn !== undefined)
      return turn.calls.map((call, c) => {
        const id = `t${index}c${c}`;
        if (call.kind === "client") return script.toolCall("page", {}, { id });
        const name = call.kind === "approval" ? "guarded" : "effect";
        return script.toolCall(name, { ms: call.ms, fails: call.fails }, { id });
      });
    if (index > crashCase.turns.length) return [script.text("ok")];
    const { chunks, pauseMs } = crashCase.final;
    return chunks.flatMap((chunk, i) =>
      i === 0 ? [script.text(chunk)] : [script.delay(pauseMs), script.text(chunk)],
    );
  };

  return new Agent({
    provider: scriptedModel(Array.from({ length: 50 }, () => reply)),
    tools: [effectTool("effect"), effectTool("guarded"), page],
    toolExecution: crashCase.execution,
    beforeToolCall: ({ call }) => (call.name === "guarded" ? { requireApproval: true } : undefined),
  });
}
