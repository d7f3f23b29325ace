import { ToolRegistry } from "@agent-core/core";
import { calculatorTool } from "./calculator.js";
import { currentTimeTool } from "./current-time.js";

/** The CLI's tools, which the demo model knows how to call. A new registry each time: registries are mutable. */
export function createDemoAgentTools(): ToolRegistry {
  return new ToolRegistry([calculatorTool, currentTimeTool]);
}
