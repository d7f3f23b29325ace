import { setTimeout as sleep } from "node:timers/promises";
import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  Runner,
  type StreamEvent,
  setTracingDisabled,
  tool,
  Usage,
} from "@openai/agents";
import { z } from "zod";
import { FINAL_TEXT, nextCall, PROMPT, resultText, resultValue } from "../script.js";
import type { Adapter, RunConfig } from "../types.js";

/**
 * The script as an Agents SDK `Model`: reads the last input item; `getStreamedResponse` yields the
 * minimal `[response_started, response_done]` (the SDK's own `ScriptedModel` is not used: it snapshots
 * every call).
 */
class CycleModel implements Model {
  constructor(
    private readonly cycles: number,
    private readonly latencyMs: number,
  ) {}

  private output(input: string | AgentInputItem[]): ModelResponse["output"] {
    let value = 0;
    if (typeof input !== "string") {
      const last = input[input.length - 1];
      if (last?.type === "function_call_result") {
        const out = last.output as unknown;
        const text =
          typeof out === "string"
            ? out
            : ((out as { text?: string } | undefined)?.text ?? String(Number.NaN));
        value = resultValue(text);
      }
    }
    const call = nextCall(value, this.cycles);
    return call
      ? [{ type: "function_call", callId: call.id, name: "add", arguments: call.args, status: "completed" }]
      : [
          {
            type: "message",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: FINAL_TEXT }],
          },
        ];
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    return {
      usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }),
      output: this.output(request.input),
    };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    yield { type: "response_started" };
    yield {
      type: "response_done",
      response: {
        id: "r",
        usage: { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 },
        output: this.output(request.input),
      },
    } as StreamEvent;
  }
}

/**
 * OpenAI's Agents SDK: one `Agent` and one `Runner` (tracing disabled) shared by every run,
 * `runner.run(agent, prompt, { stream: true, maxTurns: K+2 })`, every stream event consumed, then
 * `completed` and `finalOutput`.
 */
export const openaiAgents: Adapter = {
  id: "openai-agents",
  label: "OpenAI Agents SDK run(stream)",
  packages: ["@openai/agents"],
  async make(config: RunConfig) {
    setTracingDisabled(true);
    const add = tool({
      name: "add",
      description: "Adds two numbers.",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => {
        config.onTool?.(a + b);
        return resultText(a + b, config.bigResults);
      },
    });
    const agent = new Agent({
      name: "counter",
      instructions: "",
      model: new CycleModel(config.cycles, config.latencyMs),
      tools: [add],
    });
    const runner = new Runner({ tracingDisabled: true });
    const maxTurns = config.cycles + 2;
    return async () => {
      const result = await runner.run(agent, PROMPT, { stream: true, maxTurns });
      for await (const _event of result) {
        // a UI would render each event here
      }
      await result.completed;
      return String(result.finalOutput);
    };
  },
};
