import "@agent-core/agentic";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { clientDistDir, createPageDemoModel, createPageServer } from "@agent-core/cli";
import { type NodeServer, serveNode } from "@agent-core/http";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath } from "../../test/chromium.js";

// The page demo as a person uses it: headless Chromium (Debian's `chromium`) on the page that
// `agent-core serve` serves, the agent on a real HTTP server, the page tools in the browser.

const ROOT_TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));

let browser: Browser;
let server: NodeServer;
let closePage: () => void;

beforeAll(async () => {
  const executablePath = chromiumPath();
  // The page imports the client's compiled files: build them when the workspace was not built yet.
  if (!existsSync(join(clientDistDir(), "index.js")))
    execFileSync(
      process.execPath,
      [ROOT_TSC, "-b", fileURLToPath(new URL("../../packages/client", import.meta.url))],
      {
        stdio: "inherit",
      },
    );
  const page = createPageServer({
    model: createPageDemoModel({ chunkDelayMs: 15 }),
    staticDir: fileURLToPath(new URL("./public", import.meta.url)),
  });
  closePage = page.close;
  server = await serveNode(page.fetch);
  browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  closePage?.();
  await server?.close();
});

async function send(page: Page, prompt: string): Promise<void> {
  await page.fill("#prompt", prompt);
  await page.click("#send");
}

const statusIs = (page: Page, status: string) =>
  page.waitForFunction((expected) => document.querySelector("#status")?.textContent === expected, status);

describe("the page demo in Chromium", () => {
  it("streams the agent's work, runs page tools, confirms, steers and cancels", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${server.url}/`);

    // A client tool reads the page, a server tool counts, a client tool highlights; the answer streams.
    await send(page, "Highlight the title");
    await statusIs(page, "completed");
    expect(await page.getAttribute("h1", "class")).toContain("highlight");
    // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator; the rendered text is what the user reads
    const transcript = () => page.locator("#transcript").innerText();
    expect(await transcript()).toContain('→ read_page({"selector":"h1"}) in your browser');
    expect(await transcript()).toContain("→ count_words");
    expect(await transcript()).toContain("on the server");
    expect(await transcript()).toContain(
      '[demo] I highlighted the title: "Welcome to agent-core" (3 words).',
    );

    // Asking the user first: the page shows the question, the click answers the client tool.
    await send(page, "Change the title to Hello, agents");
    await page.waitForSelector("#confirm:not([hidden])");
    expect(await page.textContent("#confirm-question")).toBe('Change the title to "Hello, agents"?');
    await page.click("#confirm-yes");
    await statusIs(page, "completed");
    expect(await page.textContent("h1")).toBe("Hello, agents");

    // Steering mid-run: once the first paragraph lights up, ask for the last one instead.
    await send(page, "Highlight every paragraph");
    await page.waitForSelector("main p:nth-of-type(1).highlight");
    await page.fill("#prompt", "Stop, and highlight only the last paragraph");
    await page.click("#steer");
    await statusIs(page, "completed");
    const lit = await page.$$eval("main p", (paragraphs) =>
      paragraphs.map((p) => p.classList.contains("highlight")),
    );
    expect(lit).toEqual([true, false, true]);
    expect(await transcript()).toContain("steered: Stop, and highlight only the last paragraph");
    expect(await transcript()).toContain("← highlight: skipped");
    expect(await transcript()).toContain('→ highlight({"selector":"main p:nth-of-type(2)"}) (not run)');

    // Cancel stops the run while its answer streams.
    await send(page, "Tell me a long story");
    await page.waitForFunction(() =>
      document.querySelector("#transcript")?.textContent?.includes("Chapter 2"),
    );
    await page.click("#cancel");
    await statusIs(page, "cancelled");
    const atCancel = await transcript();
    await page.waitForTimeout(300);
    expect(await transcript()).toBe(atCancel);
    expect(atCancel).not.toContain("Chapter 12");

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}http-browser.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it("shows a run that failed, and a steer the server refused, as problems: no error escapes the page", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${server.url}/`);
    const transcript = () => page.textContent("#transcript");

    await page.route("**/runs/*/steer", (route) =>
      route.fulfill({
        status: 409,
        contentType: "application/json",
        body: JSON.stringify({ error: { code: "run-ended", message: "The run has ended." } }),
      }),
    );
    await send(page, "Highlight every paragraph");
    await page.waitForSelector("main p:nth-of-type(1).highlight");
    await page.fill("#prompt", "Only the last one");
    await page.click("#steer");
    await page.waitForFunction(() =>
      document.querySelector("#transcript")?.textContent?.includes("run-ended"),
    );
    expect(await transcript()).toContain("http: HTTP 409 run-ended: The run has ended.");
    await statusIs(page, "completed");

    await page.route("**/runs", (route) =>
      route.fulfill({
        status: 503,
        contentType: "application/json",
        body: JSON.stringify({ error: { code: "server-closing", message: "The server is closing." } }),
      }),
    );
    await send(page, "Highlight the title");
    await statusIs(page, "failed");
    expect(await transcript()).toContain("http: HTTP 503 server-closing: The server is closing.");
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
