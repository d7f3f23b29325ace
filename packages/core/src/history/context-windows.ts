/**
 * Context windows of common models, in tokens, so a context budget can default to a share of
 * the model's window. Matched by the start of the model id (after any "provider/" prefix);
 * the longest match wins. Models not listed need `contextWindow` or `maxTokens`.
 */
const CONTEXT_WINDOWS: readonly [prefix: string, tokens: number][] = [
  ["gpt-4o", 128_000],
  ["gpt-4.1", 1_047_576],
  ["gpt-4-turbo", 128_000],
  ["gpt-4", 8_192],
  ["gpt-3.5-turbo", 16_385],
  ["gpt-5", 400_000],
  ["o1", 200_000],
  ["o3", 200_000],
  ["o4-mini", 200_000],
  ["claude-", 200_000],
  ["gemini-1.5", 1_048_576],
  ["gemini-2", 1_048_576],
  ["llama3", 128_000],
  ["llama-3", 128_000],
  ["mistral-large", 128_000],
  ["qwen2.5", 32_768],
  ["deepseek-", 64_000],
];

export function knownContextWindow(modelId: string): number | undefined {
  const id = modelId.slice(modelId.lastIndexOf("/") + 1).toLowerCase();
  let best: [string, number] | undefined;
  for (const entry of CONTEXT_WINDOWS)
    if (id.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  return best?.[1];
}
