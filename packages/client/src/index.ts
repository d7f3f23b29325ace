export {
  AgentClient,
  type AgentClientOptions,
  type AgentEndEvent,
  type AttachOptions,
  type ClientLogger,
  type ClientRun,
  type ClientTool,
  type ClientToolContext,
  type StartOptions,
} from "./agent-client.js";
export { ClientError, type ClientErrorCode, type ClientErrorEvent, type ClientEvent } from "./errors.js";
export { type Heartbeat, NdjsonParser, type Parsed, SseParser } from "./parsers.js";
