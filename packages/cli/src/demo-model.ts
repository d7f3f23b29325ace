import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4ToolCall,
  LanguageModelV4ToolResultPart,
} from "@ai-sdk/provider";
import { type DemoContent, plannedModel } from "./planned-model.js";
import {
  currentTurn,
  failureOf,
  field,
  lastUserText,
  parseJson,
  resultValue,
  toolCallInputs,
  userTexts,
} from "./prompt-reading.js";

/*
 * The offline demo model: what the CLI talks to when no API key is set, so that `agent-core run` shows the
 * whole loop (reasoning, tool calls, tool results, a streamed answer) without a network or an account.
 * It does not understand language; it pattern-matches the last user message, and every answer it gives is
 * marked "[demo]" so nobody mistakes it for a real model.
 */

const MODEL_ID = "offline-demo";
const CALCULATOR = "calculator";
const CURRENT_TIME = "get_current_time";

const HELP_TEXT =
  '[demo] I am the offline demo model of agent-core: I can do arithmetic with the calculator (try "What is ' +
  '(2+3)*4?"), tell the time and recall what you asked before ("What did I ask before?"). Set ' +
  "OPENAI_API_KEY (and optionally OPENAI_BASE_URL, AGENT_CORE_MODEL) to talk to a real model.";

const TIME_QUESTION = /\b(time|date|day|clock|today)\b/i;

// A question about the conversation itself: the demo's one way to show that it sees the history.
const RECALL_QUESTION = /\b(earlier|before|previous|previously|so far)\b/i;

// Numbers joined by at least one binary operator, with signs and parentheses; spaces are allowed only
// around operators and parentheses, so "3*4. 5 apples" yields "3*4", not "3*4.5".
const NUMBER = String.raw`\d+(?:\.\d+)?`;
const OPEN = String.raw`(?:[-+(]\s*)*`;
const CLOSE = String.raw`(?:\s*\))*`;
const OPERATOR = String.raw`\s*[-+*/%^×÷]\s*`;
const EXPRESSION = new RegExp(`${OPEN}${NUMBER}(?:${CLOSE}${OPERATOR}${OPEN}${NUMBER})+${CLOSE}`, "g");

/**
 * A deterministic `LanguageModelV4` that needs no network. `chunkDelayMs` waits between stream parts so a
 * person watching the CLI sees the answer stream in.
 */
export function createDemoModel(options: { chunkDelayMs?: number } = {}): LanguageModelV4 {
  return plannedModel(MODEL_ID, plan, options.chunkDelayMs ?? 0);
}

/** Report tool results if they just came back; else call tools if the question needs them; else explain. */
function plan(call: LanguageModelV4CallOptions, step: number): DemoContent[] {
  if (call.responseFormat?.type === "json") return structuredPlan(call, step);
  const turn = currentTurn(call.prompt);
  const results = turn.flatMap((message) =>
    message.role === "tool" ? message.content.filter((part) => part.type === "tool-result") : [],
  );
  if (results.length > 0) {
    const inputs = toolCallInputs(turn);
    const answer = sentence(results.map((result) => describeResult(result, inputs.get(result.toolCallId))));
    return [{ type: "text", text: `[demo] ${answer}` }];
  }
  const offered = new Set(call.tools?.map((tool) => tool.name));
  const question = lastUserText(call.prompt);
  const toolCalls = planToolCalls(question, offered, step);
  if (toolCalls.length > 0) return toolCalls;
  if (RECALL_QUESTION.test(question)) return [{ type: "text", text: recall(call.prompt) }];
  return [{ type: "text", text: HELP_TEXT }];
}

/** The user's earlier messages, read back from the prompt: what a chat's history looks like to a model. */
function recall(prompt: LanguageModelV4CallOptions["prompt"]): string {
  const earlier = userTexts(prompt).slice(0, -1);
  if (earlier.length === 0) return "[demo] This is the first thing you asked me in this conversation.";
  return `[demo] Before this you asked: ${joinList(earlier.map((text) => `"${text}"`))}.`;
}

/**
 * A planner's call (JSON mode): the same tool steps the model would call, as a plan of the shape
 * plan-execute asks for. The tools are the ones the planning prompt lists. Once this turn has
 * results, the call is a replanning one, whose last user message is the planner's request, not a
 * question: it plans what the user's steering asks, if they steered, and nothing otherwise.
 */
