import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentMessage } from "@agent-core/core";
import { afterAll, describe, expect, it } from "vitest";
import {
  ConversationFileError,
  loadConversation,
  parseConversation,
  saveConversation,
} from "./conversation-file.js";

const dir = mkdtempSync(join(tmpdir(), "agent-core-conversation-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const conversation: AgentMessage[] = [
  { role: "user", content: "What is 2+2?", timestamp: 1 },
  {
    role: "assistant",
    content: [
      { type: "thinking", text: "Needs the calculator." },
      { type: "toolCall", id: "c1", name: "calculator", args: { expression: "2+2" } },
    ],
  },
  {
    role: "toolResult",
    toolCallId: "c1",
    toolName: "calculator",
    content: "4",
    isError: false,
    status: "ok",
  },
  { role: "assistant", content: [{ type: "text", text: "4." }], stopReason: "stop" },
  { role: "app-note", text: "an app's own kind of message is kept" },
];

function problemOf(text: string): string {
  try {
    parseConversation("chat.json", text);
  } catch (error) {
    expect(error).toBeInstanceOf(ConversationFileError);
    return (error as Error).message;
  }
  throw new Error("expected a ConversationFileError");
}

describe("conversation files", () => {
  it("saves { version: 1, messages } and loads the same messages back", async () => {
    const file = join(dir, "chat.json");
    await saveConversation(file, conversation);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ version: 1, messages: conversation });
    expect(await loadConversation(file)).toEqual(conversation);
  });

  it.each([
    ["not json", "chat.json: not JSON; a conversation file is { version: 1, messages: [...] }."],
    ["[]", "chat.json: not a conversation: the file: "],
    ['{"version":2,"messages":[]}', "chat.json: not a conversation: version: "],
    ['{"version":1}', "chat.json: not a conversation: messages: "],
    ['{"version":1,"messages":[{"content":"hi"}]}', "chat.json: not a conversation: messages.0.role: "],
    [
      '{"version":1,"messages":[{"role":"user","content":5}]}',
      "chat.json: not a conversation: messages.0.content: ",
    ],
    [
      '{"version":1,"messages":[{"role":"toolResult","toolCallId":"x","toolName":"t","content":"","isError":false,"status":"ok"}]}',
      'chat.json: not a valid history: message 0: tool result "x" answers no pending tool call.',
    ],
    [
      JSON.stringify({ version: 1, messages: conversation.slice(0, 2) }),
      'chat.json: not a valid history: message 1: tool call(s) "c1" have no result before the next message.',
    ],
  ])("refuses %s with a message naming the file and the problem", (text, message) => {
    expect(problemOf(text)).toContain(message);
  });

  it("says why a file could not be read or written", async () => {
    await expect(loadConversation(join(dir, "missing.json"))).rejects.toThrow(
      `${join(dir, "missing.json")}: could not read it (no such file or directory).`,
    );
    await expect(loadConversation(dir)).rejects.toThrow("could not read it (it is a directory).");
    await expect(saveConversation(join(dir, "no", "such", "dir.json"), [])).rejects.toThrow(
      "could not write it (no such file or directory).",
    );
    writeFileSync(join(dir, "empty.json"), "");
    await expect(loadConversation(join(dir, "empty.json"))).rejects.toThrow("not JSON");
  });
});

describe("loadConversation of a file that is not a regular file", () => {
  const fifo = join(dir, "pipe.json");
  // Were the load reading the pipe, it would wait for a writer: one that opens and closes it ends that read.
  afterAll(() => {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {}
  });

  it("refuses a named pipe at once instead of waiting on it forever", async () => {
    execFileSync("mkfifo", [fifo]);
    await expect(loadConversation(fifo)).rejects.toThrow(`${fifo}: not a regular file.`);
  });
});
