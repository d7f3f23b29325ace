export { type CliIO, main, SYSTEM_PROMPT } from "./cli.js";
export { createDemoModel } from "./demo-model.js";
export { type ModelChoice, modelFromEnv } from "./provider.js";
export { createPageDemoModel, PAGE_DEMO_HELP } from "./serve/page-demo-model.js";
export {
  clientDistDir,
  createPageServer,
  PAGE_SYSTEM_PROMPT,
  type PageServerOptions,
} from "./serve/page-server.js";
export { pageTools } from "./serve/page-tools.js";
export { calculatorTool } from "./tools/calculator.js";
export { type CurrentTime, createCurrentTimeTool, currentTimeTool } from "./tools/current-time.js";
export { createDemoAgentTools } from "./tools/demo-tools.js";
export { ExpressionError, evaluateExpression } from "./tools/expression.js";
