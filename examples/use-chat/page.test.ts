import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath } from "../../test/chromium.js";
import { buildPage } from "./build.js";
import { serveExample } from "./server.js";

// The example as a person uses it: a React page on useChat, bundled as `pnpm start` bundles it, in
// headless Chromium, against the example's agent-core server on a real HTTP port.

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));

let browser: Browser;
let example: Awaited<ReturnType<typeof serveExample>>;

beforeAll(async () => {
  const executablePath = chromiumPath();
  await buildPage();
  example = await serveExample({ chunkDelayMs: 15 });
  browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await example?.close();
});

describe("the useChat example in Chromium", () => {
  it("streams the answer, runs the client tool in the page, and books once approved", async () => {
    // The client tool reads the browser's time zone: Oslo's, for this page.
    const page = await browser.newPage({ timezoneId: "Europe/Oslo", viewport: { width: 900, height: 700 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${example.node.url}/`);

    await page.fill("#prompt", "Book me a table for two nearby");
    await page.click("#send");
    const assistant = page.locator('[data-role="assistant"]');
    // The answer streams in, word by word.
    await expect.poll(() => assistant.textContent()).toContain("Let me find out where you are.");
    // The page's onToolCall ran get_location; its output went back in the next post, and the answer goes on.
    await page.waitForSelector('[data-tool="get_location"][data-state="output-available"]');
    expect(await page.textContent('[data-tool="get_location"]')).toContain('"city":"Oslo"');
    await expect
      .poll(() => assistant.textContent())
      .toContain("You are in Oslo. Let me book you a table there.");

    // book_table asks first: nothing is booked until the click.
    const approve = page.getByRole("button", { name: "Approve" });
    await approve.waitFor();
    expect(await page.textContent(".approval")).toContain("Book a table for 2 in Oslo?");
    await approve.click();
    await page.waitForSelector('[data-tool="book_table"][data-state="output-available"]');
    expect(await page.textContent('[data-tool="book_table"]')).toContain(
      "Table for 2 in Oslo, tonight at 19:00",
    );
    await expect.poll(() => assistant.textContent()).toContain("Booked! Enjoy your meal.");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent === "ready");
    expect(await page.locator("#error").count()).toBe(0);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}use-chat.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
