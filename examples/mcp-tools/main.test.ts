import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

// The example runs exactly as a user starts it (its `start` script), offline on its scripted
// session, against the real filesystem server it starts.
it("gives the agent the filesystem server's tools; the agent reads the notes and answers", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", join(import.meta.dirname, "main.ts")],
    { cwd: import.meta.dirname, env: { ...process.env, OPENAI_API_KEY: "" }, timeout: 30_000 },
  );
  expect(stdout).toContain("model: scripted session");
  expect(stdout).toMatch(
    /^tools from MCP server "files": fs_read_file, fs_read_text_file, .*fs_list_directory/m,
  );
  const calls = stdout.split("\n").filter((line) => /^ {2}[→←]/.test(line));
  expect(calls).toEqual([
    expect.stringMatching(/^ {2}→ fs_list_directory\(\{"path":".*agent-core-notes-\w+"\}\)$/),
    '  ← fs_list_directory [ok] {"content":"[FILE] todo.md"}',
    expect.stringMatching(/^ {2}→ fs_read_text_file\(\{"path":".*todo\.md"\}\)$/),
    '  ← fs_read_text_file [ok] {"content":"- buy milk\\n- call Ada about the trip\\n"}',
  ]);
  expect(stdout).toContain("[demo] Your to-do list: buy milk, and call Ada about the trip.");
  expect(stdout).toContain("stop reason: completed");
});
