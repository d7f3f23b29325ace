/** A syntax or arithmetic error; `position` is the 0-based index in the input where it was found. */
export class ExpressionError extends Error {
  readonly position: number;

  constructor(message: string, position: number) {
    super(message);
    this.name = "ExpressionError";
    this.position = position;
  }
}

type Operator = "+" | "-" | "*" | "/" | "%" | "^";

type Token =
  | { kind: "number"; value: number; text: string; position: number }
  | { kind: "operator"; operator: Operator; text: string; position: number }
  | { kind: "(" | ")"; text: string; position: number };

type OperatorToken = Extract<Token, { kind: "operator" }>;

// Integers, decimals with either side omitted (".5", "2.") and an optional exponent ("1e3", "2.5E-4").
const NUMBER = /(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y;

// "×" and "÷" are accepted because people (and models) paste them from prose.
const OPERATORS = new Map<string, Operator>([
  ["+", "+"],
  ["-", "-"],
  ["*", "*"],
  ["×", "*"],
  ["/", "/"],
  ["÷", "/"],
  ["%", "%"],
  ["^", "^"],
]);

/**
 * Evaluates an arithmetic expression: numbers, `+ - * / % ^`, unary `-`/`+` and parentheses.
 * Precedence, from tightest: `^` (right-associative), unary sign, `* / %`, `+ -`; so `-2^2` is -4.
 * Throws an `ExpressionError` for malformed input, division by zero or a non-finite result.
 */
export function evaluateExpression(input: string): number {
  const result = new Parser(input, tokenize(input)).parse();
  // `0*-1` is -0 in IEEE arithmetic; nobody asking a calculator wants to see that.
  return result === 0 ? 0 : result;
}

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let position = 0;
  while (position < input.length) {
    const char = input[position] as string;
    if (/\s/.test(char)) {
      position++;
      continue;
    }
    NUMBER.lastIndex = position;
    const number = NUMBER.exec(input);
    if (number !== null) {
      const text = number[0];
      const value = Number(text);
      if (!Number.isFinite(value)) throw new ExpressionError(`Number "${text}" is too large`, position);
      tokens.push({ kind: "number", value, text, position });
      position += text.length;
      continue;
    }
    const operator = OPERATORS.get(char);
    if (operator !== undefined) tokens.push({ kind: "operator", operator, text: char, position });
    else if (char === "(" || char === ")") tokens.push({ kind: char, text: char, position });
    else {
      // Report the whole code point, so an emoji is not shown as half a surrogate pair.
      const shown = String.fromCodePoint(input.codePointAt(position) as number);
      throw new ExpressionError(`Unexpected character "${shown}" at position ${position}`, position);
    }
    position++;
  }
  return tokens;
}

/** Recursive descent over the tokens, computing the value as it goes (no syntax tree is needed). */
class Parser {
  readonly #input: string;
  readonly #tokens: Token[];
  #index = 0;

  constructor(input: string, tokens: Token[]) {
    this.#input = input;
    this.#tokens = tokens;
  }

  parse(): number {
    if (this.#tokens.length === 0) throw new ExpressionError("Empty expression", 0);
    const value = this.#sum();
    const extra = this.#peek();
    if (extra !== undefined) throw unexpected(extra);
    return value;
  }

  // sum := product (("+" | "-") product)*
  #sum(): number {
    let value = this.#product();
    for (;;) {
      const operator = this.#takeOperator("+", "-");
      if (operator === undefined) return value;
      value = apply(operator, value, this.#product());
    }
  }

  // product := signed (("*" | "/" | "%") signed)*
  #product(): number {
    let value = this.#signed();
    for (;;) {
      const operator = this.#takeOperator("*", "/", "%");
      if (operator === undefined) return value;
      value = apply(operator, value, this.#signed());
    }
  }

  // signed := ("-" | "+") signed | power
  #signed(): number {
    const sign = this.#takeOperator("+", "-");
    if (sign === undefined) return this.#power();
    const value = this.#signed();
    return sign.operator === "-" ? -value : value;
  }

  // power := primary ("^" signed)?  Recursing into `signed` makes "^" right-associative and allows 2^-1.
  #power(): number {
    const base = this.#primary();
    const caret = this.#takeOperator("^");
    return caret === undefined ? base : apply(caret, base, this.#signed());
  }

  // primary := number | "(" sum ")"
  #primary(): number {
    const token = this.#next();
    if (token === undefined) throw new ExpressionError("Unexpected end of expression", this.#input.length);
    if (token.kind === "number") return token.value;
    if (token.kind !== "(") throw unexpected(token);
    const value = this.#sum();
    const closing = this.#next();
    if (closing === undefined)
      throw new ExpressionError(
        `Missing closing parenthesis for "(" at position ${token.position}`,
        token.position,
      );
    if (closing.kind !== ")") throw unexpected(closing);
    return value;
  }

  #peek(): Token | undefined {
    return this.#tokens[this.#index];
  }

  #next(): Token | undefined {
    return this.#tokens[this.#index++];
  }

  /** Consumes the next token if it is one of `operators`. */
  #takeOperator(...operators: Operator[]): OperatorToken | undefined {
    const token = this.#peek();
    if (token?.kind !== "operator" || !operators.includes(token.operator)) return undefined;
    this.#index++;
    return token;
  }
}

function apply(token: OperatorToken, left: number, right: number): number {
  const { operator, position } = token;
  if ((operator === "/" || operator === "%") && right === 0)
    throw new ExpressionError("Division by zero", position);
  const result = compute(operator, left, right);
  // Checked at every step: an overflow can otherwise vanish from the final result (1/(1e308*10) is 0).
  if (!Number.isFinite(result)) throw new ExpressionError("Result is not a finite number", position);
  return result;
}

function compute(operator: Operator, left: number, right: number): number {
  switch (operator) {
    case "+":
      return left + right;
    case "-":
      return left - right;
    case "*":
      return left * right;
    case "/":
      return left / right;
    case "%":
      return left % right;
    case "^":
      return left ** right;
  }
}

function unexpected(token: Token): ExpressionError {
  return new ExpressionError(`Unexpected "${token.text}" at position ${token.position}`, token.position);
}
