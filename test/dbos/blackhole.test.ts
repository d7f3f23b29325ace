import { createServer, type Socket, connect as tcpConnect } from "node:net";
import type { AgentEvent } from "@agent-core/core";
import { DurableRuntime, EventFollower, EventStore } from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import { Agent } from "agent-core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers, NdjsonReader, post, readPage } from "../http/harness.js";
import { durableServer, hang } from "./harness.js";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";
import { untilEvent } from "./until-event.js";

// A database host that is gone in the worst way: it takes a connection and never answers it (its
// packets dropped, or a proxy in front that lost its way). Each test puts a proxy of its own
// between the package and the database, and has it hold new connections instead of forwarding
// them. The runtime itself goes through one too.

let postgres: ThrowawayPostgres;
let databaseUrl: string;
/** The runtime's way to the database. */
let runtimeProxy: Proxy;
let runtime: DurableRuntime;
/** The test's own connections, straight to the database. */
let pool: pg.Pool;

interface Proxy {
  url: string;
  /** New connections are taken and never answered; with `dropOpen`, the open ones are cut first. */
  hold(options?: { dropOpen?: boolean }): void;
  /** As `hold()`, and the open connections stay open but forward nothing more, either way. */
  silence(): void;
  /** New connections go through again (the held ones stay held). */
  forward(): void;
  /** The connections held now (a client that gave up closed its own). */
  readonly held: number;
  close(): Promise<void>;
}

