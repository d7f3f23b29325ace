import { Readable } from "node:stream";
import type { AgentMessage } from "@agent-core/core";
import type { AgentOptions } from "../agent-options.js";
import type { CliIO } from "../cli-io.js";
import { modelFromEnv } from "../provider.js";
import { plural } from "../render.js";
import { UsageError } from "../usage-error.js";
import type { ChatSessionOptions } from "./chat-session.js";
import { ConversationFileError, loadConversation } from "./conversation-file.js";
import { runInteractiveChat, type TerminalInput } from "./interactive-chat.js";
import { runLineChat } from "./line-chat.js";

export const CHAT_USAGE =
  "agent-core chat [--load FILE] [--model NAME] [--base-url URL] [--orchestrator NAME] [--total-ms N] …";

export interface ChatCommand {
  kind: "chat";
  agent: AgentOptions;
  /** The conversation file to go on from. */
  load: string | undefined;
}

export function parseChatCommand(
  words: string[],
  values: { load?: string },
  agent: AgentOptions,
): ChatCommand {
  if (words.length > 0)
    throw new UsageError(
      `chat takes no prompt on the command line, got "${words.join(" ")}".`,
      `Type prompts once it starts. Usage: ${CHAT_USAGE}`,
    );
  if (values.load === "") throw new UsageError("--load needs a file name.", `Usage: ${CHAT_USAGE}`);
  return { kind: "chat", agent, load: values.load };
}

/**
 * A conversation: at a terminal (stdin and stdout both TTYs) keys are read live; otherwise each
 * line of stdin is a prompt or a command.
 */
export async function runChat(command: ChatCommand, io: CliIO): Promise<number> {
  const model = modelFromEnv(command.agent.modelEnv);
  const messages = command.load === undefined ? [] : await loadAtStart(command.load);
  const options: ChatSessionOptions = { agent: command.agent, model, messages };
  const color = io.stdout.isTTY === true && !io.env.NO_COLOR;
  const input: TerminalInput = io.stdin ?? Readable.from([]);
  if (input.isTTY === true && io.stdout.isTTY === true && typeof input.setRawMode === "function") {
    const banner = [
      `agent-core chat · ${model.demo ? "[demo] " : ""}${model.label}`,
      "Enter sends; while a run works, Enter steers it and Esc aborts it. /help lists the commands.",
      ...(messages.length > 0 ? [`loaded ${plural(messages.length, "message")} from ${command.load}`] : []),
    ];
    return runInteractiveChat(options, { input, output: io.stdout, color, banner, signal: io.signal });
  }
  return runLineChat(options, { input, stdout: io.stdout, stderr: io.stderr, color, signal: io.signal });
}

/** A file that cannot be used at start is bad usage: one line, exit 2, as for any other bad option. */
async function loadAtStart(file: string): Promise<AgentMessage[]> {
  try {
    return await loadConversation(file);
  } catch (error) {
    if (!(error instanceof ConversationFileError)) throw error;
    throw new UsageError(`--load ${error.message}`, "Check the file, or start without --load.");
  }
}
