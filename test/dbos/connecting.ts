import { DurableRunClient, DurableRuntime } from "@agent-core/dbos";

// A process that starts a durable runtime (`runtime`) or a client (`client`) on the database at
// the URL it is given, prints what happened as one JSON line, and then must exit on its own: no
// `process.exit`, so anything left holding the process open (a hang) shows as a process that
// does not end.

const [mode, databaseUrl] = process.argv.slice(2) as ["runtime" | "client", string];
try {
  if (mode === "runtime") {
    const runtime = new DurableRuntime({ databaseUrl, agents: {} });
    await runtime.launch();
    await runtime.shutdown();
  } else {
    const client = await DurableRunClient.connect({ databaseUrl });
    await client.close();
  }
  console.log(JSON.stringify({ ok: true }));
} catch (error) {
  const { name, code, message } = error as { name: string; code: unknown; message: string };
  console.log(JSON.stringify({ name, code, message }));
}
