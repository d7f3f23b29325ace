import {
  chmodSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentMessage } from "@agent-core/core";
import { afterAll, describe, expect, it, vi } from "vitest";
import { loadConversation, saveConversation } from "./conversation-file.js";

// A write that fails part-way, as on a full disk: it writes half of what it was given, then throws.
const failing = vi.hoisted(() => ({ on: false }));
vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs/promises")>();
  return {
    ...fs,
    writeFile: async (file: string, text: string) => {
      if (!failing.on) return fs.writeFile(file, text);
      await fs.writeFile(file, text.slice(0, text.length >> 1));
      throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    },
  };
});

const dir = mkdtempSync(join(tmpdir(), "agent-core-save-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const first: AgentMessage[] = [{ role: "user", content: "first", timestamp: 1 }];
const longer: AgentMessage[] = Array.from({ length: 50 }, (_, i) => ({
  role: "user" as const,
  content: `message ${i}`,
  timestamp: i,
}));

describe("/save that fails part-way", () => {
  it("leaves the file it would replace as it was, and no partial file beside it", async () => {
    const file = join(dir, "chat.json");
    await saveConversation(file, first);
    const before = readFileSync(file, "utf8");
    failing.on = true;
    try {
      await expect(saveConversation(file, longer)).rejects.toThrow(`${file}: could not write it (ENOSPC).`);
    } finally {
      failing.on = false;
    }
    expect(readFileSync(file, "utf8")).toBe(before);
    expect(await loadConversation(file)).toEqual(first);
    expect(readdirSync(dir)).toEqual(["chat.json"]);
  });

  it("a save that works replaces the file whole", async () => {
    const file = join(dir, "whole.json");
    writeFileSync(file, "old text that is not a conversation");
    await saveConversation(file, longer);
    expect(await loadConversation(file)).toEqual(longer);
    expect(readdirSync(dir).sort()).toEqual(["chat.json", "whole.json"]);
  });
});

describe("/save over a file that exists", () => {
  it("keeps the file's permissions: a private conversation stays private", async () => {
    const file = join(dir, "private.json");
    writeFileSync(file, "{}");
    chmodSync(file, 0o600);
    await saveConversation(file, first);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(await loadConversation(file)).toEqual(first);
  });

  it("through a symbolic link saves the file it points to, and the link stays a link", async () => {
    const target = join(dir, "target.json");
    const link = join(dir, "link.json");
    writeFileSync(target, "{}");
    symlinkSync(target, link);
    await saveConversation(link, first);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(await loadConversation(target)).toEqual(first);
  });
});
