import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

// A PostgreSQL cluster of the tests' own, in a temp folder, on a free loopback port: Debian's
// server binaries (`initdb`, `pg_ctl`), fsync off. As root, the cluster runs as `postgres`.
// Commits stay synchronous: a server halted at once (`halt()`) keeps every commit it answered,
// as a real one keeps them across a crash (asynchronous, the last ones would be lost).

const BIN_DIRS = ["/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"];
const binDir = () => BIN_DIRS.find((dir) => existsSync(join(dir, "initdb")));

export interface ThrowawayPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  url(database: string): string;
  /** Creates an empty database; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server at once (`pg_ctl stop -m immediate`), as a crash would: every connection drops. */
  halt(): void;
  /** Starts the halted server again, on the same port, with the same data (a running one is left as it is). */
  restart(): void;
  stop(): void;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<ThrowawayPostgres> {
  // A fresh Debian machine may have none: the same script as CI installs them (apt-get).
  if (binDir() === undefined)
    execFileSync("bash", [fileURLToPath(new URL("../../scripts/install-postgres.sh", import.meta.url))], {
      stdio: "inherit",
    });
  const BIN = binDir();
  if (BIN === undefined) throw new Error("No PostgreSQL server binaries: apt-get install -y postgresql.");
  const dir = mkdtempSync(join(tmpdir(), "agent-core-pg-"));
  chmodSync(dir, 0o777);
  const asRoot = process.getuid?.() === 0;
  const run = (command: string, args: string[]) => {
    if (!asRoot) return execFileSync(join(BIN, command), args, { stdio: "pipe" });
    const line = [join(BIN, command), ...args].map((arg) => `'${arg}'`).join(" ");
    const result = spawnSync("su", ["postgres", "-c", line], { stdio: "pipe" });
    if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}`);
    return result.stdout;
  };
  const data = join(dir, "data");
  run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const port = await freePort();
  const start = () =>
    run("pg_ctl", [
      "-D",
      data,
      "-l",
      join(dir, "postgres.log"),
      "-o",
      `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c full_page_writes=off`,
      "-w",
      "start",
    ]);
  let running = false;
  const halt = () => {
    if (running) run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    running = false;
  };
  const restart = () => {
    if (!running) start();
    running = true;
  };
  restart();
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    url,
    async createDatabase(name) {
      const admin = new pg.Client({ connectionString: url("postgres") });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      return url(name);
    },
    halt,
    restart,
    stop: () => {
      try {
        halt();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
