import { setTimeout as sleep } from "node:timers/promises";
import { Agent, type AgentTool, type StreamFn } from "@mariozechner/pi-agent-core";
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type Model,
  Type,
} from "@mariozechner/pi-ai";
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
    const message: AssistantMessage = {
      role: "assistant",
      content: call
        ? [{ type: "toolCall", id: call.id, name: "add", arguments: JSON.parse(call.args) }]
        : [{ type: "text", text: FINAL_TEXT }],
      api: "bench",
      provider: "bench",
      model: "cycle-model",
      usage,
      stopReason: call ? "toolUse" : "stop",
      timestamp: Date.now(),
    };
    const stream = createAssistantMessageEventStream();
    stream.push({ type: "start", partial: message });
    stream.push({ type: "done", reason: call ? "toolUse" : "stop", message });
    return stream;
  };
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
  async make(config: RunConfig) {
    const script = scriptStream(config.cycles);
    const latency = config.latencyMs;
    const streamFn: StreamFn =
      latency > 0
        ? async (_model, context) => {
            await sleep(latency);
            return script(context);
          }
        : (_model, context) => script(context);
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
  },
};
