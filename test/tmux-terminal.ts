import { execFileSync, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

// A real pseudo-terminal for end-to-end tests of interactive commands: a tmux pane, driven with
// send-keys and read with capture-pane. Each terminal has a tmux server of its own (its own
// socket), so tests never touch a person's tmux sessions, nor each other's.

const SESSION = "test";

function hasTmux(): boolean {
  return spawnSync("tmux", ["-V"], { stdio: "ignore" }).status === 0;
}

/** A fresh Debian machine may have no tmux: the same script as CI installs it (apt-get). */
export function ensureTmux(): void {
  if (hasTmux()) return;
  execFileSync("bash", [fileURLToPath(new URL("../scripts/install-tmux.sh", import.meta.url))], {
    stdio: "inherit",
  });
  if (!hasTmux()) throw new Error("No tmux: apt-get install -y tmux.");
}

export interface TerminalOptions {
  cwd: string;
  /** Set for the command (a tmux server hands new panes its own environment, not the caller's). */
  env?: Record<string, string>;
  /** Removed from the command's environment. */
  unset?: string[];
  columns?: number;
  rows?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `argv` running in a terminal of `columns` × `rows`. When it exits, the pane shows
 * "[exited <code>]" and stays open for reading.
 */
export class TmuxTerminal {
  readonly #socket: string;

  private constructor(socket: string) {
    this.#socket = socket;
  }

  static start(argv: string[], options: TerminalOptions): TmuxTerminal {
    ensureTmux();
    const socket = `agent-core-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const env = Object.entries(options.env ?? {}).map(([name, value]) => `${name}=${value}`);
    const unset = (options.unset ?? []).flatMap((name) => ["-u", name]);
    const command = ["env", ...unset, ...env, ...argv].map(shellQuote).join(" ");
    const terminal = new TmuxTerminal(socket);
    terminal.#tmux(
      "new-session",
      "-d",
      "-s",
      SESSION,
      "-x",
      String(options.columns ?? 120),
      "-y",
      String(options.rows ?? 40),
      "-c",
      options.cwd,
      `${command}; echo "[exited $?]"; sleep 600`,
    );
    return terminal;
  }

  /** Types text as it is (no key names). */
  type(text: string): void {
    this.#tmux("send-keys", "-t", SESSION, "-l", text);
  }

  /** Pastes text as a terminal does, in bracketed-paste markers when the program asked for them. */
  paste(text: string): void {
    this.#tmux("set-buffer", "-b", "paste", "--", text);
    this.#tmux("paste-buffer", "-p", "-d", "-b", "paste", "-t", SESSION);
  }

  /** Presses keys by tmux name: "Enter", "Escape", "C-c", "C-d", "Left", … */
  press(...keys: string[]): void {
    this.#tmux("send-keys", "-t", SESSION, ...keys);
  }

  /** The whole pane and its scrollback as text, wrapped lines joined, trailing blanks trimmed. */
  screen(): string {
    const text = this.#tmux("capture-pane", "-p", "-J", "-S", "-", "-t", SESSION);
    return text.replace(/[ \t]+$/gm, "").trimEnd();
  }

  /** The row the cursor is on now, as shown. */
  cursorLine(): string {
    const row = Number(this.#tmux("display-message", "-p", "-t", SESSION, "#{cursor_y}").trim());
    const lines = this.#tmux("capture-pane", "-p", "-t", SESSION).split("\n");
    return (lines[row] ?? "").trimEnd();
  }

  /**
   * Waits until `expected` holds (text in the screen `times` times, a pattern in it, or a check of
   * it); returns the screen. Fails with the screen in the message after `timeoutMs`.
   */
  async waitFor(
    expected: string | RegExp | ((screen: string) => boolean),
    { timeoutMs = 20_000, times = 1 }: { timeoutMs?: number; times?: number } = {},
  ): Promise<string> {
    const holds = (screen: string) => {
      if (typeof expected === "function") return expected(screen);
      if (typeof expected !== "string") return expected.test(screen);
      return screen.split(expected).length - 1 >= times;
    };
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.screen();
      if (holds(screen)) return screen;
      if (Date.now() > deadline)
        throw new Error(
          `Timed out after ${timeoutMs} ms waiting for ${String(expected)}; the screen:\n${screen}`,
        );
      await sleep(100);
    }
  }

  /** Stops the command and the tmux server of this terminal. */
  kill(): void {
    spawnSync("tmux", ["-L", this.#socket, "-f", "/dev/null", "kill-server"], { stdio: "ignore" });
  }

  #tmux(...args: string[]): string {
    // -f /dev/null: the person's ~/.tmux.conf (key bindings, history size) plays no part.
    return execFileSync("tmux", ["-L", this.#socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  }
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
