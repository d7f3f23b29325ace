export {
  assertEventProtocol,
  assertValidTranscript,
  collectEvents,
  eventsOf,
  eventTypes,
} from "./assertions.js";
export * from "./fake-openai-server.js";
export {
  type ScriptedModelOptions,
  type ScriptPart,
  type ScriptStep,
  type StepUsage,
  ScriptedModel,
  script,
  scriptedModel,
} from "./scripted-model.js";
