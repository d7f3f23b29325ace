import { registerOrchestrator } from "@agent-core/core";
import { type ReflectOptions, reflect } from "./reflect.js";

// Importing this module makes "reflect" available by name (`new Agent({ orchestrator: "reflect" })`).
registerOrchestrator<ReflectOptions>("reflect", (options) => reflect(options));

export {
  type Critique,
  critiqueSchema,
  DEFAULT_CRITIC_PROMPT,
  type ReflectOptions,
  ReflectOrchestrator,
  reflect,
} from "./reflect.js";
