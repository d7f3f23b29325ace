/**
 * Bad input from the person at the terminal (arguments or environment): reported as one line plus a hint,
 * never as a stack trace, and the CLI exits with code 2.
 */
export class UsageError extends Error {
  readonly hint: string;

  constructor(message: string, hint = 'Run "agent-core --help" for usage.') {
    super(message);
    this.name = "UsageError";
    this.hint = hint;
  }
}
