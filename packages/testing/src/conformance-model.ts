import type { JSONSchema7, JSONSchema7Definition, LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { checkKeys, shownValue } from "./script-parts.js";
import { ScriptedModel, type ScriptPart, type ScriptStep, script } from "./scripted-model.js";

export const PROBE_TOOL = "probe";
export const PROBE_DESCRIPTION = "Returns its input; the conformance suite's tool.";

export interface ConformanceModelOptions {
  /** 1-based model call that never finishes (until cancelled). */
  hangOnCall?: number;
  /** 1-based model call whose `doStream()` rejects with a non-retryable error. */
  failOnCall?: number;
}

/**
 * A scripted model that suits any orchestrator, because it answers from the call itself:
 * - a structured-output call (`responseFormat: json`) gets a minimal valid instance of the
 *   requested schema; a plan-shaped schema (`steps: [{ tool, … }]`) gets one step using the probe
 *   tool, when the prompt describes that tool and holds no tool result yet;
 * - a call that offers the probe tool, when the prompt's last message is not a tool result, gets
 *   a probe call; anything else gets a short text answer.
 *
 * Options that are not an object of call numbers (an unknown key, a number given as a string)
 * are refused with a `TypeError`.
 */
export function conformanceModel(options: ConformanceModelOptions = {}): ScriptedModel {
  checkOptions(options);
  const steps: ScriptStep[] = Array.from({ length: 64 }, (_, index) => {
    const call = index + 1;
    if (call === options.failOnCall) return { throws: new Error("conformance: the provider is down") };
    return (callOptions) =>
      call === options.hangOnCall ? [script.text("…"), script.hang()] : reply(callOptions, call);
  });
  return new ScriptedModel(steps, { modelId: "conformance-model" });
}

// A misspelt option, or a call number given as a string, would be ignored: the check meant to
// hang or fail a call would then pass without it.
function checkOptions(options: unknown): asserts options is ConformanceModelOptions {
  const known = ["hangOnCall", "failOnCall"] as const;
  checkKeys(options, known, "the options", "conformanceModel");
  for (const name of known) {
    const call = (options as Record<string, unknown>)[name];
    if (call !== undefined && !(Number.isInteger(call) && (call as number) >= 1))
      throw new TypeError(
        `conformanceModel: ${name} must be a call number (an integer >= 1), got ${shownValue(call)}.`,
      );
  }
}

function reply(options: LanguageModelV4CallOptions, call: number): ScriptPart[] {
  const hasToolResult = options.prompt.some((message) => message.role === "tool");
  if (options.responseFormat?.type === "json") {
    const describesProbe = JSON.stringify(options.prompt).includes(PROBE_DESCRIPTION);
    const value = sample(options.responseFormat.schema ?? {}, {
      usePlanStep: describesProbe && !hasToolResult,
    });
    return [script.text(JSON.stringify(value))];
  }
  const offersProbe = options.tools?.some((tool) => tool.name === PROBE_TOOL) ?? false;
  if (offersProbe && options.prompt.at(-1)?.role !== "tool")
    return [script.reasoning("Probing."), script.toolCall(PROBE_TOOL, { n: call }, { id: `probe-${call}` })];
  return [script.text("Conformance ", "answer.")];
}

/** The smallest value a JSON Schema accepts (required properties only, empty arrays, first enum). */
function sample(schema: JSONSchema7Definition, context: { usePlanStep: boolean }): unknown {
  if (typeof schema === "boolean") return {};
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const option = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (option !== undefined) return sample(option, context);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  switch (type) {
    case "object":
      return sampleObject(schema, context);
    case "array":
      return [];
    case "string":
      return "ok";
    case "number":
    case "integer":
      return typeof schema.minimum === "number" ? schema.minimum : 0;
    case "boolean":
      return true;
    default:
      return null;
  }
}

function sampleObject(schema: JSONSchema7, context: { usePlanStep: boolean }): Record<string, unknown> {
  const properties = schema.properties ?? {};
  const steps = properties.steps;
  const stepItems = typeof steps === "object" && !Array.isArray(steps.items) ? steps.items : undefined;
  const isPlan = typeof stepItems === "object" && stepItems.properties?.tool !== undefined;
  if (isPlan && context.usePlanStep) return { steps: [{ id: "p1", tool: PROBE_TOOL, args: { n: 1 } }] };
  const value: Record<string, unknown> = {};
  for (const key of schema.required ?? []) value[key] = sample(properties[key] ?? {}, context);
  return value;
}
