/** A request the server refuses: its status, a stable `code` and a message, sent as JSON. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  readonly issues: { path: string; message: string }[] | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    extra: { headers?: Record<string, string>; issues?: { path: string; message: string }[] } = {},
  ) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.code = code;
    this.headers = extra.headers ?? {};
    this.issues = extra.issues;
  }

  toResponse(): Response {
    const error = this.issues
      ? { code: this.code, message: this.message, issues: this.issues }
      : { code: this.code, message: this.message };
    return Response.json({ error }, { status: this.status, headers: this.headers });
  }
}
