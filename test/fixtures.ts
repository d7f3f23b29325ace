import {
  type Agent,
  type AgentEvent,
  type AgentRun,
  defineTool,
  type MessageInput,
  type Orchestrator,
  type RunContext,
  type RunResult,
  type ToolResultMessage,
} from "@agent-core/core";
import {
  assertEventProtocol,
  assertValidTranscript,
  collectEvents,
  type FakeOpenAIServer,
  type FakeOpenAIServerOptions,
  startFakeOpenAIServer,
} from "@agent-core/testing";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { APICallError } from "@ai-sdk/provider";
import { afterEach } from "vitest";
import { z } from "zod";

// What the end-to-end tests share: the small tools their scripted models call, and the checks
// every finished run must pass.

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** "calculator": adds a and b, returning `{ result }`. */
export const calculator = defineTool({
  name: "calculator",
  description: "Evaluates a + b",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => ({ result: a + b }),
});

/** "add": adds a and b, returning the bare number. */
export const add = defineTool({
  name: "add",
  description: "a+b",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

/** "echo": returns its text. */
export const echo = defineTool({
  name: "echo",
  description: "returns its input",
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

/** "wait": waits `ms` (real time), then returns its `id`. */
export const wait = defineTool({
  name: "wait",
  description: "waits ms, then returns its id",
  inputSchema: z.object({ id: z.string(), ms: z.number() }),
  execute: async ({ id, ms }) => {
    await sleep(ms);
    return id;
  },
});

/** An orchestrator that is just its `run` function. */
export function orchestrator(run: (ctx: RunContext) => Promise<void>): Orchestrator {
  return { name: "test", run };
}

/**
 * The run's result, once its event protocol and its history have been checked. `valid: false`
 * skips the history check, for a run that suspended with its calls still open.
 */
export async function finished(run: AgentRun, { valid = true } = {}): Promise<RunResult> {
  const result = await run.result();
  assertEventProtocol(run.events);
  if (valid) assertValidTranscript(result.messages);
  return result;
}

/** Prompts the agent, reads the events as a consumer does, and checks them and the history. */
export async function runToEnd(
  agent: Agent,
  input: MessageInput | readonly MessageInput[],
): Promise<{ events: AgentEvent[]; result: RunResult }> {
  const run = agent.prompt(input);
  const events = await collectEvents(run);
  const result = await run.result();
  assertEventProtocol(events);
  assertValidTranscript(result.messages);
  return { events, result };
}

/** The tool results of a history, in order. */
export const toolResults = (messages: readonly { role: string }[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === "toolResult");

/** The error an AI SDK provider throws for an HTTP status. */
export function apiError(status: number, retryable: boolean): APICallError {
  return new APICallError({
    message: `HTTP ${status}`,
    url: "http://127.0.0.1/v1/chat/completions",
    requestBodyValues: {},
    statusCode: status,
    isRetryable: retryable,
  });
}

/**
 * A fake OpenAI-compatible server per test, closed after each, and a real AI SDK provider's model
 * talking to it over HTTP. Call it at the top of a test file.
 */
export function useFakeOpenAI() {
  let server: FakeOpenAIServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  return async (options: FakeOpenAIServerOptions) => {
    server = await startFakeOpenAIServer(options);
    const provider = createOpenAICompatible({
      name: "local",
      baseURL: server.baseURL,
      apiKey: "test-key",
      includeUsage: true,
    });
    return { model: provider("fake-model"), server };
  };
}
