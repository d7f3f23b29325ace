import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { main } from "@agent-core/cli";
import { safeParseAgentEvent } from "@agent-core/core";
// Registers the plan_* events that docs/events.md shows among the plug-in events.
import "@agent-core/plan-execute";
import { afterAll, describe, expect, it } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./dbos/throwaway-postgres.js";

// Docs are part of the feature: every ```ts block of the README, of docs/ and of each package's
// README (what npm shows) runs as written, and every ```json block of docs/events.md is a valid
// event of the protocol.

const root = join(import.meta.dirname, "..");
const outDir = join(root, "test", ".docs");
const packageDirs = readdirSync(join(root, "packages")).filter((name) =>
  existsSync(join(root, "packages", name, "package.json")),
);
const packageReadmes = packageDirs.map((name) => `packages/${name}/README.md`);
const documents = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
  ...packageReadmes.filter((file) => existsSync(join(root, file))),
];

interface Block {
  code: string;
  /** Set by a `<!-- same as <path> -->` line right above the block: it shows that file, verbatim. */
  sameAs: string | undefined;
}

function blocks(file: string, lang: string): Block[] {
  const text = readFileSync(join(root, file), "utf8");
  const pattern = new RegExp(`(?:<!-- same as (\\S+) -->\\n)?^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\``, "gm");
  return [...text.matchAll(pattern)].map((m) => ({ sameAs: m[1], code: m[2] as string }));
}

/**
 * Runs a code block as a user would: its own Node process, sources resolved through the workspace.
 * (In-process, a block whose only pending work is an unref'd timer would look fine and print nothing.)
 */
async function runBlock(name: string, code: string): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `${name}.ts`);
  writeFileSync(file, code);
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--conditions=@agent-core/source", file],
    {
      cwd: root,
      env: { ...process.env, OPENAI_API_KEY: "", NO_COLOR: "1", DATABASE_URL: await databaseUrl(name) },
      timeout: 60_000,
    },
  );
  return stdout;
}

// The blocks of the durable runtime's docs read DATABASE_URL: a throwaway cluster, started once,
// a database per block (DBOS makes it; blocks run at once, and DBOS's first launch on a database
// migrates it).
let postgres: Promise<ThrowawayPostgres> | undefined;
async function databaseUrl(block: string): Promise<string> {
  postgres ??= startPostgres();
  return (await postgres).url(`docs_${block.replace(/\W/g, "_").toLowerCase()}`);
}

afterAll(async () => {
  rmSync(outDir, { recursive: true, force: true });
  (await postgres)?.stop();
});

describe("the README", () => {
  it("has a Quick start whose first block is the demo command and the test command", () => {
    const text = readFileSync(join(root, "README.md"), "utf8");
    const quickStart = text.slice(text.indexOf("## Quick start"));
    const commands = quickStart
      .match(/```sh\n([\s\S]*?)```/)?.[1]
      ?.trim()
      .split("\n");
    expect(commands).toEqual([
      "npx -y pnpm@12.21.0 install && npx -y pnpm@12.21.0 demo",
      "npx -y pnpm@12.21.0 test",
    ]);
    const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts;
    expect(scripts.test).toBe("vitest run");
    expect(scripts.demo).toMatch(/run "What is 15\*3 and 10\+5\?"/);
  });

  it("usage example runs as a script and prints the tool calls, the answer and the stop reason", async () => {
    const [usage] = blocks("README.md", "ts");
    const output = await runBlock("readme-usage", usage?.code as string);
    expect(output).toContain('→ calculator {"expression":"15*3"}');
    expect(output).toContain('→ calculator {"expression":"10+5"}');
    expect(output).toContain("15*3 = 45 and 10+5 = 15.");
    expect(output).toMatch(/completed · \d+ tokens/);
  });
});

describe("the LICENSE and the package READMEs", () => {
  it("has an MIT LICENSE at the root, the license every package declares", () => {
    expect(readFileSync(join(root, "LICENSE"), "utf8")).toMatch(
      /^MIT License\n\nCopyright \(c\) 2026 the agent-core authors\n/,
    );
    for (const dir of packageDirs)
      expect(JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")).license, dir).toBe(
        "MIT",
      );
  });

  it.each(packageDirs)("packages/%s has a README titled with its name, with an install line", (dir) => {
    const { name } = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8"));
    const readme = join(root, "packages", dir, "README.md");
    expect(existsSync(readme), `packages/${dir}/README.md`).toBe(true);
    const text = readFileSync(readme, "utf8");
    expect(text.startsWith(`# ${name}\n`)).toBe(true);
    const installs = text.split("\n").filter((line) => line.startsWith("npm install "));
    expect(installs.some((line) => line.split(" ").includes(name))).toBe(true);
  });
});

describe("getting started", () => {
  it("suggests CLI prompts the offline demo model really answers with its tools", async () => {
    const text = readFileSync(join(root, "docs/getting-started.md"), "utf8");
    const prompts = [...text.matchAll(/bin\.js run "([^"]+)"/g)].map((m) => m[1] as string);
    expect(prompts.length).toBeGreaterThan(1);
    for (const prompt of prompts) {
      let stdout = "";
      const code = await main(["run", prompt], {
        stdout: { write: (chunk: string) => (stdout += chunk) },
        stderr: { write: () => true },
        env: { AGENT_CORE_DEMO_DELAY_MS: "0" },
      });
      expect(code, prompt).toBe(0);
      expect(stdout, prompt).toContain("→ ");
      // The demo has no notion of places or zones: a prompt naming one would get a UTC answer.
      expect(prompt).not.toMatch(/\bin [A-Z]/);
    }
  });
});

describe("docs/ and the package READMEs", () => {
  for (const file of documents.filter((f) => f !== "README.md")) {
    blocks(file, "ts").forEach(({ code, sameAs }, index) => {
      if (sameAs !== undefined) {
        it(`${file} block ${index + 1} is ${sameAs}, verbatim`, () => {
          expect(code).toBe(readFileSync(join(root, sameAs), "utf8"));
        });
        return;
      }
      // A block's `console.log(…); // "expected output"` comments are checked against what it printed.
      const expected = [...code.matchAll(/console\.log\(.*\); \/\/ "(.+)"$/gm)].map((m) => m[1] as string);
      it.concurrent(`${file} block ${index + 1} runs and prints what it says`, async () => {
        const output = await runBlock(`${file.replace(/[/.]/g, "-")}-${index + 1}`, code);
        expect(output.length).toBeGreaterThan(0);
        for (const line of expected) expect(output).toContain(line);
        // All blocks run at once, each a Node process: on two cores some wait their turn.
      }, 60_000);
    });
  }

  it("every JSON event in docs/events.md matches the protocol's schemas", () => {
    const events = blocks("docs/events.md", "json").map((block) => block.code);
    expect(events.length).toBeGreaterThan(10);
    for (const json of events) {
      const parsed = safeParseAgentEvent(JSON.parse(json));
      expect(parsed.success ? "valid" : `${json}\n${parsed.error.message}`).toBe("valid");
    }
  });
});
