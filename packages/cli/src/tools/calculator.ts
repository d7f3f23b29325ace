import { defineTool } from "@agent-core/core";
import { z } from "zod";
import { evaluateExpression } from "./expression.js";

/** Arithmetic for the model, which is unreliable at it; an `ExpressionError` reaches the model as an error result. */
export const calculatorTool = defineTool({
  name: "calculator",
  description:
    "Evaluates one arithmetic expression and returns its numeric result. Supports + - * / % (remainder), " +
    '^ (power) and parentheses. Pass the whole expression as `expression`, e.g. "15*3" or "(2+3)*4".',
  inputSchema: z.object({
    expression: z.string().min(1).describe('The arithmetic expression to evaluate, e.g. "(2+3)*4".'),
  }),
  execute: ({ expression }) => ({ expression, result: evaluateExpression(expression) }),
});
