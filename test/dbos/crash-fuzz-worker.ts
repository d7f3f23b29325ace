import { DurableRuntime } from "@agent-core/dbos";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { scriptedAgent } from "./crash-fuzz-agent.js";
import type { CrashCase } from "./crash-fuzz-case.js";

// A worker process of the crash fuzz (crash-fuzz.test.ts): it launches a durable runtime under the
// case's own executor id (so it recovers that case's run, and no other case's), starts the run if
// no worker did yet, and prints the workflow's result as its last line. The test kills it
// (SIGKILL) at chosen moments and starts another.

const [databaseUrl, caseJson] = process.argv.slice(2) as [string, string];
const crashCase = JSON.parse(caseJson) as CrashCase;

const runtime = new DurableRuntime({
  databaseUrl,
  executorId: crashCase.runId,
  agents: { scripted: () => scriptedAgent(crashCase) },
});
await runtime.launch();
// The first worker starts the run; a later one finds it (recovered by `launch()`, or not started
// yet when the first died that early) and starts it only if no worker did.
if (!(await DBOS.getWorkflowStatus(crashCase.runId)))
  await runtime.start("scripted", "Follow the script.", { runId: crashCase.runId });
let result: unknown;
try {
  result = await runtime.retrieve(crashCase.runId).result();
} catch (error) {
  result = { failed: (error as Error).message };
}
console.log(JSON.stringify(result));
await runtime.shutdown();
