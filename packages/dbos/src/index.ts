export {
  type DurableAnswer,
  type DurableRun,
  type DurableRunResult,
  DurableRuntime,
  type DurableRuntimeOptions,
} from "./durable-runtime.js";
export { durableModelStep, durableToolRunner } from "./durable-services.js";
export { EventStore } from "./event-store.js";
export { DurableRunClient } from "./run-client.js";
