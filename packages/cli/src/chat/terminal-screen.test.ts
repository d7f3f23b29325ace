import { describe, expect, it } from "vitest";
import { columnAfter, stripAnsi } from "./cell-width.js";
import { TerminalScreen } from "./terminal-screen.js";

const ERASE = "\r\x1b[K";

/** A screen over a recorder of what it writes, each write one entry. */
function screenOf(columns = 80) {
  const writes: string[] = [];
  const screen = new TerminalScreen({ columns, write: (text: string) => writes.push(text) });
  return { screen, writes };
}

const input = (chars: string, cursor = [...chars].length) => ({ prompt: "> ", chars: [...chars], cursor });

describe("TerminalScreen", () => {
  it("draws the input line where output would go, with the cursor in it", () => {
    const { screen, writes } = screenOf();
    screen.setInput(input("abc", 1));
    expect(writes).toEqual(["> abc\x1b[4G"]);
  });

  it("writes output above the input line, which goes below an unfinished line and back", () => {
    const { screen, writes } = screenOf();
    screen.setInput(input("ab"));
    screen.output.write("hello");
    // Erased, the output written, the input line drawn on the row below the unfinished line.
    expect(writes[1]).toBe(`${ERASE}hello\n> ab\x1b[5G`);
    screen.output.write(" world\n");
    // Erased, then a row up and to column 6, where "hello" stopped.
    expect(writes[2]).toBe(`${ERASE}\x1b[1A\x1b[6G world\n> ab\x1b[5G`);
  });

  it("continues a line that filled its last row exactly from the input line's row", () => {
    const { screen, writes } = screenOf(10);
    screen.setInput(input(""));
    screen.output.write("0123456789");
    screen.output.write("x");
    expect(writes[2]).toBe(`${ERASE}x\n> \x1b[3G`);
  });

  it("shows the end of a line too long for the terminal, keeping the cursor in view", () => {
    const { screen, writes } = screenOf(10);
    screen.setInput(input("abcdefghij"));
    expect(writes[0]).toBe("> efghij\x1b[9G");
    screen.setInput(input("abcdefghij", 0));
    expect(writes[1]).toBe(`${ERASE}> abcdefg\x1b[3G`);
  });

  it("holds a line of its own until the streamed line ends, so the model's text stays whole", () => {
    const { screen, writes } = screenOf();
    screen.writeLine("first");
    screen.output.write("streaming");
    screen.writeLine("↪ queued: stop");
    screen.output.write(" text");
    screen.output.write("\n");
    screen.output.write("■ completed\n");
    expect(writes.join("")).toBe("first\nstreaming text\n↪ queued: stop\n■ completed\n");
  });

  it("close() removes the input line and leaves the cursor at the start of a line", () => {
    const { screen, writes } = screenOf();
    screen.setInput(input("typed"));
    screen.output.write("partial");
    screen.close();
    expect(writes.at(-1)).toBe(`${ERASE}\x1b[1A\x1b[8G\n`);
    screen.output.write("after\n");
    expect(writes.at(-1)).toBe("after\n");
  });
});

describe("columnAfter", () => {
  it("counts cells: styles take none, wide characters two, tabs go to the next stop", () => {
    expect(columnAfter(0, "\x1b[2m· thinking\x1b[22m")).toBe(10);
    expect(columnAfter(0, "你好!")).toBe(5);
    expect(columnAfter(3, "\tx")).toBe(9);
    expect(columnAfter(5, "ab\ncd")).toBe(2);
    expect(columnAfter(0, "e\u0301")).toBe(1);
    expect(stripAnsi("\x1b[31mred\x1b[39m")).toBe("red");
  });
});
