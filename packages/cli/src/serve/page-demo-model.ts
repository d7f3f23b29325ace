import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4ToolResultPart,
} from "@ai-sdk/provider";
import { type DemoContent, plannedModel } from "../planned-model.js";
import { currentTurn, failureOf, field, lastUserText, resultValue } from "../prompt-reading.js";

/*
 * The page demo's offline model (`agent-core serve`): it drives the page tools from a handful of
 * phrasings, so the page shows client tools, server tools, confirmation, steering and cancelling
 * without a network. Like the CLI's demo model it pattern-matches the user's last message (a
 * steering message is one too) and marks every answer "[demo]".
 */

const MODEL_ID = "offline-page-demo";

export const PAGE_DEMO_HELP =
  '[demo] I am the offline page demo. Try: "Highlight the title", "Count the words on the page", ' +
  '"Change the title to Hello", "Highlight every paragraph" (then steer me), or "Tell me a long story" ' +
  "(then cancel it).";

const TARGETS: Record<string, string> = {
  title: "h1",
  heading: "h1",
  intro: "main p:nth-of-type(1)",
  "first paragraph": "main p:nth-of-type(1)",
  "last paragraph": "main p:nth-of-type(3)",
};

const HIGHLIGHT_ONE =
  /\bhighlight (?:only |just )?the (title|heading|intro|first paragraph|last paragraph)\b/i;
const HIGHLIGHT_ALL = /\bhighlight (?:every|all|each)(?: the)? paragraphs?\b/i;
const RENAME = /\b(?:change|rename|set) the (title|heading) to ["“]?(.+?)["”]?[.!]?$/i;
const COUNT = /\b(?:count|how many)\b.*\bwords?\b|\b(?:read|summari[sz]e) the page\b/i;
const STORY = /\b(?:long )?story\b/i;

export function createPageDemoModel(options: { chunkDelayMs?: number } = {}): LanguageModelV4 {
  return plannedModel(MODEL_ID, plan, options.chunkDelayMs ?? 0);
}

function plan(call: LanguageModelV4CallOptions, step: number): DemoContent[] {
  const text = lastUserText(call.prompt);
  const results = currentTurn(call.prompt).flatMap((message) =>
    message.role === "tool" ? message.content.filter((part) => part.type === "tool-result") : [],
  );
  const calls = (...list: [string, Record<string, unknown>][]): DemoContent[] =>
    list.map(([toolName, args], index) => ({
      type: "tool-call",
      toolCallId: `page-${step}-${index + 1}`,
      toolName,
      input: JSON.stringify(args),
    }));
  const say = (answer: string): DemoContent[] => [{ type: "text", text: `[demo] ${answer}` }];
  const failed = results.map((result) => failureOf(result.output)).find((failure) => failure !== undefined);
  if (failed !== undefined) return say(`Something went wrong on the page: ${failed}`);

  const one = HIGHLIGHT_ONE.exec(text);
  if (one) {
    const name = (one[1] as string).toLowerCase();
    const selector = TARGETS[name] as string;
    if (results.length === 0) return calls(["read_page", { selector }]);
    const read = outputOf(results, "read_page");
    if (!has(results, "highlight"))
      return calls(["count_words", { text: String(read) }], ["highlight", { selector }]);
    return say(`I highlighted the ${name}: "${read}" (${outputOf(results, "count_words")} words).`);
  }
  if (HIGHLIGHT_ALL.test(text)) {
    if (results.length === 0)
      return [
        { type: "reasoning", text: "Three paragraphs, one call each, in order." },
        ...calls(
          ["highlight", { selector: "main p:nth-of-type(1)" }],
          ["highlight", { selector: "main p:nth-of-type(2)" }],
          ["highlight", { selector: "main p:nth-of-type(3)" }],
        ),
      ];
    return say(`I highlighted ${results.length} paragraphs.`);
  }
  const rename = RENAME.exec(text);
  if (rename) {
    const title = (rename[2] as string).trim();
    if (results.length === 0) return calls(["confirm", { question: `Change the title to "${title}"?` }]);
    if (!has(results, "edit_element"))
      return field(outputOf(results, "confirm"), "confirmed") === true
        ? calls(["edit_element", { selector: "h1", text: title }])
        : say("OK, I left the title as it is.");
    return say(`Done: the title now reads "${title}".`);
  }
  if (COUNT.test(text)) {
    if (results.length === 0) return calls(["read_page", { selector: "main" }]);
    const read = String(outputOf(results, "read_page"));
    if (!has(results, "count_words")) return calls(["count_words", { text: read }]);
    return say(`The page has ${outputOf(results, "count_words")} words. It begins: "${read.slice(0, 60)}…"`);
  }
  if (STORY.test(text)) return say(LONG_STORY);
  return say(PAGE_DEMO_HELP.replace(/^\[demo\] /, ""));
}

function has(results: LanguageModelV4ToolResultPart[], toolName: string): boolean {
  return results.some((result) => result.toolName === toolName);
}

function outputOf(results: LanguageModelV4ToolResultPart[], toolName: string): unknown {
  const result = results.findLast((candidate) => candidate.toolName === toolName);
  return result && resultValue(result.output);
}

const LONG_STORY = Array.from(
  { length: 12 },
  (_, i) =>
    `Chapter ${i + 1}: the agent read the page, thought about it for a while, and wrote another sentence about what it found there.`,
).join(" ");
