export { type AgentServer, createAgentServer } from "./agent-server.js";
export type { HookClaims, HookKey } from "./hook-tokens.js";
export { HttpError } from "./http-error.js";
export { type NodeServer, type ServeNodeOptions, serveNode } from "./node-server.js";
export {
  type AgentRequest,
  type BackendRun,
  memoryBackend,
  queueFull,
  type RunBackend,
  type RunOwner,
  type Subscription,
} from "./run-backend.js";
export type { AgentServerOptions, Principal, RateLimit } from "./server-options.js";
export { idempotencyKeyReused, type StartKey } from "./start-keys.js";
export { type LedgerVerdict, MemoryTokenLedger, type TokenLedger } from "./token-ledger.js";
export {
  createUseChatHandler,
  type UseChatHandler,
} from "./use-chat/use-chat-handler.js";
export type { UseChatHandlerOptions } from "./use-chat/use-chat-options.js";
