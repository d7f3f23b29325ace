import "@agent-core/agentic";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createPageDemoModel } from "./page-demo-model.js";
import { createPageServer } from "./page-server.js";

const STATIC_DIR = fileURLToPath(new URL("../../../../examples/http-browser/public", import.meta.url));

describe("createPageServer", () => {
  it("answers a method its page files do not take with 405 and the Allow header HTTP requires", async () => {
    const page = createPageServer({ model: createPageDemoModel({ chunkDelayMs: 0 }), staticDir: STATIC_DIR });
    try {
      // The agent's routes are under /api: a POST to /runs is a POST to the page's files.
      const response = await page.fetch(new Request("http://localhost/runs", { method: "POST" }));
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("GET, HEAD");
      expect((await page.fetch(new Request("http://localhost/index.html"))).status).toBe(200);
    } finally {
      await page.close();
    }
  });
});
