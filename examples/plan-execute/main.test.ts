import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

// The example runs exactly as a user starts it (its `start` script), offline on the demo model.
it("runs the default agent with plan-execute swapped in, end to end", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", join(import.meta.dirname, "main.ts")],
    { env: { ...process.env, OPENAI_API_KEY: "", AGENT_CORE_DEMO_DELAY_MS: "0" }, timeout: 30_000 },
  );
  expect(stdout).toContain("model: offline demo model");
  // Planned up front, both steps run, then one answer.
  expect(stdout).toContain('plan: calculator({"expression":"15*3"}), calculator({"expression":"10+5"})');
  expect(stdout.split("\n").filter((line) => /^ {2}[▸✓←]/.test(line))).toEqual([
    "  ▸ step 1/2 calculator",
    '  ← calculator [ok] {"expression":"15*3","result":45}',
    "  ✓ step 1/2 done",
    "  ▸ step 2/2 calculator",
    '  ← calculator [ok] {"expression":"10+5","result":15}',
    "  ✓ step 2/2 done",
  ]);
  expect(stdout).toContain("[demo] 15*3 = 45 and 10+5 = 15.");
  expect(stdout).toMatch(/stop reason: completed/);
  expect(stdout).toMatch(/^history: user assistant toolResult toolResult assistant$/m);
});
