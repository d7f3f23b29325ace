import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { startFakeOpenAIServer } from "@agent-core/testing";
import { expect, it } from "vitest";

// A model that fails (here a server refusing the key) ends each example with the reason on stderr
// and exit code 1, as a user adapting it to their own model needs: not a bare "stop reason: error"
// (or, for mcp-tools, a blank answer and exit 0).
it.each(["default-agentic", "plan-execute", "custom-orchestrator", "mcp-tools"])(
  "examples/%s reports a failed run with its error and exits 1",
  async (example) => {
    const server = await startFakeOpenAIServer({
      reply: () => ({ error: { status: 401, message: "Incorrect API key provided" } }),
    });
    try {
      const folder = join(import.meta.dirname, "..", "examples", example);
      const failure = await promisify(execFile)(
        process.execPath,
        ["--import", "tsx", "--conditions=@agent-core/source", join(folder, "main.ts")],
        {
          cwd: folder,
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
  },
);
