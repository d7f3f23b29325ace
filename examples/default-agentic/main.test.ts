import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

// The example runs exactly as a user starts it (its `start` script), offline on the demo model.
it("runs the default agentic example end to end", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", join(import.meta.dirname, "main.ts")],
    { env: { ...process.env, OPENAI_API_KEY: "", AGENT_CORE_DEMO_DELAY_MS: "0" }, timeout: 30_000 },
  );
  expect(stdout).toContain("model: offline demo model");
  expect(stdout).toContain('→ calculator({"expression":"15*3"})');
  expect(stdout).toContain("[ok]");
  expect(stdout).toContain("[skipped]");
  expect(stdout).toContain("↪ steering applied");
  expect(stdout).toMatch(/stop reason: completed/);
  expect(stdout).toMatch(
    /history: user assistant toolResult toolResult user assistant toolResult assistant user assistant toolResult assistant/,
  );
});
