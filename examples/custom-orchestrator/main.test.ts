import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { startFakeOpenAIServer } from "@agent-core/testing";
import { expect, it } from "vitest";

// The example runs exactly as a user starts it (its `start` script), offline on its scripted session.
it("runs the custom orchestrator example end to end", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", join(import.meta.dirname, "main.ts")],
    { env: { ...process.env, OPENAI_API_KEY: "" }, timeout: 30_000 },
  );
  expect(stdout).toContain("model: scripted session");
  expect(stdout).toContain('→ calculator({"expression":"15*3"})');
  expect(stdout).toContain("[ok]");
  expect(stdout).toContain("15 × 3 = 35.");
  expect(stdout).toMatch(/◆ reflect\.critique \{"round":1,"verdict":"revise","issues":\[".+"\]\}/);
  expect(stdout).toContain('◆ reflect.revised {"round":1}');
  expect(stdout).toContain('◆ reflect.critique {"round":2,"verdict":"accept","issues":[]}');
  expect(stdout).toContain("answer: 15 × 3 = 45.");
  expect(stdout).toMatch(/stop reason: completed/);
});

// A model that fails (here a server refusing the key) ends the example with the reason on stderr
// and a non-zero exit code, not a bare "stop reason: error".
it("reports a failed run with its error and exits non-zero", async () => {
  const server = await startFakeOpenAIServer({
    reply: () => ({ error: { status: 401, message: "Incorrect API key provided" } }),
  });
  try {
    const failure = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--conditions=@agent-core/source", join(import.meta.dirname, "main.ts")],
      {
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
