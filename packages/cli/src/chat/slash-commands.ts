/** What a line starting with "/" asks for; `argument` is the rest of the line, trimmed. */
export interface SlashCommand {
  name: string;
  argument: string;
}

/** The help of `/help`, and of `agent-core --help` for chat. */
export const CHAT_KEYS_HELP = `Enter sends a prompt; while a run works, Enter sends a steering message (queued, the run
takes it at its next step), /save, /load, /history and /reset wait for it to end, and Esc or
Ctrl-C aborts it. Ctrl-C twice or Ctrl-D on an empty line exits.
  /save FILE   save the conversation as JSON ({ "version": 1, "messages": [...] })
  /load FILE   replace the conversation with a saved one
  /history     list the conversation's messages
  /reset       start a new conversation
  /help        this help
  /exit        leave (Ctrl-D too)
`;

/** The command a line asks for, or undefined for a prompt (a line not starting with "/"). */
export function parseSlashCommand(line: string): SlashCommand | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith("/")) return undefined;
  const match = /^\/(\S*)\s*(.*)$/s.exec(trimmed) as RegExpExecArray;
  return { name: (match[1] as string).toLowerCase(), argument: (match[2] as string).trim() };
}
