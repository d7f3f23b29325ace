import { describe, expect, it } from "vitest";
import { z } from "zod";
import { HttpError } from "./http-error.js";
import { afterOf, readJsonBody, runIdOf } from "./request-parsing.js";

/** The status and code of the `HttpError` that `attempt` throws (or rejects with). */
async function refusal(attempt: () => unknown): Promise<[number, string]> {
  try {
    await attempt();
  } catch (error) {
    if (error instanceof HttpError) return [error.status, error.code];
    throw error;
  }
  throw new Error("nothing was refused");
}

const events = (query: string, headers: Record<string, string> = {}) =>
  new Request(`http://localhost/runs/r1/events${query}`, { headers });

const posted = (body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) =>
  new Request("http://localhost/runs", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

describe("runIdOf", () => {
  it("decodes a path segment's %-escapes", () => {
    expect(runIdOf("r1")).toBe("r1");
    expect(runIdOf("a%2Fb%20c")).toBe("a/b c");
  });

  it("refuses a malformed %-escape with 400 invalid-path", async () => {
    for (const segment of ["%ZZ", "%", "%4", "%E0%A4%A", "r1%"])
      expect([segment, await refusal(() => runIdOf(segment))]).toEqual([segment, [400, "invalid-path"]]);
  });
});

describe("afterOf", () => {
  it("takes the later of ?after= and Last-Event-ID, else -1", () => {
    expect(afterOf(events(""))).toBe(-1n);
    expect(afterOf(events("?after=0"))).toBe(0n);
    expect(afterOf(events("?after=12"))).toBe(12n);
    expect(afterOf(events("", { "last-event-id": "7" }))).toBe(7n);
    // An EventSource opened on ?after=3 reconnects with the same URL and the last id it saw.
    expect(afterOf(events("?after=3", { "last-event-id": "7" }))).toBe(7n);
    expect(afterOf(events("?after=9", { "last-event-id": "7" }))).toBe(9n);
  });

  it("refuses anything but a seq in canonical decimal digits with 400 invalid-after, from either source", async () => {
    const notASeq = ["", "abc", "0x2", "1e0", "01", "00", "-1", "+1", "1.0", "1_0", "Infinity"];
    for (const raw of notASeq) {
      const byQuery = await refusal(() => afterOf(events(`?after=${encodeURIComponent(raw)}`)));
      const byHeader = await refusal(() => afterOf(events("", { "last-event-id": raw })));
      expect({ raw, byQuery, byHeader }).toEqual({
        raw,
        byQuery: [400, "invalid-after"],
        byHeader: [400, "invalid-after"],
      });
    }
    // What a header cannot carry: Headers trims surrounding white space and refuses non-Latin-1.
    for (const raw of [" ", " 1", "1\n", "\u0661"])
      expect([raw, await refusal(() => afterOf(events(`?after=${encodeURIComponent(raw)}`)))]).toEqual([
        raw,
        [400, "invalid-after"],
      ]);
    // Both are read: either one malformed is refused, whatever the other says.
    expect(await refusal(() => afterOf(events("?after=", { "last-event-id": "1" })))).toEqual([
      400,
      "invalid-after",
    ]);
    expect(await refusal(() => afterOf(events("?after=1", { "last-event-id": "x" })))).toEqual([
      400,
      "invalid-after",
    ]);
  });

  it("refuses ?after= given more than once with 400 invalid-after that says so, whatever the values", () => {
    for (const query of ["?after=1&after=5", "?after=5&after=1", "?after=3&after=3", "?after=2&after="]) {
      let refused: unknown;
      try {
        afterOf(events(query));
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(HttpError);
      expect(refused).toMatchObject({
        status: 400,
        code: "invalid-after",
        message: expect.stringMatching(/once/),
      });
    }
  });
});

describe("readJsonBody", () => {
  const anything = z.unknown();
  const arrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

  it("takes a body nested 100 levels deep, and refuses one nested deeper with 400 invalid-body", async () => {
    const hundred = await readJsonBody(posted(arrays(100)), anything, 1_000_000);
    expect(JSON.stringify(hundred)).toBe(arrays(100));
    // The body's own object counts as a level.
    await readJsonBody(posted(`{"a":${arrays(99)}}`), anything, 1_000_000);
    for (const body of [arrays(101), `{"a":${arrays(100)}}`, arrays(20_000)])
      expect([body.length, await refusal(() => readJsonBody(posted(body), anything, 1_000_000))]).toEqual([
        body.length,
        [400, "invalid-body"],
      ]);
  });

  it("refuses past maxBytes with 413, by Content-Length or by what the body turns out to hold", async () => {
    const body = JSON.stringify({ prompt: "x".repeat(20) });
    expect(await readJsonBody(posted(body), anything, body.length)).toEqual({ prompt: "x".repeat(20) });
    expect(await refusal(() => readJsonBody(posted(body), anything, body.length - 1))).toEqual([
      413,
      "body-too-large",
    ]);
    const understated = posted(body, { "content-length": "2" });
    expect(await refusal(() => readJsonBody(understated, anything, 10))).toEqual([413, "body-too-large"]);
    const overstated = posted("{}", { "content-length": "11" });
    expect(await refusal(() => readJsonBody(overstated, anything, 10))).toEqual([413, "body-too-large"]);
  });

  it("refuses another media type with 415, bad JSON with 400 invalid-json, a body off the schema with its issues", async () => {
    const text = new Request("http://localhost/runs", { method: "POST", body: "{}" });
    expect(await refusal(() => readJsonBody(text, anything, 100))).toEqual([415, "unsupported-media-type"]);
    // Only the media type counts: one a browser sends cross-site without a preflight is refused.
    for (const type of ["text/plain; a=application/json", "application/json-seq", "text/application/json"])
      expect(
        await refusal(() => readJsonBody(posted("{}", { "content-type": type }), anything, 100)),
      ).toEqual([415, "unsupported-media-type"]);
    for (const type of ["application/json; charset=utf-8", "Application/JSON"])
      expect(await readJsonBody(posted("{}", { "content-type": type }), anything, 100)).toEqual({});
    expect(await refusal(() => readJsonBody(posted("{"), anything, 100))).toEqual([400, "invalid-json"]);
    expect(await refusal(() => readJsonBody(posted(""), anything, 100))).toEqual([400, "invalid-json"]);
    // Bytes that are not UTF-8 (0xFF), even inside a string: not JSON, never U+FFFD in the prompt.
    const notUtf8 = new Uint8Array([...new TextEncoder().encode('{"prompt":"a'), 0xff, 0x22, 0x7d]);
    expect(await refusal(() => readJsonBody(posted(notUtf8), anything, 100))).toEqual([400, "invalid-json"]);
    // A body that breaks off (the client went away mid-request): the client's mistake, not a 500.
    const cut = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"prompt":'));
        controller.error(new Error("aborted"));
      },
    });
    const cutRequest = new Request("http://localhost/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: cut,
      duplex: "half",
    } as RequestInit);
    expect(await refusal(() => readJsonBody(cutRequest, anything, 100))).toEqual([400, "invalid-json"]);
    const schema = z.strictObject({ prompt: z.string() });
    const off = await readJsonBody(posted('{"prompt":5}'), schema, 100).catch((error: unknown) => error);
    expect(off).toBeInstanceOf(HttpError);
    expect(off).toMatchObject({ status: 400, code: "invalid-body", issues: [{ path: "prompt" }] });
  });
});
