import { randomBytes } from "node:crypto";
import { chmod, readFile, realpath, rename, rm, stat, writeFile } from "node:fs/promises";
import { type AgentMessage, agentMessageSchema, validateTranscript } from "@agent-core/core";
import { z } from "zod";

/** A saved conversation: `{ version: 1, messages }`, the agent's history as `agent.messages` gives it. */
const conversationSchema = z.object({ version: z.literal(1), messages: z.array(agentMessageSchema) });

/** A conversation file that could not be written, read or used; the message names the file. */
export class ConversationFileError extends Error {
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`);
    this.name = "ConversationFileError";
  }
}

/**
 * Writes the conversation beside `file` first, then renames it over `file`: a save that fails
 * part-way (a full disk, a killed process) leaves the file as it was, never half a conversation.
 * A file that exists is replaced as if written in place: through a symbolic link the file it
 * points to is saved (the link stays a link), and its permissions stay (a private file stays private).
 */
export async function saveConversation(file: string, messages: readonly AgentMessage[]): Promise<void> {
  const text = `${JSON.stringify({ version: 1, messages }, null, 2)}\n`;
  const target = await realpath(file).catch(() => file);
  const partial = `${target}.${randomBytes(4).toString("hex")}.partial`;
  try {
    const existingMode = await stat(target).then(
      (stats) => stats.mode & 0o7777,
      () => undefined,
    );
    await writeFile(partial, text);
    // Set after the write: a mode given to writeFile is narrowed by the umask.
    if (existingMode !== undefined) await chmod(partial, existingMode);
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true }).catch(() => {});
    throw new ConversationFileError(file, `could not write it (${systemReason(error)}).`);
  }
}

/** The messages of a saved conversation, checked as a history an agent can go on from. */
export async function loadConversation(file: string): Promise<AgentMessage[]> {
  let text: string;
  try {
    // A named pipe would block the read until something writes to it, and no key could stop it;
    // a device such as /dev/zero never ends. A conversation is a regular file.
    // (A directory fails the read at once, and says so.)
    const stats = await stat(file);
    if (!stats.isFile() && !stats.isDirectory()) throw new ConversationFileError(file, "not a regular file.");
    text = await readFile(file, "utf8");
  } catch (error) {
    if (error instanceof ConversationFileError) throw error;
    throw new ConversationFileError(file, `could not read it (${systemReason(error)}).`);
  }
  return parseConversation(file, text);
}

export function parseConversation(file: string, text: string): AgentMessage[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConversationFileError(
      file,
      "not JSON; a conversation file is { version: 1, messages: [...] }.",
    );
  }
  const parsed = conversationSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const where = issue.path.length === 0 ? "the file" : issue.path.map(String).join(".");
    throw new ConversationFileError(file, `not a conversation: ${where}: ${issue.message}.`);
  }
  // Tool calls and their results must pair up, or no provider accepts the history.
  const problem = validateTranscript(parsed.data.messages)[0];
  if (problem !== undefined) throw new ConversationFileError(file, `not a valid history: ${problem}.`);
  return parsed.data.messages;
}

/** "ENOENT: no such file or directory, open 'x'" says more than the code and less than the stack. */
function systemReason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  if (code === "ENOENT") return "no such file or directory";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "EISDIR") return "it is a directory";
  return code ?? message;
}
