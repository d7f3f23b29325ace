/** A key as Node's `readline.emitKeypressEvents` reports it. */
export interface Keypress {
  name?: string;
  ctrl?: boolean;
  meta?: boolean;
  sequence?: string;
}

/**
 * The line being typed: its characters (code points, so the cursor never splits one) and the
 * cursor. Knows the editing keys of a shell's line editor; Enter, Esc, Ctrl-C and Ctrl-D are the
 * chat's to decide.
 */
export class LineEditor {
  #chars: string[] = [];
  #cursor = 0;

  get chars(): readonly string[] {
    return this.#chars;
  }

  get cursor(): number {
    return this.#cursor;
  }

  get text(): string {
    return this.#chars.join("");
  }

  get empty(): boolean {
    return this.#chars.length === 0;
  }

  /** Empties the line and returns what it held. */
  take(): string {
    const text = this.text;
    this.#chars = [];
    this.#cursor = 0;
    return text;
  }

  /** Applies an editing key; false when the key is not one (the caller decides, or ignores it). */
  edit(input: string | undefined, key: Keypress): boolean {
    if (key.ctrl) return this.#control(key.name);
    if (key.meta) return key.name === "backspace" ? this.#deleteWordBefore() : false;
    switch (key.name) {
      case "left":
        return this.#moveTo(this.#cursor - 1);
      case "right":
        return this.#moveTo(this.#cursor + 1);
      case "home":
        return this.#moveTo(0);
      case "end":
        return this.#moveTo(this.#chars.length);
      case "backspace":
        return this.#delete(this.#cursor - 1, this.#cursor);
      case "delete":
        return this.#delete(this.#cursor, this.#cursor + 1);
    }
    return input !== undefined && this.#insert(input);
  }

  #control(name: string | undefined): boolean {
    switch (name) {
      case "a":
        return this.#moveTo(0);
      case "e":
        return this.#moveTo(this.#chars.length);
      case "b":
        return this.#moveTo(this.#cursor - 1);
      case "f":
        return this.#moveTo(this.#cursor + 1);
      case "h":
        return this.#delete(this.#cursor - 1, this.#cursor);
      case "u":
        return this.#delete(0, this.#cursor);
      case "k":
        return this.#delete(this.#cursor, this.#chars.length);
      case "w":
        return this.#deleteWordBefore();
      default:
        return false;
    }
  }

  /**
   * Printable text only: a pasted newline or tab becomes a space, other control characters go, and
   * an escape sequence (a key without a name) is not text at all.
   */
  #insert(input: string): boolean {
    if (input.includes("\x1b")) return false;
    const chars = [...input.replace(/[\t\r\n]/g, " ")].filter((char) => char >= " " && char !== "\x7f");
    if (chars.length === 0) return false;
    this.#chars.splice(this.#cursor, 0, ...chars);
    this.#cursor += chars.length;
    return true;
  }

  #moveTo(position: number): boolean {
    this.#cursor = Math.min(Math.max(position, 0), this.#chars.length);
    return true;
  }

  #delete(from: number, to: number): boolean {
    const start = Math.max(from, 0);
    const end = Math.min(to, this.#chars.length);
    if (start < end) {
      this.#chars.splice(start, end - start);
      this.#cursor = start;
    }
    return true;
  }

  /** Ctrl-W: the spaces before the cursor, then the word before them. */
  #deleteWordBefore(): boolean {
    let start = this.#cursor;
    while (start > 0 && this.#chars[start - 1] === " ") start--;
    while (start > 0 && this.#chars[start - 1] !== " ") start--;
    return this.#delete(start, this.#cursor);
  }
}
