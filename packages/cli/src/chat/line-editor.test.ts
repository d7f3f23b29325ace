import { describe, expect, it } from "vitest";
import { type Keypress, LineEditor } from "./line-editor.js";

/** Types each entry: a string is typed as it is, an object is a key. */
function typed(...keys: (string | Keypress)[]): LineEditor {
  const editor = new LineEditor();
  for (const key of keys) {
    if (typeof key === "string") for (const char of key) editor.edit(char, { name: char, sequence: char });
    else editor.edit(undefined, key);
  }
  return editor;
}

describe("LineEditor", () => {
  it("inserts at the cursor and moves it with the arrows, Home, End, Ctrl-A, Ctrl-E", () => {
    expect(typed("ac", { name: "left" }, "b").text).toBe("abc");
    expect(typed("bc", { name: "home" }, "a", { name: "end" }, "d").text).toBe("abcd");
    expect(typed("bc", { name: "a", ctrl: true }, "a", { name: "e", ctrl: true }, "d").text).toBe("abcd");
    const editor = typed("ab", { name: "right" }, { name: "left" }, { name: "left" }, { name: "left" });
    expect(editor.cursor).toBe(0);
  });

  it("deletes with Backspace, Delete, Ctrl-U, Ctrl-K and Ctrl-W", () => {
    expect(typed("abc", { name: "backspace" }).text).toBe("ab");
    expect(typed("abc", { name: "home" }, { name: "delete" }).text).toBe("bc");
    expect(typed("abc", { name: "left" }, { name: "u", ctrl: true }).text).toBe("c");
    expect(typed("abc", { name: "left" }, { name: "k", ctrl: true }).text).toBe("ab");
    expect(typed("what is  2+2 ", { name: "w", ctrl: true }).text).toBe("what is  ");
    expect(typed("", { name: "backspace" }).text).toBe("");
  });

  it("keeps a character made of two UTF-16 units whole, and turns pasted tabs and newlines into spaces", () => {
    const editor = typed("a😀", { name: "left" });
    expect(editor.cursor).toBe(1);
    editor.edit(undefined, { name: "delete" });
    expect(editor.text).toBe("a");
    expect(typed("a\tb\nc").text).toBe("a b c");
  });

  it("leaves keys that are not editing keys to the caller, and take() empties the line", () => {
    const editor = typed("hi");
    expect(editor.edit(undefined, { name: "up" })).toBe(false);
    expect(editor.edit("\x1b[15~", { name: "f5", sequence: "\x1b[15~" })).toBe(false);
    expect(editor.edit(undefined, { name: "x", ctrl: true })).toBe(false);
    expect(editor.take()).toBe("hi");
    expect(editor.empty).toBe(true);
    expect(editor.cursor).toBe(0);
  });
});
