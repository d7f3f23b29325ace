import type { TextSink } from "../render.js";
import { charWidth, columnAfter } from "./cell-width.js";

/** A terminal to draw on: `columns` is its width now (it may change). */
export interface TerminalOutput extends TextSink {
  columns?: number;
}

/** What the input line shows: a prompt (may be styled) and the line being typed, cursor inside it. */
export interface InputLine {
  prompt: string;
  chars: readonly string[];
  cursor: number;
}

const ERASE_LINE = "\r\x1b[K";
const DEFAULT_COLUMNS = 80;

/**
 * The chat's terminal: output (the live view of runs, notices) scrolls as in any terminal, and
 * the line being typed stays below it, redrawn after every write, so a person can type while a run
 * streams. The input line sits on the row after the output's unfinished last line; before more
 * output it is erased and the cursor goes back to where the output stopped (a row up, at the
 * column the unfinished line reached). Only relative moves are used, so scrolling never confuses
 * it, and the scrollback keeps the whole conversation.
 */
export class TerminalScreen {
  readonly #terminal: TerminalOutput;
  /** Cells of the output's unfinished last line, unwrapped; 0 when the output ended a line. */
  #column = 0;
  #input: InputLine | undefined;
  #inputShown = false;
  /** Lines to write once the output's unfinished line ends. */
  #waiting: string[] = [];

  constructor(terminal: TerminalOutput) {
    this.#terminal = terminal;
  }

  /** Where runs and notices write: above the input line. */
  readonly output: TextSink = {
    write: (text: string) => {
      if (text === "") return;
      const hide = this.#hideInput();
      this.#column = columnAfter(this.#column, text);
      this.#terminal.write(hide + text + this.#takeWaiting() + this.#showInput());
    },
  };

  /**
   * Writes a whole line of output on a line of its own. In the middle of a streamed line it waits
   * for that line to end, so a notice never cuts the model's text in two.
   */
  writeLine(text: string): void {
    this.#waiting.push(`${text}\n`);
    if (this.#column === 0) this.output.write(this.#takeWaiting());
  }

  /** Shows (or replaces) the input line. */
  setInput(input: InputLine): void {
    const hide = this.#hideInput();
    this.#input = { prompt: input.prompt, chars: input.chars.slice(), cursor: input.cursor };
    this.#terminal.write(hide + this.#showInput());
  }

  /** Removes the input line for good, leaving the cursor at the start of a line. */
  close(): void {
    const hide = this.#hideInput();
    this.#input = undefined;
    const lineEnd = this.#column > 0 ? "\n" : "";
    this.#column = 0;
    this.#terminal.write(hide + lineEnd + this.#takeWaiting());
  }

  /** The lines waiting for the output's line to end, once it has. */
  #takeWaiting(): string {
    if (this.#column > 0 || this.#waiting.length === 0) return "";
    const lines = this.#waiting.join("");
    this.#waiting = [];
    return lines;
  }

  #columns(): number {
    const columns = this.#terminal.columns;
    return columns !== undefined && columns > 1 ? columns : DEFAULT_COLUMNS;
  }

  #hideInput(): string {
    if (!this.#inputShown) return "";
    this.#inputShown = false;
    const reached = this.#column % this.#columns();
    // A line that filled its last row exactly left the cursor on the row below, where the input
    // line is: the output goes on from its start.
    if (this.#column === 0 || reached === 0) return ERASE_LINE;
    return `${ERASE_LINE}\x1b[1A\x1b[${reached + 1}G`;
  }

  #showInput(): string {
    const input = this.#input;
    if (input === undefined) return "";
    this.#inputShown = true;
    const promptWidth = columnAfter(0, input.prompt);
    // One column stays free, so the line never wraps and the cursor never waits at the edge.
    const room = Math.max(this.#columns() - promptWidth - 1, 1);
    const { chars, cursor } = input;
    const start = visibleFrom(chars, cursor, room);
    let shown = "";
    let width = 0;
    let cursorColumn = promptWidth;
    for (let index = start; index < chars.length; index++) {
      const char = chars[index] as string;
      if (width + charWidth(char) > room) break;
      if (index === cursor) cursorColumn = promptWidth + width;
      shown += char;
      width += charWidth(char);
    }
    if (cursor >= chars.length) cursorColumn = promptWidth + width;
    const lineBreak = this.#column > 0 ? "\n" : "";
    return `${lineBreak}${input.prompt}${shown}\x1b[${cursorColumn + 1}G`;
  }
}

/** The first character shown: 0 while the cursor fits, otherwise enough to keep the cursor in view. */
function visibleFrom(chars: readonly string[], cursor: number, room: number): number {
  let start = cursor;
  let width = 1;
  while (start > 0 && width + charWidth(chars[start - 1] as string) <= room) {
    start--;
    width += charWidth(chars[start] as string);
  }
  return start;
}