function structuredPlan(call: LanguageModelV4CallOptions, step: number): DemoContent[] {
  const system = call.prompt.find((message) => message.role === "system")?.content ?? "";
  const listed = new Set([CALCULATOR, CURRENT_TIME].filter((name) => system.includes(`- ${name}:`)));
  const turn = sinceLastAnswer(call.prompt);
  const afterResults = turn.slice(turn.findLastIndex((message) => message.role === "tool") + 1);
  const question =
    afterResults.length === turn.length ? lastUserText(call.prompt) : steeringText(afterResults);
  const calls = planToolCalls(question, listed, step);
  const steps = calls
    .filter((part) => part.type === "tool-call")
    .map((part, index) => ({ id: `s${index + 1}`, tool: part.toolName, args: parseJson(part.input) }));
  return [{ type: "text", text: JSON.stringify({ steps }) }];
}

/**
 * The messages after the last answer (an assistant message without tool calls): this turn's, where
 * the results of earlier turns of a conversation, already answered, are not.
 */
function sinceLastAnswer(prompt: LanguageModelV4CallOptions["prompt"]): LanguageModelV4CallOptions["prompt"] {
  const answered = prompt.findLastIndex(
    (message) => message.role === "assistant" && !message.content.some((part) => part.type === "tool-call"),
  );
  return prompt.slice(answered + 1);
}

/** The user's steering among a replanning call's last messages: all but the planner's request. */
function steeringText(messages: LanguageModelV4CallOptions["prompt"]): string {
  return userTexts(messages.slice(0, -1)).at(-1) ?? "";
}

function planToolCalls(text: string, offered: Set<string>, step: number): DemoContent[] {
  const expressions = offered.has(CALCULATOR) ? extractExpressions(text) : [];
  const wantsTime = offered.has(CURRENT_TIME) && TIME_QUESTION.test(text);
  if (expressions.length === 0 && !wantsTime) return [];
  const needs = expressions.length > 0 ? [`the calculator for ${joinList(expressions)}`] : [];
  const calls: { toolName: string; args: Record<string, string> }[] = expressions.map((expression) => ({
    toolName: CALCULATOR,
    args: { expression },
  }));
  if (wantsTime) {
    needs.push("the current time");
    calls.push({ toolName: CURRENT_TIME, args: {} });
  }
  return [
    { type: "reasoning", text: `The question needs ${joinList(needs)}.` },
    ...calls.map(
      ({ toolName, args }, index): LanguageModelV4ToolCall => ({
        type: "tool-call",
        toolCallId: `demo-${step}-${index + 1}`,
        toolName,
        input: JSON.stringify(args),
      }),
    ),
  ];
}

/** "What is 15 * 3 and (10+5)?" gives ["15*3", "(10+5)"]. */
function extractExpressions(text: string): string[] {
  return [...text.matchAll(EXPRESSION)].map((match) => trimUnbalanced(match[0].replace(/\s+/g, "")));
}

/** Drops parentheses that belong to the prose around the expression, as in "(for example 2+3)". */
function trimUnbalanced(expression: string): string {
  let trimmed = expression;
  const depth = (text: string) => text.split("(").length - text.split(")").length;
  while (depth(trimmed) < 0 && trimmed.endsWith(")")) trimmed = trimmed.slice(0, -1);
  while (depth(trimmed) > 0 && trimmed.startsWith("(")) trimmed = trimmed.slice(1);
  return trimmed;
}

function describeResult(result: LanguageModelV4ToolResultPart, rawInput: unknown): string {
  const input = typeof rawInput === "string" ? parseJson(rawInput) : rawInput;
  const failure = failureOf(result.output);
  if (failure !== undefined) {
    if (result.toolName === CALCULATOR)
      return `I could not compute ${field(input, "expression")}: ${failure}`;
    if (result.toolName === CURRENT_TIME) return `I could not get the current time: ${failure}`;
    return `${result.toolName} failed: ${failure}`;
  }
  const value = resultValue(result.output);
  if (result.toolName === CALCULATOR)
    return `${field(input, "expression") ?? field(value, "expression")} = ${field(value, "result") ?? value}`;
  if (result.toolName === CURRENT_TIME) {
    const datetime = field(value, "datetime");
    if (datetime === undefined) return `the current time is ${value}`;
    return `the current time is ${datetime} (${field(value, "timezone")})`;
  }
  return `${result.toolName} returned ${JSON.stringify(value)}`;
}

/** ["a", "b", "c"] gives "A, b and c." */
function sentence(clauses: string[]): string {
  const text = joinList(clauses);
  const capitalized = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(capitalized) ? capitalized : `${capitalized}.`;
}

function joinList(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}
