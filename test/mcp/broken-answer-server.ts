/**
 * The answers of `broken-answers-stdio.ts` over stdio, and a call of `until-cancel` answered once a
 * `notifications/cancelled` came, which is answered first with an error that names no request. Its stdout also carries a log line of text and
 * one of JSON, as some servers' do.
 */
import { createInterface } from "node:readline";
import { brokenAnswerTo } from "./broken-answers.js";

const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);

process.stdout.write("broken-answer server starting\n");
send({ level: 30, msg: "a JSON log line, no message of the protocol" });
/** The id of a call of `until-cancel`: answered once a `notifications/cancelled` came. */
let untilCancel: string | number | undefined;
for await (const line of createInterface({ input: process.stdin })) {
  const message = JSON.parse(line);
  if (message.method === "tools/call" && message.params?.name === "until-cancel") untilCancel = message.id;
  else if (message.method === "notifications/cancelled") {
    // Against JSON-RPC's rules, a notification answered, with an error that names no request.
    send({ jsonrpc: "2.0", id: null, error: { code: -32601, message: "Method not found" } });
    send({ jsonrpc: "2.0", id: untilCancel, result: { content: [{ type: "text", text: "cancel seen" }] } });
  } else {
    const answer = brokenAnswerTo(message);
    if (answer !== undefined) send(answer);
  }
}
