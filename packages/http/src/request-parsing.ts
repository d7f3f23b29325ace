import type { z } from "zod";
import { HttpError } from "./http-error.js";

// What a request carries, read and checked: the run id in its path, the seq to resume after, its JSON
// body. Each refusal is an `HttpError` (a 4xx with a stable code), never a 500.

/**
 * The later of `?after=seq` and `Last-Event-ID`, or -1 (from the start) without either. The later:
 * an `EventSource` opened on `…/events?after=N` reconnects with the same URL and the id of the
 * last event it got, and must not get the events in between twice.
 *
 * A bigint: a seq past 2^53-1 (which no run has) is compared, and named in the refusal, as the
 * client sent it, where a number would round it (9007199254740993 to …992).
 */
export function afterOf(request: Request): bigint {
  const given = new URL(request.url).searchParams.getAll("after");
  // Which one the client meant cannot be told: taking either could skip events or send some twice.
  if (given.length > 1)
    throw new HttpError(
      400,
      "invalid-after",
      `Give after once; it was given ${given.length} times (${given.map((raw) => `"${raw}"`).join(", ")}).`,
    );
  const query = seqOf(given[0] ?? null);
  const header = seqOf(request.headers.get("last-event-id"));
  // biome-ignore lint/complexity/useMathMinMax: Math.max throws on bigints.
  return query > header ? query : header;
}

function seqOf(raw: string | null): bigint {
  if (raw === null) return -1n;
  // Decimal digits only: Number() reads "" and " " as 0 (skipping agent_start), "0x2" as 2.
  if (!/^(0|[1-9][0-9]*)$/.test(raw))
    throw new HttpError(
      400,
      "invalid-after",
      `after must be a seq in decimal digits (0, 1, …), got "${raw}".`,
    );
  return BigInt(raw);
}

/** The run id a path segment names: a malformed %-escape (`%ZZ`) is the client's mistake, not a 500. */
export function runIdOf(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, "invalid-path", `The run id "${segment}" is not valid percent-encoding.`);
  }
}

/**
 * How deep a body's arrays and objects may nest. What takes a body's values (the ledger's digest,
 * the agent's checks, the model's history) walks them recursively: far deeper JSON, still small,
 * overflows the stack and would be a 500 the client retries.
 */
const MAX_BODY_DEPTH = 100;

/**
 * The request's JSON body, read up to `maxBytes` (413 past it, whatever `Content-Length` claims),
 * nested at most `MAX_BODY_DEPTH` levels and checked against `schema` (400 with every issue).
 */
export async function readJsonBody<Schema extends z.ZodType>(
  request: Request,
  schema: Schema,
  maxBytes: number,
): Promise<z.output<Schema>> {
  if (!isJson(request.headers.get("content-type")))
    throw new HttpError(415, "unsupported-media-type", "Send the body as application/json.");
  const declared = Number(request.headers.get("content-length"));
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const text = await readText(request, maxBytes);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new HttpError(400, "invalid-json", "The body is not valid JSON.");
  }
  if (nestedDeeper(json, MAX_BODY_DEPTH))
    throw new HttpError(400, "invalid-body", `The body is nested more than ${MAX_BODY_DEPTH} levels deep.`);
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new HttpError(400, "invalid-body", "The body does not match what this route takes.", {
      issues: parsed.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message })),
    });
  return parsed.data;
}

/**
 * Whether a Content-Type's media type (what precedes its parameters) is `application/json`. Not a
 * substring test: `text/plain; a=application/json` is a type a browser sends cross-site without a
 * CORS preflight, so taking it would let another site start runs with the user's cookies.
 */
function isJson(contentType: string | null): boolean {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() === "application/json";
}

async function readText(request: Request, maxBytes: number): Promise<string> {
  if (request.body === null) return "";
  const reader = request.body.getReader();
  // Fatal: bytes that are not UTF-8 are not JSON text; replaced by U+FFFD, they would reach the
  // model as a prompt the client never sent.
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let size = 0;
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read().catch(() => {
        // The client went away mid-body (or sent a broken chunked body): its mistake, no 500 to log.
        throw new HttpError(400, "invalid-json", "The body was cut off before its end.");
      });
      if (done) return text + decode(decoder);
      size += value.byteLength;
      if (size > maxBytes) throw tooLarge(maxBytes);
      text += decode(decoder, value);
    }
  } catch (error) {
    // Refused part-way (too large, not UTF-8, cut off): the rest is not read.
    await reader.cancel().catch(() => {});
    throw error;
  }
}

/** The text of the bytes so far (all of them, without `bytes`); 400 when they are not UTF-8. */
function decode(decoder: TextDecoder, bytes?: Uint8Array): string {
  try {
    return bytes === undefined ? decoder.decode() : decoder.decode(bytes, { stream: true });
  } catch {
    throw new HttpError(400, "invalid-json", "The body is not UTF-8 text.");
  }
}

/** Whether arrays and objects nest more than `levels` deep in `value`; it looks no deeper. */
function nestedDeeper(value: unknown, levels: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (levels === 0) return true;
  for (const item of Object.values(value)) if (nestedDeeper(item, levels - 1)) return true;
  return false;
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, "body-too-large", `The body is larger than ${maxBytes} bytes.`);
}
