import type { DurableRuntime } from "@agent-core/dbos";

/** Waits until the runtime's log of the run holds an event of that type; throws after `timeoutMs`. */
export async function untilEvent(
  runtime: DurableRuntime,
  runId: string,
  type: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await runtime.events(runId)).some((event) => event.type === type)) {
    if (Date.now() > deadline) throw new Error(`no ${type} in ${runId}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
