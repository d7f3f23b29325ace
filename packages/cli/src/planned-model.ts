import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FinishReason,
  LanguageModelV4Reasoning,
  LanguageModelV4StreamPart,
  LanguageModelV4Text,
  LanguageModelV4ToolCall,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";

// The offline demo models (the CLI's and the page demo's) as AI SDK models: a `plan` decides each
// reply; it is streamed as a real provider would, word by word, `chunkDelayMs` apart, with
// plausible usage.

/** Decides a reply from the call; `step` is 1 for a turn's first model call, 2 after one round of tools, … */
export type ReplyPlan = (call: LanguageModelV4CallOptions, step: number) => DemoContent[];

/** A deterministic `LanguageModelV4` that needs no network: `plan` decides, this streams. */
export function plannedModel(modelId: string, plan: ReplyPlan, chunkDelayMs: number): LanguageModelV4 {
  const replyTo = (call: LanguageModelV4CallOptions): DemoReply => {
    const step = call.prompt.filter((message) => message.role === "assistant").length + 1;
    const content = plan(call, step);
    const calls = content.some((part) => part.type === "tool-call");
    return {
      step,
      content,
      finishReason: calls ? { unified: "tool-calls", raw: "tool_calls" } : { unified: "stop", raw: "stop" },
      usage: estimateUsage(call, content),
    };
  };
  return {
    specificationVersion: "v4",
    provider: "agent-core-demo",
    modelId,
    supportedUrls: {},
    async doGenerate(call) {
      call.abortSignal?.throwIfAborted();
      const { content, finishReason, usage } = replyTo(call);
      return { content, finishReason, usage, warnings: [] };
    },
    async doStream(call) {
      // Like a fetch with an aborted signal: refuse to start rather than return a stream that fails at once.
      call.abortSignal?.throwIfAborted();
      return { stream: partsStream(streamParts(replyTo(call), modelId), chunkDelayMs, call.abortSignal) };
    },
  };
}

export type DemoContent = LanguageModelV4Reasoning | LanguageModelV4Text | LanguageModelV4ToolCall;

export interface DemoReply {
  /** 1 for the first model call of a turn, 2 after one round of tool calls, ... */
  step: number;
  content: DemoContent[];
  finishReason: LanguageModelV4FinishReason;
  usage: LanguageModelV4Usage;
}

/** About 4 characters per token, the usual rule of thumb, so usage displays look plausible. */
function estimateUsage(call: LanguageModelV4CallOptions, content: DemoContent[]): LanguageModelV4Usage {
  const tokens = (text: string) => Math.ceil(text.length / 4);
  const input = tokens(JSON.stringify(call.prompt) + JSON.stringify(call.tools ?? []));
  let reasoning = 0;
  let text = 0;
  for (const part of content) {
    if (part.type === "reasoning") reasoning += tokens(part.text);
    else text += tokens(part.type === "text" ? part.text : part.input);
  }
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: text + reasoning, text, reasoning },
  };
}

function streamParts(reply: DemoReply, modelId: string): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [
    { type: "stream-start", warnings: [] },
    {
      type: "response-metadata",
      id: `demo-response-${reply.step}`,
      modelId,
      timestamp: new Date(),
    },
  ];
  for (const item of reply.content) parts.push(...contentParts(item, reply.step));
  parts.push({ type: "finish", finishReason: reply.finishReason, usage: reply.usage });
  return parts;
}

function contentParts(item: DemoContent, step: number): LanguageModelV4StreamPart[] {
  if (item.type === "tool-call") {
    const { toolCallId: id, toolName, input } = item;
    const middle = Math.ceil(input.length / 2);
    return [
      { type: "tool-input-start", id, toolName },
      { type: "tool-input-delta", id, delta: input.slice(0, middle) },
      { type: "tool-input-delta", id, delta: input.slice(middle) },
      { type: "tool-input-end", id },
      item,
    ];
  }
  const id = `demo-${step}-${item.type}`;
  const deltas = words(item.text);
  if (item.type === "reasoning")
    return [
      { type: "reasoning-start", id },
      ...deltas.map((delta) => ({ type: "reasoning-delta" as const, id, delta })),
      { type: "reasoning-end", id },
    ];
  return [
    { type: "text-start", id },
    ...deltas.map((delta) => ({ type: "text-delta" as const, id, delta })),
    { type: "text-end", id },
  ];
}

/** Each word with the whitespace after it, so the deltas concatenate back to exactly `text`. */
function words(text: string): string[] {
  return text.split(/(?<=\s)(?=\S)/);
}

/** Emits `parts` one per pull, `delayMs` apart; an abort errors the stream with the signal's reason. */
function partsStream(
  parts: LanguageModelV4StreamPart[],
  delayMs: number,
  signal: AbortSignal | undefined,
): ReadableStream<LanguageModelV4StreamPart> {
  let next = 0;
  let onAbort: (() => void) | undefined;
  const stopListening = () => {
    if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
  };
  return new ReadableStream({
    start(controller) {
      if (signal === undefined) return;
      onAbort = () => controller.error(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
    },
    async pull(controller) {
      if (next > 0 && delayMs > 0) await sleep(delayMs, signal);
      // The abort listener has already errored the stream; enqueueing now would throw.
      if (signal?.aborted) return;
      controller.enqueue(parts[next++] as LanguageModelV4StreamPart);
      if (next === parts.length) {
        stopListening();
        controller.close();
      }
    },
    cancel: stopListening,
  });
}

/** Resolves after `ms`, or as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
