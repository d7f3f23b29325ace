/**
 * The answers of `broken-answers.ts` over stdio. Its stdout also carries a log line of text and
 * one of JSON, as some servers' do.
 */
import { createInterface } from "node:readline";
import { brokenAnswerTo } from "./broken-answers.js";

const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);

process.stdout.write("broken-answer server starting\n");
send({ level: 30, msg: "a JSON log line, no message of the protocol" });
for await (const line of createInterface({ input: process.stdin })) {
  const answer = brokenAnswerTo(JSON.parse(line));
  if (answer !== undefined) send(answer);
}
