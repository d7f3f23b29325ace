import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { DurableRunClient, DurableRuntime, UnknownRunError } from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import { Agent, InvalidConfigError } from "agent-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

// A runtime's life: made, launched (once, whoever calls launch()), shut down (once). Its calls
// outside that life, and a second runtime in the process (DBOS is one per process), are refused
// with InvalidConfigError saying so, not with what DBOS or a closed pool happens to throw.

let postgres: ThrowawayPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);

afterAll(() => postgres?.stop());

const agents = { greeter: () => new Agent({ provider: scriptedModel([[script.text("Hello!")]]) }) };

/** Every call of a runtime's that needs it launched, each rejecting or resolving. */
function calls(runtime: DurableRuntime): Promise<unknown>[] {
  return [
    runtime.start("greeter", "Hi"),
    runtime.retrieve("some-run").result(),
    runtime.events("some-run"),
    runtime.answer("some-run", { kind: "approval", toolCallId: "c1", approved: true }),
    runtime.steer("some-run", "Shorter."),
    runtime.followUp("some-run", "And then?"),
    runtime.cancel("some-run"),
    runtime.prompt(agents.greeter(), "Hi"),
  ];
}

/** Whether the agent handed to `refused` (which must reject) can be collected once it rejected. */
async function collectedAfter(refused: (agent: Agent) => Promise<unknown>): Promise<boolean> {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const agent = new WeakRef(agents.greeter());
  await expect(refused(agent.deref() as Agent)).rejects.toThrow(InvalidConfigError);
  for (let i = 0; i < 10 && agent.deref() !== undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return agent.deref() === undefined;
}

describe("a durable runtime's launch and shutdown", () => {
  it("refuse the calls outside its life, launch once and shut down once, and refuse a second runtime", async () => {
    const runtime = new DurableRuntime({
      databaseUrl: await postgres.createDatabase("agent_core_life"),
      agents,
    });
    for (const call of calls(runtime))
      await expect(call).rejects.toThrow(
        new InvalidConfigError("This runtime has not launched: await runtime.launch() first."),
      );
    // A refused prompt() leaves nothing of its agent in the runtime.
    expect(await collectedAfter((agent) => runtime.prompt(agent, "Hi"))).toBe(true);

    // Launched twice at once, and again: the same launch; a call made meanwhile waits for it.
    const launches = [runtime.launch(), runtime.launch()];
    const started = runtime.start("greeter", "Hi");
    await Promise.all(launches);
    await runtime.launch();
    expect((await (await started).result()).text).toBe("Hello!");

    await Promise.all([runtime.shutdown(), runtime.shutdown()]);
    await runtime.shutdown();
    for (const call of calls(runtime))
      await expect(call).rejects.toThrow(new InvalidConfigError("This runtime has shut down."));
    expect(await collectedAfter((agent) => runtime.prompt(agent, "Hi"))).toBe(true);
    await expect(runtime.launch()).rejects.toThrow(
      new InvalidConfigError("This runtime has shut down: it does not launch again."),
    );
    expect(() => new DurableRuntime({ databaseUrl: postgres.url("agent_core_life"), agents })).toThrow(
      InvalidConfigError,
    );
  }, 60_000);
});

describe("a DurableRunClient's close", () => {
  it("happens once, and refuses the client's calls from then on", async () => {
    const client = await DurableRunClient.connect({
      databaseUrl: await postgres.createDatabase("agent_core_client_life"),
    });
    // Its connection of its own is open: a cancel of no run used it.
    await expect(client.cancel("some-run")).rejects.toThrow(UnknownRunError);
    await Promise.all([client.close(), client.close()]);
    await client.close();
    for (const call of [
      client.start("greeter", "Hi"),
      client.result("some-run"),
      client.answer("some-run", { kind: "approval", toolCallId: "c1", approved: true }),
      client.steer("some-run", "Shorter."),
      client.followUp("some-run", "And then?"),
      client.cancel("some-run"),
    ])
      await expect(call).rejects.toThrow(new InvalidConfigError("This client has closed."));
  }, 60_000);
});
