/**
 * The script every framework's model follows (as `bench/cycle-model.ts` does for v4 models): stateless,
 * it reads only the last message. After the prompt it calls `add({"a":0,"b":1})` with id `c1`; after a
 * tool result v < cycles it calls `add({"a":v,"b":1})` with id `c<v+1>`; at v = cycles it answers "done".
 */
export const PROMPT = "count";
export const FINAL_TEXT = "done";

/** The tool's result text: the sum, or (W3) the sum padded with spaces to 1 KB, which `Number()` still reads. */
export function resultText(sum: number, big: boolean): string {
  const text = String(sum);
  return big ? text.padEnd(1024) : text;
}

/** The value of a tool result's text, as every model reads it. */
export function resultValue(text: string): number {
  return Number(text);
}

/** The model's next move after a result `value` (or the prompt: `value` 0). */
export function nextCall(value: number, cycles: number): { id: string; args: string } | undefined {
  if (value >= cycles) return undefined;
  return { id: `c${value + 1}`, args: `{"a":${value},"b":1}` };
}

/** Throws unless a run answered "done" after exactly `cycles` tool executions. */
export function check(name: string, text: string, toolCalls: number, cycles: number): void {
  if (text !== FINAL_TEXT) throw new Error(`${name} answered ${JSON.stringify(text)}`);
  if (toolCalls !== cycles) throw new Error(`${name} ran ${toolCalls} tool calls, expected ${cycles}`);
}
