import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type ChatMessage, isRecord, validateChatMessages } from "./chat-messages.js";
import { fakeReplyProblem, shown } from "./fake-reply.js";

export interface FakeToolCall {
  id: string;
  name: string;
  /** JSON text, or fragments streamed one per chunk */
  arguments: string | string[];
}

export interface FakeReply {
  /** Answer text, or chunks streamed one per SSE event. */
  text?: string | string[];
  /** Streamed as `delta.reasoning_content`. */
  reasoning?: string | string[];
  toolCalls?: FakeToolCall[];
  /** Default: `tool_calls` if there are tool calls, else `stop`. */
  finishReason?: "stop" | "tool_calls" | "length";
  /** Default: zero tokens. */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Reply with this HTTP status and an OpenAI-style error body instead of a completion. */
  error?: {
    status: number;
    message: string;
    type?: string;
    /** Extra response headers, e.g. `{ "retry-after-ms": "0" }` so SDK retries do not wait. */
    headers?: Record<string, string>;
  };
  /** Delay before each SSE chunk, ms (default 0). */
  chunkDelayMs?: number;
}

export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  tools?: unknown[];
  stream?: boolean;
  [key: string]: unknown;
}

export interface FakeOpenAIServer {
  /** Base URL to pass as `baseURL` (ends with /v1). */
  readonly baseURL: string;
  /** Every request body received on /v1/chat/completions, in order (also the rejected ones). */
  readonly requests: ChatCompletionRequest[];
  /** Ends open connections (including streams in progress) and stops listening. Idempotent. */
  close(): Promise<void>;
}

export interface FakeOpenAIServerOptions {
  /**
   * Produces the answer to a valid request. `index` is the request's position in `requests`, so
   * `server.requests[index] === request`; it is not called for requests rejected as invalid. When
   * it throws, or returns no `FakeReply` object, or one with a field of the wrong type (or a field
   * `FakeReply` does not have), the request gets a 500 whose message says so, naming the field.
   */
  reply: (request: ChatCompletionRequest, index: number) => FakeReply | Promise<FakeReply>;
}

interface OpenAIError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

interface ServerState {
  readonly requests: ChatCompletionRequest[];
  readonly reply: FakeOpenAIServerOptions["reply"];
  completionCount: number;
}

const COMPLETIONS_PATH = "/v1/chat/completions";

/** Starts the server on 127.0.0.1 with an OS-assigned port. */
export async function startFakeOpenAIServer(options: FakeOpenAIServerOptions): Promise<FakeOpenAIServer> {
  checkOptions(options);
  const state: ServerState = { requests: [], reply: options.reply, completionCount: 0 };
  const server = createServer((req, res) => {
    handleRequest(state, req, res).catch((error: unknown) => failRequest(res, error));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests: state.requests,
    close: () => {
      closing ??= closeServer(server);
      return closing;
    },
  };
}

// Refused at the start: a server without its callback would answer every request with a 500
// saying "state.reply is not a function", far from the options that caused it.
function checkOptions(options: unknown): asserts options is FakeOpenAIServerOptions {
  if (!isRecord(options))
    throw new TypeError(`startFakeOpenAIServer takes { reply }, got ${shown(options)}.`);
  const unknown = Object.keys(options).find((key) => key !== "reply");
  if (unknown !== undefined)
    throw new TypeError(`startFakeOpenAIServer has no option "${unknown}" (known: reply).`);
  if (typeof options.reply !== "function")
    throw new TypeError(`startFakeOpenAIServer: reply must be a function, got ${typeof options.reply}.`);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    // Keep-alive sockets and unfinished streams would otherwise hold close() open indefinitely.
    server.closeAllConnections();
  });
}

async function handleRequest(state: ServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
  if (req.method !== "POST" || path !== COMPLETIONS_PATH) {
    sendError(res, 404, invalidRequest(`Invalid URL (${req.method} ${path})`, null));
    return;
  }
  const request = parseRequest(await readBody(req));
  if (!request) {
    sendError(res, 400, invalidRequest("We could not parse the JSON body of your request.", null));
    return;
  }
  const index = state.requests.push(request) - 1;
  const invalid = validateChatMessages(request.messages);
  if (invalid) {
    sendError(res, 400, invalidRequest(invalid, "messages"));
    return;
  }
  const reply = await callReply(state, request, index);
  if (reply.error) {
    const { status, message, type = defaultErrorType(status), headers } = reply.error;
    sendError(res, status, { message, type, param: null, code: null }, headers);
    return;
  }
  state.completionCount += 1;
  const meta = { id: `chatcmpl-${state.completionCount}`, created: nowSeconds(), model: request.model };
  if (request.stream === true) {
    await streamCompletion(res, streamChunks(reply, meta, wantsUsage(request)), reply.chunkDelayMs ?? 0);
  } else {
    sendJson(res, 200, completion(reply, meta));
  }
}

/**
 * The callback's reply, checked: the 500 a test sees for a bad one says what the callback did
 * (threw, returned no object, or a field of the wrong type, named), not where the server tripped.
 */
