export {
  type DurableBackend,
  type DurableBackendOptions,
  type DurableRunControl,
  durableBackend,
} from "./durable-backend.js";
export {
  type DurableAnswer,
  RunEndedError,
  RunFailedError,
  type RunFailure,
  UnknownRunError,
} from "./durable-messages.js";
export type { DurableRunResult } from "./durable-run.js";
export { type DurableRun, DurableRuntime } from "./durable-runtime.js";
export { durableModelStep, durableToolRunner, RecordedClock } from "./durable-services.js";
export { EventFollower } from "./event-follower.js";
export { EventStore } from "./event-store.js";
export { OrchestratorVersionError } from "./orchestrator-record.js";
export { PostgresTokenLedger } from "./postgres-token-ledger.js";
export { ReplayOrder } from "./replay-order.js";
export { DurableRunClient } from "./run-client.js";
export type { DurableRuntimeOptions } from "./runtime-options.js";
