import { describe, expect, it } from "vitest";
import { calculatorTool } from "./calculator.js";
import { ExpressionError } from "./expression.js";

const options = { signal: new AbortController().signal, toolCallId: "t", idempotencyKey: "r:t" };

describe("calculatorTool", () => {
  it("returns the expression with its result", async () => {
    expect(await calculatorTool.execute({ expression: "2+2" }, options)).toEqual({
      expression: "2+2",
      result: 4,
    });
    expect(await calculatorTool.execute({ expression: "(2+3)*4" }, options)).toEqual({
      expression: "(2+3)*4",
      result: 20,
    });
  });

  it("throws the ExpressionError so the model sees the failure", () => {
    expect(() => calculatorTool.execute({ expression: "10/0" }, options)).toThrow(ExpressionError);
    expect(() => calculatorTool.execute({ expression: "invalid" }, options)).toThrow(
      'Unexpected character "i" at position 0',
    );
  });

  it("describes its input to the model as a required string", () => {
    expect(calculatorTool.name).toBe("calculator");
    expect(calculatorTool.jsonSchema).toMatchObject({
      type: "object",
      properties: { expression: { type: "string", minLength: 1 } },
      required: ["expression"],
    });
  });
});