async function proxy(): Promise<Proxy> {
  const target = Number(new URL(databaseUrl).port);
  let holding = false;
  const held = new Set<Socket>();
  const open = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  const track = (sockets: Set<Socket>, socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
  };
  const server = createServer((client) => {
    if (holding) {
      // Read and dropped, so that the client's giving up (its end) is seen.
      client.resume();
      return track(held, client);
    }
    const upstream = tcpConnect(target, "127.0.0.1");
    track(open, client);
    track(open, upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.on("close", () => {
      pairs.delete(pair);
      upstream.destroy();
    });
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.href,
    hold(options = {}) {
      holding = true;
      if (options.dropOpen) for (const socket of open) socket.destroy();
    },
    silence() {
      holding = true;
      // Each side's bytes are read and dropped, as a host that went away drops its packets.
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.resume();
        upstream.resume();
      }
    },
    forward() {
      holding = false;
    },
    get held() {
      return held.size;
    },
    async close() {
      for (const socket of [...held, ...open]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Resolves once `check` holds, asking every 50 ms; throws after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The database's connections that LISTEN on `channel`. */
async function listening(channel: string): Promise<number> {
  const { rows } = await pool.query("SELECT 1 FROM pg_stat_activity WHERE query = $1", [`LISTEN ${channel}`]);
  return rows.length;
}

/** How `promise` settled, or that it had not after `ms`. */
async function settled(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(`still waiting after ${ms} ms`), ms);
  });
  try {
    return await Promise.race([promise.catch((error: Error) => `rejected: ${error.message}`), late]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase("agent_core_blackhole");
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  runtimeProxy = await proxy();
  runtime = new DurableRuntime({
    databaseUrl: runtimeProxy.url,
    agents: {
      quick: () => new Agent({ provider: scriptedModel([[script.text("Quick.")]]) }),
      hanging: () =>
        new Agent({
          provider: scriptedModel([[script.toolCall("hang", {}, { id: "h1" })], [script.text("never")]]),
          tools: [hang],
        }),
      page: () =>
        new Agent({
          provider: scriptedModel([
            [script.toolCall("read_page", { selector: "h1" }, { id: "r1" })],
            [script.text("Read it.")],
          ]),
          tools: [readPage],
        }),
    },
  });
  await runtime.launch();
}, 60_000);

afterAll(async () => {
  await runtime?.shutdown();
  await runtimeProxy?.close();
  await pool?.end();
  postgres?.stop();
});

describe("a LISTEN connection whose connect is never answered", () => {
  it("an EventFollower gives it up, follows the run by polling, and LISTENs again once it can", async () => {
    const run = await runtime.start("quick", "Hi.", { runId: "followed" });
    await run.result();
    const held = await proxy();
    held.hold();
    const follower = new EventFollower(new EventStore(pool), held.url, { pollMs: 100 });
    try {
      const followed: AgentEvent[] = [];
      const { caughtUp } = follower.follow("followed", -1, (event) => followed.push(event));
      // The LISTEN's connect is given up after 10 s; the events are read all the same.
      expect(await settled(caughtUp, 20_000)).toBeUndefined();
      expect(followed).toEqual(await runtime.events("followed"));
      expect(held.held).toBe(0);

      // A run that has not begun is polled for, and each poll tries the LISTEN again.
      const waiting = follower.follow("not-yet", -1, () => {});
      held.forward();
      await until(async () => (await listening("agent_core_events")) === 1, 5000, "the follower LISTENs");
      waiting.stop();
    } finally {
      // Its held connects fail now: the follower closes whatever they were.
      await held.close();
      await follower.close();
    }
  }, 30_000);

  it("a worker gives up its cancels' LISTEN, listens again, and aborts a run cancelled meanwhile", async () => {
    const run = await runtime.start("hanging", "Hang.", { runId: "hung" });
    await untilEvent(runtime, "hung", "tool_call", 10_000);
    // The worker's LISTEN drops, and the connect that makes it again is never answered.
    runtimeProxy.hold();
    const { rowCount } = await pool.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN agent_core_cancel'",
    );
    expect(rowCount).toBe(1);
    await until(() => runtimeProxy.held === 1, 5000, "the worker connects again");
    runtimeProxy.forward();

    // Its NOTIFY reaches no one: the worker aborts the run once it listens again.
    await runtime.cancel("hung");
    expect(await settled(run.result(), 20_000)).toMatchObject({ stopReason: "aborted" });
    expect(runtimeProxy.held).toBe(0);
    expect(await listening("agent_core_cancel")).toBe(1);
  }, 30_000);
});

describe("the HTTP backend on a database host that never answers a connect", () => {
  it("answers 503 database-unreachable once the connect timeout passes, instead of holding the request", async () => {
    const held = await proxy();
    const node = await durableServer({ databaseUrl: held.url, runs: runtime, agentName: "page" });
    try {
      const reader = new NdjsonReader(await post(`${node.url}/runs`, { prompt: "Read the title." }));
      const end = await reader.until((event) => event.type === "agent_end");
      const [call] = end.pendingClientTools as { toolCallId: string; hookToken: string }[];
      if (call === undefined) throw new Error("no pending call");

      held.hold({ dropOpen: true });
      const answers = await Promise.all(
        [
          post(`${node.url}/runs`, { prompt: "Read the title." }),
          fetch(`${node.url}/runs/no-such-run/events`, { headers: headers() }),
          post(`${node.url}/runs/${end.runId}/tool-results`, {
            toolCallId: call.toolCallId,
            token: call.hookToken,
            result: "Agent Core",
          }),
        ].map(async (response) => {
          const answered = await response;
          return [answered.status, (await answered.json()).error.code];
        }),
      );
      expect(answers).toEqual([
        [503, "database-unreachable"],
        [503, "database-unreachable"],
        [503, "database-unreachable"],
      ]);
    } finally {
      held.forward();
      await node.close();
      await held.close();
    }
  }, 30_000);
});

describe("connections already open when the database host goes silent", () => {
  it("the HTTP backend's query fails after 10 s (503), its pool lets the connection go; a LISTEN connection idle as long is kept", async () => {
    const cancels = "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN agent_core_cancel'";
    const listener = (await pool.query(cancels)).rows;
    expect(listener).toHaveLength(1);
    const silent = await proxy();
    const node = await durableServer({ databaseUrl: silent.url, runs: runtime, agentName: "quick" });
    const lookUp = async () => {
      const response = await fetch(`${node.url}/runs/no-such-run/events`, { headers: headers() });
      return [response.status, (await response.json()).error.code];
    };
    try {
      expect(await lookUp()).toEqual([404, "run-not-found"]);
      // The pool's connection is open, and the host goes silent: no answer, no error, ever.
      silent.silence();
      const silencedAt = Date.now();
      expect(await settled(lookUp(), 20_000)).toEqual([503, "database-unreachable"]);
      expect(Date.now() - silencedAt).toBeGreaterThanOrEqual(10_000);
      // The silent connection was let go: the next request connects again, and is answered.
      silent.forward();
      expect(await settled(lookUp(), 5_000)).toEqual([404, "run-not-found"]);
      // The worker's LISTEN, idle all this time (longer than its queries may take), is the same.
      expect((await pool.query(cancels)).rows).toEqual(listener);
    } finally {
      await silent.close();
      await node.close();
    }
  }, 40_000);
});
