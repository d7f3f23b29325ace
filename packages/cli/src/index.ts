export { type CliIO, main, SYSTEM_PROMPT } from "./cli.js";
export { createDemoModel } from "./demo-model.js";
export { type ModelChoice, modelFromEnv } from "./provider.js";
export { calculatorTool } from "./tools/calculator.js";
export { type CurrentTime, createCurrentTimeTool, currentTimeTool } from "./tools/current-time.js";
export { createDemoAgentTools } from "./tools/demo-tools.js";
export { ExpressionError, evaluateExpression } from "./tools/expression.js";
