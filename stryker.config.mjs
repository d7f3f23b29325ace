// Mutation testing: `pnpm mutation` (all files below), or `pnpm mutation --mutate <file>` for one.
// See docs/mutation-testing.md for why each setting is what it is.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  // Named by path: pnpm does not hoist the runner to where Stryker's plugin loader looks.
  plugins: ["./node_modules/@stryker-mutator/vitest-runner/dist/src/index.js"],
  vitest: { configFile: "vitest.config.ts", related: true },
  // Run only the tests that cover a mutant.
  coverageAnalysis: "perTest",
  // pnpm's workspace links point at the original packages, so a sandbox copy would test unmutated code.
  inPlace: true,
  // No `// @ts-nocheck` added to the files (in place, the originals): test/docs.test.ts compares a
  // docs block with packages/agentic/src/conformance.test.ts verbatim.
  disableTypeChecks: false,
  mutate: [
    "packages/core/src/tools/*.ts",
    "packages/core/src/model/*.ts",
    "packages/core/src/run/*.ts",
    "packages/plan-execute/src/plan.ts",
    "!**/*.test.ts",
    "!**/*.test-support.ts",
    "!**/index.ts",
  ],
  timeoutMS: 10_000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
