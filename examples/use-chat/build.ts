import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** Where the page is served from: `index.html` and the bundle `app.js` (gitignored, built here). */
export const distDir = fileURLToPath(new URL("./dist/", import.meta.url));

/** Bundles the React page (src/page.tsx, with React, useChat and the AI SDK) for the browser. */
export async function buildPage(): Promise<void> {
  await build({
    entryPoints: [fileURLToPath(new URL("./src/page.tsx", import.meta.url))],
    bundle: true,
    outfile: `${distDir}app.js`,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    minify: true,
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  });
}
