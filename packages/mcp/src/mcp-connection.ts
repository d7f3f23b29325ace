import { errorMessage, onAbortShared, type Tool } from "@agent-core/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResult,
  CallToolResultSchema,
  ErrorCode,
  McpError,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import {
  brokenAnswerOf,
  isStreamEndedError,
  isUnaddressedError,
  notResumedReasonOf,
  postUnansweredReasonOf,
} from "./broken-answers.js";
import { McpServerError } from "./mcp-server-error.js";
import { agentToolsOf, type McpToolsOptions } from "./mcp-tools.js";
import { schemaIssuesOf } from "./schema-issues.js";

/** The `Client` method (private in its types) that `listTools()` keeps a page's output schemas with. */
interface SdkToolCache {
  cacheToolMetadata(tools: McpTool[]): void;
}

/** More pages than any server's tools need, and fewer than would stall `tools()` for long. */
const MAX_TOOL_PAGES = 100;

/**
 * A connected MCP server. `tools()` lists its tools as agent-core tools; `close()` ends the
 * connection (and a stdio server's process). It is `AsyncDisposable`: `await using mcp = await
 * connectMcp(…)` closes it when the scope that uses the agent ends.
 */
export class McpConnection implements AsyncDisposable {
  /** The SDK's client, for what agent-core does not map (resources, prompts). */
  readonly client: Client;
  /** How tool errors and `McpServerError`s name this server. */
  readonly name: string;
  readonly #callTimeoutMs: number;
  /** Why calls can no longer be made, once they cannot. */
  #ended: string | undefined;

  constructor(client: Client, name: string, callTimeoutMs: number) {
    this.client = client;
    this.name = name;
    this.#callTimeoutMs = callTimeoutMs;
    client.onclose = () => {
      this.#ended ??= "its connection closed";
    };
  }

