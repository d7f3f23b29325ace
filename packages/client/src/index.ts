export { AgentClient } from "./agent-client.js";
export type {
  AgentClientOptions,
  AgentEndEvent,
  AttachOptions,
  ClientLogger,
  ClientRun,
  ClientTool,
  ClientToolContext,
  StartOptions,
} from "./client-types.js";
export { ClientError, type ClientErrorCode, type ClientErrorEvent, type ClientEvent } from "./errors.js";
export { type Heartbeat, NdjsonParser, type Parsed, type ParserOptions, SseParser } from "./parsers.js";
