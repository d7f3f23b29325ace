/**
 * The answers of an MCP server written by hand (the SDK's server API sends no broken answer): it
 * answers `tools/call` of `null` with `"result": null`, of `string-error` with an `"error"` that is
 * a string, of `null-id` with an error answer whose `"id"` is null (as JSON-RPC answers a request
 * it could not read), of `no-id` with one that has no `"id"` (as MCP's schema allows), of `hang`
 * never, and of `ok` as it should. Served over stdio by `broken-answer-server.ts`, and over HTTP by
 * the tests.
 */
export function brokenAnswerTo(message: {
  id?: string | number;
  method?: string;
  params?: { protocolVersion?: string; name?: string };
}): unknown {
  const { id, method, params } = message;
  if (id === undefined) return undefined; // a notification
  if (method === "initialize")
    return {
      jsonrpc: "2.0",
      id,
      result: {
        protocolVersion: params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "broken-answer", version: "1.0.0" },
      },
    };
  if (method === "tools/list")
    return {
      jsonrpc: "2.0",
      id,
      result: {
        tools: ["null", "string-error", "null-id", "no-id", "hang", "ok"].map((name) => ({
          name,
          inputSchema: { type: "object" },
        })),
      },
    };
  if (method === "tools/call" && params?.name === "null") return { jsonrpc: "2.0", id, result: null };
  if (method === "tools/call" && params?.name === "string-error")
    return { jsonrpc: "2.0", id, error: "boom" };
  if (method === "tools/call" && params?.name === "null-id")
    return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } };
  if (method === "tools/call" && params?.name === "no-id")
    return { jsonrpc: "2.0", error: { code: -32600, message: "Invalid Request" } };
  if (method === "tools/call" && params?.name === "hang") return undefined;
  if (method === "tools/call")
    return { jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "ok" }] } };
  return { jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } };
}
