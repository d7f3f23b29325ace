#!/usr/bin/env node
// `pnpm bench:peers [--quick] [--only=w1,gc,w2,w3,heap] [--write|--no-write]`, from the repository root.
// bench/peers is a package of its own, outside the pnpm workspace: its peers are installed here with npm
// from its own package-lock.json, only when node_modules is missing or older than package.json or the
// lockfile. agent-core itself is not installed here: the adapters import "agent-core", which resolves to
// the workspace's link in the root node_modules, i.e. packages/agent-core/dist (the root script builds
// it first). The benchmark then runs with the root's tsx.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const stamp = join(here, "node_modules", ".bench-peers-installed");
const inputs = ["package.json", "package-lock.json"].map((f) => join(here, f));
const wanted = inputs.map((f) => readFileSync(f, "utf8")).join("\n");
if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== wanted) {
  console.error("bench/peers: installing the peer frameworks (npm ci, once) …");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: here, stdio: "inherit" });
  writeFileSync(stamp, wanted);
}
for (const dist of [
  "packages/agent-core/dist/index.js",
  "packages/core/dist/index.js",
  "packages/agentic/dist/index.js",
])
  if (!existsSync(join(root, dist)) || statSync(join(root, dist)).size === 0)
    throw new Error(`${dist} is missing: run \`pnpm build\` at the root first`);
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", join(here, "src", "main.ts"), ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: "inherit",
  },
);
process.exit(result.status ?? 1);
