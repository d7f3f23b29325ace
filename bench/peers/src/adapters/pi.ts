import { setTimeout as sleep } from "node:timers/promises";
import type { LanguageModelV4Message } from "@ai-sdk/provider";
import { Agent, type AgentTool, type StreamFn } from "@mariozechner/pi-agent-core";
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type Model,
  Type,
} from "@mariozechner/pi-ai";
import { cycleModel, slowCycleModel } from "../../../cycle-model.js";
import { FINAL_TEXT, nextCall, PROMPT, resultText, resultValue } from "../script.js";
import type { Adapter, RunConfig } from "../types.js";

const usage = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

const model: Model<"bench"> = {
  id: "cycle-model",
  name: "cycle-model",
  api: "bench",
  provider: "bench",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 1_000,
} as Model<"bench">;

/**
 * The script as a pi model: a `streamFn` returning pi's own `AssistantMessageEventStream` with the
 * minimal `[start, done]` events (pi-ai's faux provider is not used: it serialises the whole context on
 * every call). Tool-call arguments are `JSON.parse`d from the same string the v4 model streams, as a
 * real provider adapter would.
 */
function scriptStream(cycles: number): (context: Context) => AssistantMessageEventStream {
  return (context) => {
    const last = context.messages[context.messages.length - 1];
    let value = 0;
    if (last?.role === "toolResult") {
      const part = last.content[last.content.length - 1];
      value = part?.type === "text" ? resultValue(part.text) : Number.NaN;
    }
    const call = nextCall(value, cycles);
    return replyStream(
      call
        ? [{ type: "toolCall", id: call.id, name: "add", arguments: JSON.parse(call.args) }]
        : [{ type: "text", text: FINAL_TEXT }],
    );
  };
}

/** The reply as pi's message, streamed as the minimal `[start, done]` events. */
function replyStream(content: AssistantMessage["content"]): AssistantMessageEventStream {
  const toolUse = content.some((part) => part.type === "toolCall");
  const message: AssistantMessage = {
    role: "assistant",
    content,
    api: "bench",
    provider: "bench",
    model: "cycle-model",
    usage,
    stopReason: toolUse ? "toolUse" : "stop",
    timestamp: Date.now(),
  };
  const stream = createAssistantMessageEventStream();
  stream.push({ type: "start", partial: message });
  stream.push({ type: "done", reason: toolUse ? "toolUse" : "stop", message });
  return stream;
}

/**
 * The same script read through the v4 model every other variant gets (`bench/cycle-model.ts`): a
 * `streamFn` that calls its `doStream()`, reads the web `ReadableStream` it returns and builds pi's
 * message from the parts. Only the context's last message is converted to the v4 prompt, because the
 * model reads only that: the variant adds the model's stream to pi's run and nothing else.
 */
function v4Stream(cycles: number, latencyMs: number): StreamFn {
  const v4 = latencyMs > 0 ? slowCycleModel(cycles, latencyMs) : cycleModel(cycles);
  return async (_model, context) => {
    const { stream } = await v4.doStream({ prompt: [lastAsV4(context)] });
    const reader = stream.getReader();
    const content: AssistantMessage["content"] = [];
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value.type === "text-delta") text += value.delta;
      else if (value.type === "tool-call")
        content.push({
          type: "toolCall",
          id: value.toolCallId,
          name: value.toolName,
          arguments: JSON.parse(value.input),
        });
    }
    if (text !== "") content.push({ type: "text", text });
    return replyStream(content);
  };
}

function lastAsV4(context: Context): LanguageModelV4Message {
  const last = context.messages[context.messages.length - 1];
  if (last?.role === "toolResult") {
    const part = last.content[last.content.length - 1];
    return {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: last.toolCallId,
          toolName: last.toolName,
          output: { type: "text", value: part?.type === "text" ? part.text : "" },
        },
      ],
    };
  }
  return { role: "user", content: [{ type: "text", text: PROMPT }] };
}

/**
 * pi's agent loop (`@mariozechner/pi-agent-core`): a new `Agent` per run (it owns the transcript, as
 * agent-core's does), a no-op `subscribe` listener so every event is delivered as to a UI, `prompt()`,
 * then the last assistant message's text.
 */
export const pi: Adapter = {
  id: "pi",
  label: "pi agent-core",
  packages: ["@mariozechner/pi-agent-core", "@mariozechner/pi-ai"],
  make: (config) => piRuns(config, ownStream(config)),
};

/**
 * pi's loop over the v4 model's `doStream()`, as agent-core and the floor read it. For comparison only
 * (the targets are judged on `pi`): it shows what the model's web stream adds to a pi run.
 */
export const piOverV4: Adapter = {
  id: "pi-v4",
  label: "pi agent-core, model over doStream()",
  packages: ["@mariozechner/pi-agent-core", "@mariozechner/pi-ai", "@ai-sdk/provider"],
  make: (config) => piRuns(config, v4Stream(config.cycles, config.latencyMs)),
};

function ownStream(config: RunConfig): StreamFn {
  const script = scriptStream(config.cycles);
  const latency = config.latencyMs;
  return latency > 0
    ? async (_model, context) => {
        await sleep(latency);
        return script(context);
      }
    : (_model, context) => script(context);
}

async function piRuns(config: RunConfig, streamFn: StreamFn) {
  const parameters = Type.Object({ a: Type.Number(), b: Type.Number() });
  const add: AgentTool<typeof parameters> = {
    name: "add",
    label: "add",
    description: "Adds two numbers.",
    parameters,
    execute: async (_id, { a, b }) => {
      config.onTool?.(a + b);
      return {
        content: [{ type: "text", text: resultText(a + b, config.bigResults) }],
        details: undefined,
      };
    },
  };
  const listener = () => {};
  return async () => {
    const agent = new Agent({ initialState: { systemPrompt: "", model, tools: [add] }, streamFn });
    agent.subscribe(listener);
    await agent.prompt(PROMPT);
    const last = agent.state.messages[agent.state.messages.length - 1];
    if (last?.role !== "assistant") throw new Error(`pi ended on a ${last?.role} message`);
    if (last.stopReason !== "stop")
      throw new Error(`pi stopped with ${last.stopReason}: ${last.errorMessage}`);
    return last.content.map((part) => (part.type === "text" ? part.text : "")).join("");
  };
}
