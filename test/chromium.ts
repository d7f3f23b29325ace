import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// Where the browser tests find Chromium: Debian's `chromium`, or CHROMIUM_PATH. Playwright's own
// browser download needs the internet; Debian's package only needs apt.

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** The Chromium executable, installed first when this is a fresh Debian machine without one. */
export function chromiumPath(): string {
  // The same script as CI installs it (apt-get, as root or sudo).
  if (!existsSync(CHROMIUM) && process.env.CHROMIUM_PATH === undefined)
    execFileSync("bash", [fileURLToPath(new URL("../scripts/install-chromium.sh", import.meta.url))], {
      stdio: "inherit",
    });
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH.`);
  return CHROMIUM;
}
