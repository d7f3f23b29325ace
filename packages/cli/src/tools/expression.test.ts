import { describe, expect, it } from "vitest";
import { ExpressionError, evaluateExpression } from "./expression.js";

function errorOf(input: string): ExpressionError {
  try {
    evaluateExpression(input);
  } catch (error) {
    if (error instanceof ExpressionError) return error;
    throw error;
  }
  throw new Error(`"${input}" evaluated without an error`);
}

describe("evaluateExpression", () => {
  it.each([
    ["2+2", 4],
    ["10-3", 7],
    ["5*6", 30],
    ["100/4", 25],
    ["15*3", 45],
  ])("computes the Go calculator cases: %s = %d", (input, expected) => {
    expect(evaluateExpression(input)).toBe(expected);
  });

  it.each([
    ["2+3*4", 14],
    ["2*3+4", 10],
    ["10-4-3", 3],
    ["100/10/5", 2],
    ["7%4*2", 6],
    ["2*3^2", 18],
  ])("respects precedence and left associativity: %s = %d", (input, expected) => {
    expect(evaluateExpression(input)).toBe(expected);
  });

  it.each([
    ["(2+3)*4", 20],
    ["((1+2))*(3+(4-1))", 18],
    ["-(2+3)", -5],
    ["(2)", 2],
  ])("evaluates parentheses: %s = %d", (input, expected) => {
    expect(evaluateExpression(input)).toBe(expected);
  });

  it.each([
    ["-5+3", -2],
    ["2*-3", -6],
    ["--3", 3],
    ["-+-3", 3],
    ["+4", 4],
    ["3--2", 5],
    ["-2^2", -4],
    ["(-2)^2", 4],
    ["2^-1", 0.5],
    ["0*-1", 0],
  ])("handles unary signs: %s = %d", (input, expected) => {
    expect(evaluateExpression(input)).toBe(expected);
  });

  it("makes ^ right-associative", () => {
    expect(evaluateExpression("2^3^2")).toBe(512);
  });

  it.each([
    ["1.5+2.25", 3.75],
    [".5*4", 2],
    ["2.*3", 6],
    ["1e3", 1000],
    ["2.5E-1", 0.25],
    ["1e+2/4", 25],
  ])("reads decimals and exponents: %s = %d", (input, expected) => {
    expect(evaluateExpression(input)).toBe(expected);
  });

  it("computes the remainder with %", () => {
    expect(evaluateExpression("17%5")).toBe(2);
    expect(evaluateExpression("-7%3")).toBe(-1);
  });

  it("accepts whitespace anywhere and × ÷ for * /", () => {
    expect(evaluateExpression("  15 *\t3 \n")).toBe(45);
    expect(evaluateExpression("6 × 7")).toBe(42);
    expect(evaluateExpression("84÷2")).toBe(42);
  });

  it.each([
    ["10/0", "Division by zero", 2],
    ["5%(2-2)", "Division by zero", 1],
    ["invalid", 'Unexpected character "i" at position 0', 0],
    ["2+3x", 'Unexpected character "x" at position 3', 3],
    ["2+😀", 'Unexpected character "😀" at position 2', 2],
    ["2+", "Unexpected end of expression", 2],
    ["(", "Unexpected end of expression", 1],
    ["(2+3", 'Missing closing parenthesis for "(" at position 0', 0],
    ["1+((2)", 'Missing closing parenthesis for "(" at position 2', 2],
    ["(2+3))", 'Unexpected ")" at position 5', 5],
    ["2+3)", 'Unexpected ")" at position 3', 3],
    ["()", 'Unexpected ")" at position 1', 1],
    ["*2", 'Unexpected "*" at position 0', 0],
    ["2 3", 'Unexpected "3" at position 2', 2],
    ["(2 3)", 'Unexpected "3" at position 3', 3],
    ["", "Empty expression", 0],
    ["   ", "Empty expression", 0],
    ["1e308*10", "Result is not a finite number", 5],
    ["1/(1e308*10)", "Result is not a finite number", 8],
    ["(-8)^0.5", "Result is not a finite number", 4],
    ["1e999", 'Number "1e999" is too large', 0],
  ])("rejects %j with %j at %d", (input, message, position) => {
    const error = errorOf(input);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("ExpressionError");
    expect(error.message).toBe(message);
    expect(error.position).toBe(position);
  });
});
