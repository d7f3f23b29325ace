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
  const fifteenTimesThree = [
    '  → calculator({"expression":"15*3"})',
    '  ← calculator [ok] {"expression":"15*3","result":45}',
  ];
  // Steering skips the queued 10+5; the follow-up asks 15*3 again, and the calculator really runs
  // again: a new user message is not a repeat of the earlier call.
  expect(stdout.split("\n").filter((line) => /^ {2}[→←]/.test(line))).toEqual([
    ...fifteenTimesThree,
    '  → calculator({"expression":"10+5"})',
    expect.stringMatching(/^ {2}← calculator \[skipped\] "skipped \(steering/),
    '  → calculator({"expression":"10+5"})',
    '  ← calculator [ok] {"expression":"10+5","result":15}',
    ...fifteenTimesThree,
  ]);
  expect(stdout).toContain("↪ steering applied");
  expect(stdout).toContain("[demo] 10+5 = 15.");
  expect(stdout).toContain("[demo] 15*3 = 45.");
  expect(stdout).not.toContain("You already called");
  expect(stdout).toMatch(/stop reason: completed/);
  // Turns: the question (two calls, the second skipped) and the steering message (one call), then
  // the follow-up (one call, answered).
  expect(stdout).toMatch(
    /^history: user assistant toolResult toolResult user assistant toolResult assistant user assistant toolResult assistant$/m,
  );
});
