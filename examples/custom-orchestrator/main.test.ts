import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
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
