import type { z } from "zod";
import { describeIssues, type ParsedArgs, parseArgs } from "../tools/parse-args.js";

/**
 * Finds the JSON value in a model's text: the whole text, else the first fenced block
 * (```json or bare ```), else the first balanced {...} or [...] in the prose. Models that were
 * asked for JSON still wrap it in fences or sentences; providers without a JSON mode always may.
 */
export function extractJson(text: string): unknown {
  const trimmed = text.trim();
  const candidates = [trimmed, ...fencedBlocks(trimmed), ...balancedValues(trimmed)];
  for (const candidate of candidates) {
    try {
      return JSON.parse(candidate);
    } catch {
      // try the next candidate
    }
  }
  throw new SyntaxError(trimmed === "" ? "the reply was empty" : "the reply contains no JSON value");
}

export type StructuredParse<T> = { success: true; value: T } | { success: false; error: string };

/**
 * Extracts JSON from the text and validates it; the error says what to fix, for a retry prompt.
 * A schema that validates asynchronously (an async refinement) answers with a promise.
 */
export function parseStructured<T>(
  schema: z.ZodType<T>,
  text: string,
): StructuredParse<T> | Promise<StructuredParse<T>> {
  let json: unknown;
  try {
    json = extractJson(text);
  } catch (error) {
    return { success: false, error: `Not valid JSON: ${(error as Error).message}.` };
  }
  const parsed = parseArgs(schema, json);
  return parsed instanceof Promise ? parsed.then(structuredOf<T>) : structuredOf<T>(parsed);
}

function structuredOf<T>(parsed: ParsedArgs): StructuredParse<T> {
  if (parsed.success) return { success: true, value: parsed.data as T };
  return { success: false, error: `The JSON does not match the schema: ${describeIssues(parsed.error)}.` };
}

function fencedBlocks(text: string): string[] {
  return [...text.matchAll(/```[a-zA-Z]*\s*\n?([\s\S]*?)```/g)].map((match) => (match[1] as string).trim());
}

/** Each top-level {...} or [...] span, found by bracket matching that skips strings. */
function balancedValues(text: string): string[] {
  const values: string[] = [];
  for (let start = 0; start < text.length; start++) {
    const open = text[start];
    if (open !== "{" && open !== "[") continue;
    const end = matchingBracket(text, start);
    if (end !== -1) {
      values.push(text.slice(start, end + 1));
      start = end;
    }
  }
  return values;
}

function matchingBracket(text: string, start: number): number {
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "{") stack.push("}");
    else if (char === "[") stack.push("]");
    else if (char === "}" || char === "]") {
      if (stack.pop() !== char) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}
