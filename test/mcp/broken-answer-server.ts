/**
 * An MCP server over stdio, written by hand (the SDK's server API sends no broken answer): it
 * answers `tools/call` of `null` with `"result": null`, of `string-error` with an `"error"` that is
 * a string, and of `ok` as it should. Its stdout also carries a log line of text and one of JSON,
 * as some servers' do.
 */
import { createInterface } from "node:readline";

const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);

process.stdout.write("broken-answer server starting\n");
send({ level: 30, msg: "a JSON log line, no message of the protocol" });
for await (const line of createInterface({ input: process.stdin })) {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) continue;
  if (method === "initialize")
    send({
      jsonrpc: "2.0",
      id,
      result: {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "broken-answer", version: "1.0.0" },
      },
    });
  else if (method === "tools/list")
    send({
      jsonrpc: "2.0",
      id,
      result: {
        tools: ["null", "string-error", "ok"].map((name) => ({ name, inputSchema: { type: "object" } })),
      },
    });
  else if (method === "tools/call" && params.name === "null") send({ jsonrpc: "2.0", id, result: null });
  else if (method === "tools/call" && params.name === "string-error")
    send({ jsonrpc: "2.0", id, error: "boom" });
  else if (method === "tools/call")
    send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "ok" }] } });
  else send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
}
