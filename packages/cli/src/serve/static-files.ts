import { readFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

/**
 * Serves the files under `root` for `path` (`/` is `index.html`): a Response, or undefined when
 * there is no such file. A path that climbs out of `root` finds nothing.
 */
export async function staticFile(root: string, path: string): Promise<Response | undefined> {
  let relative: string;
  try {
    relative = normalize(decodeURIComponent(path === "/" ? "/index.html" : path));
  } catch {
    return undefined;
  }
  const file = join(root, relative);
  if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
  try {
    const body = await readFile(file);
    return new Response(body, {
      headers: {
        "content-type": TYPES[extname(file)] ?? "application/octet-stream",
        "cache-control": "no-cache",
      },
    });
  } catch {
    return undefined;
  }
}
