import { InvalidConfigError } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { connectMcp } from "./connect-mcp.js";
import { McpServerError } from "./mcp-server-error.js";
import type { McpServerConfig } from "./server-config.js";

describe("connectMcp", () => {
  it("refuses a configuration with neither or both of command and url, a bad URL, args, env or stderr of another type, or a bad callTimeoutMs", async () => {
    for (const config of [
      {},
      { command: "" },
      { command: "node", url: "http://127.0.0.1:1/mcp" },
      { url: "not a url" },
    ])
      await expect(connectMcp(config as McpServerConfig)).rejects.toThrow(InvalidConfigError);
    await expect(connectMcp({ command: "node" }, { callTimeoutMs: 0 })).rejects.toThrow(
      "connectMcp(): callTimeoutMs must be a whole number of ms >= 1 and <= 2147483647, got 0.",
    );
    await expect(connectMcp({ command: "node", args: "--port 3000" } as never)).rejects.toThrow(
      new InvalidConfigError(
        'connectMcp(): args must be an array of strings, one per argument, got "--port 3000".',
      ),
    );
    await expect(connectMcp({ command: "node", args: ["--port", 3000] } as never)).rejects.toThrow(
      InvalidConfigError,
    );
    await expect(connectMcp({ command: "node", env: "DEBUG=1" } as never)).rejects.toThrow(
      new InvalidConfigError(
        'connectMcp(): env must be an object of strings, { NAME: "value" }: got a string.',
      ),
    );
    // The values are not told: an env holds secrets. An undefined one is left out, as spawn does.
    const env = { TOKEN: "secret", PORT: 3000, UNSET: undefined };
    await expect(connectMcp({ command: "node", env } as never)).rejects.toThrow(
      new InvalidConfigError(
        'connectMcp(): env must be an object of strings, { NAME: "value" }: PORT is not a string.',
      ),
    );
    await expect(connectMcp({ command: "node", stderr: "pipe" } as never)).rejects.toThrow(
      new InvalidConfigError('connectMcp(): stderr must be "inherit" or "ignore", got "pipe".'),
    );
    // Node would fire a longer timer after 1 ms: every call would time out as it starts.
    await expect(connectMcp({ command: "node" }, { callTimeoutMs: 2 ** 31 })).rejects.toThrow(
      "connectMcp(): callTimeoutMs must be a whole number of ms >= 1 and <= 2147483647, got 2147483648.",
    );
  });

  it("refuses a key it does not know, in the server's configuration or the options, naming it: a misspelt one would silently not apply", async () => {
    // Without the check, `arg` is dropped: node starts with no script, reads stdin, and
    // connecting fails after the SDK's 60 s with "Request timed out".
    await expect(connectMcp({ command: "node", arg: ["server.js"] } as never)).rejects.toThrow(
      new InvalidConfigError(
        "Invalid connectMcp() server (over stdio): arg is not an option (known: command, args, env, cwd, stderr).",
      ),
    );
    await expect(
      connectMcp({ url: "http://127.0.0.1:9/mcp", env: { TOKEN: "t" }, header: {} } as never),
    ).rejects.toThrow(
      new InvalidConfigError(
        "Invalid connectMcp() server (over HTTP): env is not an option (known: url, headers).",
      ),
    );
    await expect(connectMcp({ command: "node" }, { callTimeout: 5_000 } as never)).rejects.toThrow(
      new InvalidConfigError(
        "Invalid connectMcp() options: callTimeout is not an option (known: name, callTimeoutMs).",
      ),
    );
    await expect(connectMcp({ command: "node" }, null as never)).rejects.toThrow(
      new InvalidConfigError("connectMcp(): its options must be an object, got null."),
    );
    await expect(connectMcp({ command: "node" }, { name: 42 } as never)).rejects.toThrow(
      new InvalidConfigError("connectMcp(): name must be a non-blank string, got 42."),
    );
    await expect(connectMcp({ command: "node", cwd: 5 } as never)).rejects.toThrow(
      new InvalidConfigError("connectMcp(): cwd must be a string, got 5."),
    );
  });

  it("refuses headers that are not an object of strings, an undefined one included, without telling their values", async () => {
    const url = "http://127.0.0.1:9/mcp";
    await expect(connectMcp({ url, headers: "Bearer t0ken" } as never)).rejects.toThrow(
      new InvalidConfigError(
        'connectMcp(): headers must be an object of strings, { name: "value" }: got a string.',
      ),
    );
    // `{ authorization: process.env.TOKEN }` with TOKEN unset would send "undefined".
    await expect(
      connectMcp({ url, headers: { authorization: undefined, "x-n": 1 } } as never),
    ).rejects.toThrow(
      new InvalidConfigError(
        'connectMcp(): headers must be an object of strings, { name: "value" }: authorization, x-n are not a string.',
      ),
    );
  });

  it("names the server when it cannot be started or reached", async () => {
    const missing = connectMcp({ command: "no-such-mcp-server", args: ["--flag"] });
    await expect(missing).rejects.toThrow(McpServerError);
    await expect(missing).rejects.toThrow(
      /^MCP server "no-such-mcp-server --flag": could not connect: .*ENOENT/,
    );
    // Node's own error would blame the command: "spawn node ENOENT".
    const nowhere = connectMcp({ command: "node", args: ["server.js"], cwd: "/no/such/dir" });
    await expect(nowhere).rejects.toThrow(McpServerError);
    await expect(nowhere).rejects.toThrow(
      'MCP server "node server.js": could not start: its working directory "/no/such/dir" is not a directory',
    );
    // Port 9 (discard) on loopback: nothing listens there.
    await expect(connectMcp({ url: "http://127.0.0.1:9/mcp" }, { name: "remote" })).rejects.toThrow(
      /^MCP server "remote": could not connect: /,
    );
  });
});
