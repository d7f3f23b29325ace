import { type ScriptedModel, type ScriptPart, script, scriptedModel } from "@agent-core/testing";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";

/** Model calls one chat's model plays (a scripted model has a step per call). */
const MAX_CALLS = 1_000;

/**
 * The offline model of the example: every call decides its reply from what the conversation last
 * says. A user message: it asks the page where the user is (`get_location`, a client tool). The
 * location: it offers to book a table there (`book_table`, which needs the user's approval). The
 * booking's result, or its denial: it wraps up.
 */
export function createDemoModel(options: { chunkDelayMs?: number } = {}): ScriptedModel {
  const delayMs = options.chunkDelayMs ?? 30;
  const say = (text: string): ScriptPart[] =>
    text.split(/(?<= )/).flatMap((word) => [script.text(word), script.delay(delayMs)]);
  const reply = ({ prompt }: LanguageModelV4CallOptions): ScriptPart[] => {
    const last = prompt.at(-1);
    const result =
      last?.role === "tool" ? last.content.find((part) => part.type === "tool-result") : undefined;
    if (result === undefined)
      return [...say("Let me find out where you are. "), script.toolCall("get_location", {})];
    const output = "value" in result.output ? String(result.output.value) : "";
    if (result.toolName === "get_location") {
      const city = (JSON.parse(output) as { city?: string }).city ?? "your town";
      return [
        ...say(`You are in ${city}. Let me book you a table there. `),
        script.toolCall("book_table", { city, people: 2 }),
      ];
    }
    return say(output.startsWith("denied") ? "All right, I booked nothing." : "Booked! Enjoy your meal.");
  };
  return scriptedModel(Array.from({ length: MAX_CALLS }, () => reply));
}
