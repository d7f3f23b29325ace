export { type DurableAnswer, RunEndedError } from "./durable-messages.js";
export {
  type DurableRun,
  type DurableRunResult,
  DurableRuntime,
  type DurableRuntimeOptions,
  OrchestratorVersionError,
} from "./durable-runtime.js";
export { durableModelStep, durableToolRunner, RecordedClock } from "./durable-services.js";
export { EventStore } from "./event-store.js";
export { DurableRunClient } from "./run-client.js";
