import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { startFakeOpenAIServer } from "@agent-core/testing";
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

// A model that fails (here a server refusing the key) ends the example with its message and a
// non-zero exit code, as the other examples do, rather than a blank answer and exit 0.
it("reports a failed run with its error and exits non-zero", async () => {
  const server = await startFakeOpenAIServer({
    reply: () => ({ error: { status: 401, message: "Incorrect API key provided" } }),
  });
  try {
    const failure = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--conditions=@agent-core/source", join(import.meta.dirname, "main.ts")],
      {
        cwd: import.meta.dirname,
        env: { ...process.env, OPENAI_API_KEY: "sk-wrong", OPENAI_BASE_URL: server.baseURL },
        timeout: 30_000,
      },
    ).then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toContain("stop reason: error");
    expect(failure?.stderr).toContain("Incorrect API key provided");
  } finally {
    await server.close();
  }
});