  /**
   * The server's tools now (every page of its list), as agent-core tools that call it. Tools that
   * can only run as MCP tasks are left out. Throws an `McpServerError` when the list cannot be had
   * or a tool cannot be offered to a model; an `InvalidConfigError` for a prefix no tool name can have.
   */
  async tools(options: McpToolsOptions = {}): Promise<Tool[]> {
    return agentToolsOf(this, await this.#listTools(), options);
  }

  async #listTools(): Promise<McpTool[]> {
    const tools: McpTool[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    let pages = 1;
    if (this.#ended !== undefined)
      throw new McpServerError(this.name, `could not list its tools: it is not connected: ${this.#ended}`);
    try {
      // A server whose pages never end would have tools() read, and grow, forever.
      for (; ; pages++) {
        const page = await this.client.listTools(cursor === undefined ? undefined : { cursor });
        tools.push(...page.tools);
        cursor = page.nextCursor;
        if (cursor === undefined) break;
        if (cursors.has(cursor))
          throw new Error(`its tools/list gave the cursor ${JSON.stringify(cursor)} twice`);
        if (pages === MAX_TOOL_PAGES) throw new Error(`its tools/list goes on past ${MAX_TOOL_PAGES} pages`);
        cursors.add(cursor);
      }
    } catch (error) {
      const problem = this.#sessionEndedBy(error) ? `it ${this.#endSession()}` : listingProblem(error, pages);
      throw new McpServerError(this.name, `could not list its tools: ${problem}`, {
        cause: error,
      });
    }
    // The SDK keeps each listed tool's output schema, to check its results by, but from the last
    // page only: it forgets the earlier pages' on reading the next. Given every page, it keeps all.
    (this.client as unknown as SdkToolCache).cacheToolMetadata(tools);
    return tools;
  }

  /**
   * Calls a tool by its MCP name. Aborting `signal` cancels the call (MCP's
   * `notifications/cancelled`, with the signal's reason) and rejects with that reason; a call the
   * server does not answer within `callTimeoutMs` is cancelled too. Rejects with an `Error` saying
   * what happened when the connection is gone or the server answers with a protocol error.
   */
  async callTool(name: string, args: unknown, signal: AbortSignal): Promise<CallToolResult> {
    if (this.#ended !== undefined)
      throw new Error(`The MCP server "${this.name}" is not connected: ${this.#ended}.`);
    const started = performance.now();
    const call = callSignal(signal);
    // The SDK checks an error result's structuredContent against the tool's outputSchema too, and
    // throws its mismatch: the server's own error would be lost. The answer is kept to return it.
    let answer: CallToolResult | undefined;
    // A schema that parses as CallToolResultSchema does (its type, for the SDK's parameter).
    const answerKept = CallToolResultSchema.transform((result) => {
      answer = result;
      return result;
    }) as unknown as typeof CallToolResultSchema;
    try {
      // This result schema parses a current CallToolResult, never the 2024-10-07 shape.
      return (await this.client.callTool({ name, arguments: args as Record<string, unknown> }, answerKept, {
        signal: call.signal,
        timeout: this.#callTimeoutMs,
      })) as CallToolResult;
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (answer?.isError === true) return answer;
      if (this.#sessionEndedBy(error))
        throw new Error(`The MCP server "${this.name}" ${this.#endSession()}.`);
      throw this.#callError(name, error, performance.now() - started);
    } finally {
      call.dispose();
    }
  }

  /**
   * Whether `error` is the server forgetting the session: MCP's Streamable HTTP answers 404 to a
   * request whose `Mcp-Session-Id` it no longer knows, and the client must start a new session.
   */
  #sessionEndedBy(error: unknown): boolean {
    const { transport } = this.client;
    return (
      error instanceof StreamableHTTPError &&
      error.code === 404 &&
      transport !== undefined &&
      transport.sessionId !== undefined
    );
  }

  /** Closes the connection the server ended the session of, and says so. */
  #endSession(): string {
    // The SDK would send every later request with the forgotten session id, to be refused again.
    this.#ended ??= "it ended the session; call connectMcp() again";
    void this.client.close().catch(() => {});
    return "ended the session (it answered 404 Not Found to a request of the session): the connection is closed; call connectMcp() again";
  }

  /**
   * The SDK reports a closed connection as -32000 and its own timeout as -32001, codes a server
   * may send too (both are in JSON-RPC's server-error range): they mean that only when the
   * connection did close, or the call's time did run out; otherwise the server's own message says it.
   */
  #callError(name: string, error: unknown, elapsedMs: number): Error {
    const postUnanswered = postUnansweredReasonOf(error);
    if (postUnanswered !== undefined)
      return new Error(
        `The MCP server "${this.name}" answered the POST of its call of "${name}" without the answer: ${postUnanswered}.`,
      );
    const notResumed = notResumedReasonOf(error);
    if (notResumed !== undefined)
      return new Error(
        `The MCP server "${this.name}" ended the event stream of its answer to "${name}" without the answer, and it was not resumed: ${notResumed}.`,
      );
    if (isStreamEndedError(error))
      return new Error(
        `The MCP server "${this.name}" ended the event stream of its answer to "${name}" without the answer.`,
      );
    if (isUnaddressedError(error))
      return new Error(
        `The MCP server "${this.name}" failed the call with an error that names no request (JSON-RPC's "id": null, for a request it could not read): ${errorMessage(error)}`,
      );
    if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed && this.#ended !== undefined)
      return new Error(`The MCP server "${this.name}" went away during the call: ${this.#ended}.`);
    if (
      error instanceof McpError &&
      error.code === ErrorCode.RequestTimeout &&
      elapsedMs >= this.#callTimeoutMs - 1
    )
      return new Error(
        `The MCP server "${this.name}" did not answer "${name}" within ${this.#callTimeoutMs} ms (callTimeoutMs); the call was cancelled.`,
      );
    // The SDK checks the result against MCP's schema and throws zod's issues as JSON, which the
    // model would read as its tool's result: they are told as `content[0].type: …` instead. An
    // answer that is no JSON-RPC answer at all (`"result": null`) is told so too.
    const issues = schemaIssuesOf(brokenAnswerOf(error) ?? error);
    if (issues !== undefined)
      return new Error(
        `The MCP server "${this.name}" answered "${name}" with a result that breaks the MCP schema: ${issues}`,
      );
    return new Error(`The MCP server "${this.name}" failed the call: ${errorMessage(error)}`);
  }

  /** Ends the connection; a stdio server's process is ended too. Calls made afterwards get an error result. */
  async close(): Promise<void> {
    this.#ended ??= "it was closed";
    await this.client.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * A signal of the call's own that `signal` aborts until `dispose()`. The SDK never removes the
 * listener it adds to a request's signal: given a run's signal, every call it answered would stay
 * on it, and the run's abort would send `notifications/cancelled` for each of them.
 */
function callSignal(signal: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  const call = new AbortController();
  if (signal.aborted) {
    call.abort(signal.reason);
    return { signal: call.signal, dispose: () => {} };
  }
  // One listener on the caller's signal for all its calls: a batch shares its run's signal.
  return { signal: call.signal, dispose: onAbortShared(signal, () => call.abort(signal.reason)) };
}

/**
 * Why a tools/list failed. The SDK checks each page against MCP's schema and throws zod's issues as
 * JSON (an entry with no `name`, an `inputSchema` whose `type` is not "object"): they are told as
 * `tools[1].inputSchema.type: …` instead.
 */
function listingProblem(error: unknown, page: number): string {
  const issues = schemaIssuesOf(brokenAnswerOf(error) ?? error);
  if (issues === undefined) return errorMessage(error);
  // An entry's index is its page's: past the first page, the page is named too.
  const where = page > 1 ? `, on page ${page}` : "";
  return `its tools/list answer breaks the MCP schema${where}: ${issues}`;
}
