// How many terminal cells text takes: what the input line needs to put the cursor back after the
// output's unfinished line. ANSI styles take none; East Asian wide characters and most emoji take
// two; combining marks and zero-width characters take none. An approximation of wcwidth, enough
// for the model's text and the renderer's symbols.

const ESC = String.fromCharCode(27);
const ANSI_SEQUENCE = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, "g");

const WIDE: [from: number, to: number][] = [
  [0x1100, 0x115f],
  [0x2e80, 0x303e],
  [0x3041, 0x33ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xa000, 0xa4cf],
  [0xac00, 0xd7a3],
  [0xf900, 0xfaff],
  [0xfe30, 0xfe4f],
  [0xff00, 0xff60],
  [0xffe0, 0xffe6],
  [0x1f300, 0x1f64f],
  [0x1f900, 0x1f9ff],
  [0x20000, 0x3fffd],
];

const ZERO_WIDTH: [from: number, to: number][] = [
  [0x0300, 0x036f],
  [0x200b, 0x200f],
  [0xfe00, 0xfe0f],
];

const TAB_STOP = 8;

export function stripAnsi(text: string): string {
  return text.replace(ANSI_SEQUENCE, "");
}

/** The cells one character takes. */
export function charWidth(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x20 || (code >= 0x7f && code < 0xa0)) return 0;
  if (ZERO_WIDTH.some(([from, to]) => code >= from && code <= to)) return 0;
  return WIDE.some(([from, to]) => code >= from && code <= to) ? 2 : 1;
}

/**
 * The column the cursor is at after writing `text` from column `start` (0-based, not wrapped):
 * a newline goes back to 0, a tab to the next tab stop.
 */
export function columnAfter(start: number, text: string): number {
  let column = start;
  for (const char of stripAnsi(text)) {
    if (char === "\n" || char === "\r") column = 0;
    else if (char === "\t") column += TAB_STOP - (column % TAB_STOP);
    else column += charWidth(char);
  }
  return column;
}
