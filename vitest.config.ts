import { defineConfig } from "vitest/config";

// Workspace packages resolve to their TypeScript sources through the "@agent-core/source" export
// condition, so the test command needs no build step.
export default defineConfig({
  resolve: { conditions: ["@agent-core/source"] },
  ssr: { resolve: { conditions: ["@agent-core/source"] } },
  test: {
    include: ["packages/*/src/**/*.test.ts", "test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 15_000,
    pool: "threads",
  },
});