async function callReply(
  state: ServerState,
  request: ChatCompletionRequest,
  index: number,
): Promise<FakeReply> {
  let reply: unknown;
  try {
    reply = await state.reply(request, index);
  } catch (error) {
    throw new Error(`the reply callback threw: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  if (!isRecord(reply))
    throw new TypeError(`the reply callback returned ${shown(reply)}, not a FakeReply object`);
  const problem = fakeReplyProblem(reply);
  if (problem !== undefined)
    throw new TypeError(`the reply callback returned a malformed FakeReply: ${problem}`);
  return reply as FakeReply;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Any JSON object is accepted here: validation reports what is wrong with it, like the real API. */
function parseRequest(body: string): ChatCompletionRequest | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return isRecord(parsed) ? (parsed as ChatCompletionRequest) : undefined;
  } catch {
    return undefined;
  }
}

function wantsUsage(request: ChatCompletionRequest): boolean {
  const streamOptions = request.stream_options;
  return isRecord(streamOptions) && streamOptions.include_usage === true;
}

function invalidRequest(message: string, param: string | null): OpenAIError {
  return { message, type: "invalid_request_error", param, code: null };
}

function defaultErrorType(status: number): string {
  if (status === 429) return "rate_limit_exceeded";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

/** An exception (e.g. from the reply callback) becomes a 500 the test can see, never an unhandled rejection. */
function failRequest(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const message = `Fake OpenAI server failed: ${error instanceof Error ? error.message : String(error)}`;
  sendError(res, 500, { message, type: "server_error", param: null, code: null });
}

function sendError(
  res: ServerResponse,
  status: number,
  error: OpenAIError,
  headers?: Record<string, string>,
): void {
  sendJson(res, status, { error }, headers);
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed) return;
  res.writeHead(status, { ...headers, "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

interface CompletionMeta {
  id: string;
  created: number;
  model: string;
}

function completion(reply: FakeReply, meta: CompletionMeta): object {
  const message = {
    role: "assistant",
    content: reply.text === undefined ? null : joined(reply.text),
    ...(reply.reasoning === undefined ? {} : { reasoning_content: joined(reply.reasoning) }),
    ...(reply.toolCalls?.length ? { tool_calls: reply.toolCalls.map(completeToolCall) } : {}),
  };
  return {
    ...meta,
    object: "chat.completion",
    choices: [{ index: 0, message, finish_reason: finishReason(reply) }],
    usage: usage(reply),
  };
}

function completeToolCall(call: FakeToolCall): object {
  return { id: call.id, type: "function", function: { name: call.name, arguments: joined(call.arguments) } };
}

function streamChunks(reply: FakeReply, meta: CompletionMeta, includeUsage: boolean): object[] {
  const envelope = { ...meta, object: "chat.completion.chunk" };
  const choice = (delta: object, finish_reason: string | null = null) => ({
    ...envelope,
    choices: [{ index: 0, delta, finish_reason }],
  });
  const chunks: object[] = [
    ...streamDeltas(reply).map((delta) => choice(delta)),
    choice({}, finishReason(reply)),
  ];
  // With include_usage the real API sends one more chunk, without choices, carrying the usage.
  if (includeUsage) chunks.push({ ...envelope, choices: [], usage: usage(reply) });
  return chunks;
}

/** The deltas in the order a real model produces them; the first one also announces the role. */
function streamDeltas(reply: FakeReply): object[] {
  const [first = { content: "" }, ...rest] = [
    ...fragments(reply.reasoning).map((reasoning_content) => ({ reasoning_content })),
    ...fragments(reply.text).map((content) => ({ content })),
    ...(reply.toolCalls ?? []).flatMap(toolCallDeltas),
  ];
  return [{ role: "assistant", ...first }, ...rest];
}

function toolCallDeltas(call: FakeToolCall, index: number): object[] {
  const opening = { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } };
  return [
    { tool_calls: [opening] },
    ...fragments(call.arguments).map((part) => ({ tool_calls: [{ index, function: { arguments: part } }] })),
  ];
}

async function streamCompletion(res: ServerResponse, chunks: object[], delayMs: number): Promise<void> {
  if (res.destroyed) return;
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  // Send the headers now, like the real API, so the client sees the response before the first delay ends.
  res.flushHeaders();
  for (const chunk of chunks) {
    if (delayMs > 0) await pause(delayMs, res);
    // The client may have gone away (abort) or close() may have cut the connection meanwhile.
    if (res.destroyed) return;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  res.end("data: [DONE]\n\n");
}

/** Waits `ms`, or less if the connection closes first, so no timer outlives its connection. */
function pause(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once("close", done);
  });
}

function finishReason(reply: FakeReply): string {
  return reply.finishReason ?? (reply.toolCalls?.length ? "tool_calls" : "stop");
}

function usage(reply: FakeReply): object {
  const { prompt_tokens, completion_tokens } = reply.usage ?? { prompt_tokens: 0, completion_tokens: 0 };
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

function fragments(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [value] : value;
}

function joined(value: string | string[]): string {
  return typeof value === "string" ? value : value.join("");
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
