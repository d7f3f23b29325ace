import { setTimeout as sleep } from "node:timers/promises";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { tool } from "@langchain/core/tools";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { z } from "zod";
import { FINAL_TEXT, nextCall, PROMPT, resultText, resultValue } from "../script.js";
import type { Adapter, RunConfig } from "../types.js";

/**
 * The script as a LangChain chat model: `_generate` reads the last message and returns an `AIMessage`
 * with `tool_calls` (arguments `JSON.parse`d from the script's string) or the text "done". `bindTools`
 * returns the model itself (the script knows its one tool). `@langchain/core`'s `FakeListChatModel`
 * cannot emit tool calls.
 */
class CycleChatModel extends BaseChatModel {
  constructor(
    private readonly cycles: number,
    private readonly latencyMs: number,
  ) {
    super({});
  }

  _llmType(): string {
    return "cycle-model";
  }

  override bindTools(): this {
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const last = messages[messages.length - 1];
    let value = 0;
    if (last?.getType() === "tool") value = resultValue(String(last.content));
    const call = nextCall(value, this.cycles);
    const message = call
      ? new AIMessage({
          content: "",
          tool_calls: [{ id: call.id, name: "add", args: JSON.parse(call.args), type: "tool_call" }],
        })
      : new AIMessage({ content: FINAL_TEXT });
    return { generations: [{ text: call ? "" : FINAL_TEXT, message }] };
  }
}

/**
 * LangGraph's prebuilt ReAct agent: one `createReactAgent({ llm, tools })` graph shared by every run
 * (no checkpointer), `graph.invoke({ messages }, { recursionLimit: 2K+10 })`, the last message's text.
 */
export const langgraph: Adapter = {
  id: "langgraph",
  label: "LangGraph createReactAgent.invoke",
  packages: ["@langchain/langgraph", "@langchain/core"],
  async make(config: RunConfig) {
    const add = tool(
      ({ a, b }: { a: number; b: number }) => {
        config.onTool?.(a + b);
        return resultText(a + b, config.bigResults);
      },
      { name: "add", description: "Adds two numbers.", schema: z.object({ a: z.number(), b: z.number() }) },
    );
    const graph = createReactAgent({
      llm: new CycleChatModel(config.cycles, config.latencyMs),
      tools: [add],
    });
    const recursionLimit = 2 * config.cycles + 10;
    return async () => {
      const state = await graph.invoke({ messages: [{ role: "user", content: PROMPT }] }, { recursionLimit });
      const last = state.messages[state.messages.length - 1];
      return String(last?.content);
    };
  },
};
