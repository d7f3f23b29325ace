import { DurableRunClient, DurableRuntime } from "@agent-core/dbos";
import { script, scriptedModel } from "@agent-core/testing";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { Agent, defineTool } from "agent-core";
import { z } from "zod";

// A process that starts a durable runtime (`runtime`) or a client (`client`) on the database at
// the URL it is given, prints what happened as one JSON line (a runtime's application version,
// as DBOS computed it, with it), and then must exit on its own: no `process.exit`, so anything
// left holding the process open (a hang) shows as a process that does not end. `other-agents`:
// the runtime registers other agents than the default one, as a deploy of changed code would.

const [mode, databaseUrl, agents] = process.argv.slice(2) as ["runtime" | "client", string, string?];
const shout = defineTool({
  name: "shout",
  description: "Shouts",
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }) => text.toUpperCase(),
});
const registered: Record<string, () => Agent> =
  agents === "other-agents"
    ? {
        loud: () => new Agent({ provider: scriptedModel([[script.text("HI")]]), tools: [shout] }),
        quiet: () => new Agent({ provider: scriptedModel([[script.text("hi")]]) }),
      }
    : { helper: () => new Agent({ provider: scriptedModel([[script.text("Hello!")]]) }) };
try {
  if (mode === "runtime") {
    const runtime = new DurableRuntime({ databaseUrl, agents: registered });
    await runtime.launch();
    const applicationVersion = DBOS.applicationVersion;
    await runtime.shutdown();
    console.log(JSON.stringify({ ok: true, applicationVersion }));
  } else {
    const client = await DurableRunClient.connect({ databaseUrl });
    await client.close();
    console.log(JSON.stringify({ ok: true }));
  }
} catch (error) {
  const { name, code, message } = error as { name: string; code: unknown; message: string };
  console.log(JSON.stringify({ name, code, message }));
}
