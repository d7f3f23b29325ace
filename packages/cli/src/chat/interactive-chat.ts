import { emitKeypressEvents } from "node:readline";
import { styled } from "../render.js";
import { ChatSession, type ChatSessionOptions, type ChatView } from "./chat-session.js";
import { type Keypress, LineEditor } from "./line-editor.js";
import { type TerminalOutput, TerminalScreen } from "./terminal-screen.js";

const BRACKETED_PASTE_ON = "\x1b[?2004h";
const BRACKETED_PASTE_OFF = "\x1b[?2004l";

/** The keyboard: a terminal's stdin, which can be switched to raw mode to read single keys. */
export interface TerminalInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

export interface ChatTerminal {
  input: TerminalInput;
  output: TerminalOutput;
  color: boolean;
  /** The lines printed before the first prompt. */
  banner: string[];
  /** Aborting it (a SIGINT from outside: in raw mode Ctrl-C is a key) ends the chat. */
  signal?: AbortSignal;
}

/**
 * The chat at a terminal: keys are read one by one (raw mode), the line being typed stays below
 * the live view, Enter sends it (a prompt, or a steering message while a run works), Esc or
 * Ctrl-C aborts the run, and Ctrl-C twice, Ctrl-D on an empty line or /exit leaves.
 * Resolves with the exit code once the terminal is back as it was.
 */
export function runInteractiveChat(options: ChatSessionOptions, terminal: ChatTerminal): Promise<number> {
  const { input, color } = terminal;
  const screen = new TerminalScreen(terminal.output);
  const editor = new LineEditor();
  const view: ChatView = {
    out: screen.output,
    color,
    echo: (line) => screen.writeLine(`${styled(color, "bold", "you ›")} ${line}`),
    notice: (text) => screen.writeLine(styled(color, "dim", text)),
    problem: (text) => screen.writeLine(styled(color, "red", `✗ ${text}`)),
    runningChanged: () => redraw(),
  };
  const session = new ChatSession(options, view);
  let closing = false;
  let exitArmed = false;
  /** Inside a bracketed paste: its line breaks are text, not Enter. */
  let pasting = false;

  function redraw(): void {
    if (closing) return;
    const prompt = session.running ? styled(color, "cyan", "steer › ") : styled(color, "bold", "you › ");
    screen.setInput({ prompt, chars: editor.chars, cursor: editor.cursor });
  }

  return new Promise<number>((resolve) => {
    const close = async () => {
      if (closing) return;
      closing = true;
      // The run is aborted; commands typed during it are still carried out, then the chat ends.
      await session.leave();
      input.off("keypress", onKey);
      input.off("end", close);
      input.off("error", close);
      terminal.signal?.removeEventListener("abort", close);
      input.setRawMode?.(false);
      input.pause();
      screen.close();
      terminal.output.write(BRACKETED_PASTE_OFF);
      resolve(0);
    };

    const submit = () => {
      const line = editor.take();
      redraw();
      session.enter(line).then(
        (outcome) => (outcome === "exit" ? close() : redraw()),
        (error: unknown) => {
          view.problem(error instanceof Error ? error.message : String(error));
          redraw();
        },
      );
    };

    /** Ctrl-C: aborts the run; when idle, clears the line and arms, and a second Ctrl-C leaves. */
    const interrupt = () => {
      if (session.abort()) return;
      if (exitArmed) return void close();
      exitArmed = true;
      editor.take();
      view.notice("(Ctrl-C again to exit)");
      redraw();
    };

    const onKey = (text: string | undefined, key: Keypress = {}) => {
      if (closing) return;
      if (key.name === "paste-start" || key.name === "paste-end") {
        pasting = key.name === "paste-start";
        return;
      }
      if (pasting) {
        // Pasted text is text: a line break joins the lines with a space (one, for "\r\n"), as a
        // prompt is one line, and a pasted Esc, Ctrl-C or Ctrl-D neither aborts nor exits.
        const lineBreak = key.name === "return" || key.name === "enter";
        if (lineBreak && editor.chars[editor.cursor - 1] === " ") return;
        const pasted = lineBreak ? " " : (key.sequence ?? text ?? "").split("\x1b").join("");
        if (editor.edit(pasted, {})) redraw();
        return;
      }
      const afterEsc = keyAfterEsc(key);
      if (afterEsc !== undefined) {
        onKey(undefined, { name: "escape" });
        return onKey(afterEsc.sequence, afterEsc);
      }
      if (key.ctrl && key.name === "c") return interrupt();
      exitArmed = false;
      if (key.name === "escape") {
        session.abort();
        return;
      }
      if (key.ctrl && key.name === "d") {
        if (editor.empty) return void close();
        editor.edit(undefined, { name: "delete" });
        return redraw();
      }
      if (key.name === "return" || key.name === "enter") return submit();
      if (editor.edit(text, key)) redraw();
    };

    emitKeypressEvents(input);
    input.setRawMode?.(true);
    // The terminal marks pasted text, so that a paste of several lines is not sent line by line.
    terminal.output.write(BRACKETED_PASTE_ON);
    input.on("keypress", onKey);
    input.once("end", close);
    input.once("error", close);
    if (terminal.signal?.aborted) return void close();
    terminal.signal?.addEventListener("abort", close, { once: true });
    for (const line of terminal.banner) view.notice(line);
    redraw();
    input.resume();
  });
}

/**
 * Esc is a lone "\x1b", and Node waits 500 ms for what may follow it: a key typed in that time
 * comes as one "meta" (Alt) key, "\x1b/" for Esc then "/". The chat has no Alt keys but
 * Alt-Backspace, so such a key is Esc (which must abort the run) and then the key itself, whose
 * character must not be lost. Returns that key, or undefined for any other.
 */
function keyAfterEsc(key: Keypress): Keypress | undefined {
  const { meta, name, sequence } = key;
  if (!meta || name === "escape" || name === "backspace" || sequence?.startsWith("\x1b") !== true)
    return undefined;
  const rest = sequence.slice(1);
  return rest === "" ? undefined : { ...key, meta: false, sequence: rest };
}
