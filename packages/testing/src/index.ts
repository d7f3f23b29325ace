export {
  assertEventProtocol,
  assertValidTranscript,
  collectEvents,
  eventsOf,
  eventTypes,
} from "./assertions.js";
export { type ChatMessage, validateChatMessages } from "./chat-messages.js";
export { type ConformanceModelOptions, conformanceModel, PROBE_TOOL } from "./conformance-model.js";
export * from "./fake-openai-server.js";
export {
  ScriptExhaustedError,
  ScriptedModel,
  type ScriptedModelOptions,
  type ScriptPart,
  type ScriptStep,
  type StepUsage,
  script,
  scriptedModel,
} from "./scripted-model.js";
