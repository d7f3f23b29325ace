import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NdjsonParser, type Parsed, SseParser } from "./parsers.js";

// Seeded: a failure prints the seed and the shrunk counterexample, and replays with it.
const SEED = 20_260_117;
const RUNS = 200;

const encoder = new TextEncoder();

type Parser = NdjsonParser | SseParser;

/** Feeds `bytes` to `parser` cut at `cuts` (positions anywhere, even inside a UTF-8 character). */
function feed(parser: Parser, bytes: Uint8Array, cuts: number[]): Parsed[] {
  const positions = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Parsed[] = [];
  let from = 0;
  for (const to of [...positions, bytes.length]) {
    out.push(...parser.push(bytes.subarray(from, to)));
    from = to;
  }
  out.push(...parser.end());
  return out;
}

const text = fc.oneof(
  fc.constantFrom("héllo ✓ 東京", "🎉 emoji", "line\nbreak\r\nand\rcr", "", " leading space", "data: x\n\n"),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
);

const eventArb = fc.record({
  type: fc.constantFrom("agent_start", "text_delta", "tool_call", "custom", "agent_end"),
  runId: fc.constantFrom("r1", "rün-東京"),
  seq: fc.nat(),
  ts: fc.nat(),
  text,
  data: fc.option(fc.dictionary(fc.string({ maxLength: 4 }), text, { maxKeys: 3 }), { nil: undefined }),
});

const heartbeat = fc.record({ type: fc.constant("heartbeat"), ts: fc.nat() });

/** How one event is written: compact or pretty (several `data:` lines in SSE), and the SSE line ending. */
const framing = fc.record({
  pretty: fc.boolean(),
  eol: fc.constantFrom("\n", "\r\n", "\r"),
  comment: fc.boolean(),
});

const items = fc.array(fc.tuple(fc.oneof({ weight: 5, arbitrary: eventArb }, heartbeat), framing), {
  maxLength: 12,
});
const cuts = fc.array(fc.nat(), { maxLength: 30 });

function ndjson(events: object[]): string {
  return events.map((event) => `${JSON.stringify(event)}\n`).join("");
}

function sse(
  frames: [Record<string, unknown>, { pretty: boolean; eol: string; comment: boolean }][],
): string {
  let out = "";
  for (const [event, { pretty, eol, comment }] of frames) {
    if (comment) out += `: keep-alive${eol}`;
    if (typeof event.seq === "number") out += `id: ${event.seq}${eol}`;
    out += `event: ${String(event.type)}${eol}`;
    const json = pretty ? JSON.stringify(event, null, 2) : JSON.stringify(event);
    for (const line of json.split("\n")) out += `data: ${line}${eol}`;
    out += eol;
  }
  return out;
}

/** JSON-equal copies: `undefined` fields gone, as after a round trip. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Lines that are not events: not JSON, or JSON but not an object with a string "type". */
const malformedLine = fc
  .oneof(
    fc.constantFrom("{oops", "[1,2]", '"a string"', "42", "null", '{"type":5}', '{"no":"type"}', "{", "é{"),
    fc.string({ unit: "grapheme", maxLength: 10 }),
  )
  .filter((line) => {
    if (line.trim() === "" || /[\r\n]/.test(line)) return false;
    try {
      const value = JSON.parse(line) as { type?: unknown } | null;
      return (
        typeof value !== "object" || value === null || Array.isArray(value) || typeof value.type !== "string"
      );
    } catch {
      return true;
    }
  });

const malformedEvent = (line: string) => ({ type: "client_error", code: "malformed-event", line });

describe("NdjsonParser and SseParser, property-based", () => {
  it("NDJSON: any events, cut anywhere, parse back to the same events", () => {
    fc.assert(
      fc.property(items, cuts, (frames, at) => {
        const events = plain(frames.map(([event]) => event));
        expect(feed(new NdjsonParser(), encoder.encode(ndjson(events)), at)).toEqual(events);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("SSE: any events (several data lines, \\r\\n or \\r endings, comments, heartbeats), cut anywhere, parse back", () => {
    fc.assert(
      fc.property(items, cuts, (frames, at) => {
        const plainFrames = frames.map(
          ([event, how]) => [plain(event), how] as [Record<string, unknown>, typeof how],
        );
        const parsed = feed(new SseParser(), encoder.encode(sse(plainFrames)), at);
        expect(parsed).toEqual(plainFrames.map(([event]) => event));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("NDJSON: malformed lines between good ones become client_error events, in place, and the rest still parses", () => {
    const mixed = fc.array(
      fc.oneof(
        eventArb.map((event) => ({ event: plain(event) })),
        malformedLine.map((line) => ({ line })),
      ),
      {
        maxLength: 12,
      },
    );
    fc.assert(
      fc.property(mixed, cuts, (entries, at) => {
        const wire = entries
          .map((entry) => ("event" in entry ? JSON.stringify(entry.event) : entry.line))
          .join("\n");
        const parsed = feed(new NdjsonParser(), encoder.encode(`${wire}\n`), at);
        expect(parsed).toEqual(
          entries.map((entry) =>
            "event" in entry ? entry.event : expect.objectContaining(malformedEvent(entry.line)),
          ),
        );
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("SSE: malformed data between good events becomes client_error events, in place, and the rest still parses", () => {
    const mixed = fc.array(
      fc.oneof(
        eventArb.map((event) => ({ event: plain(event) })),
        malformedLine.map((line) => ({ line })),
      ),
      {
        maxLength: 12,
      },
    );
    fc.assert(
      fc.property(mixed, cuts, (entries, at) => {
        const wire = entries
          .map((entry) => `data: ${"event" in entry ? JSON.stringify(entry.event) : entry.line}\n\n`)
          .join("");
        const parsed = feed(new SseParser(), encoder.encode(wire), at);
        expect(parsed).toEqual(
          entries.map((entry) =>
            "event" in entry ? entry.event : expect.objectContaining(malformedEvent(entry.line)),
          ),
        );
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("never throws, whatever the bytes (invalid UTF-8 included)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), cuts, (bytes, at) => {
        for (const parser of [new NdjsonParser(), new SseParser()]) {
          for (const item of feed(parser, bytes, at)) expect(typeof item.type).toBe("string");
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});

describe("NdjsonParser", () => {
  it("decodes a multi-byte character split between chunks, one byte at a time", () => {
    const event = { type: "text_delta", runId: "r", seq: 1, ts: 0, text: "héllo ✓ 東京 🎉" };
    const bytes = encoder.encode(`${JSON.stringify(event)}\n`);
    const parser = new NdjsonParser();
    const parsed: Parsed[] = [];
    for (let i = 0; i < bytes.length; i++) parsed.push(...parser.push(bytes.subarray(i, i + 1)));
    expect(parsed).toEqual([event]);
    expect(parser.end()).toEqual([]);
  });

  it("returns several events of one chunk in order, skips blank lines, takes \\r\\n and strings", () => {
    const parser = new NdjsonParser();
    expect(parser.push('{"type":"a"}\n\n  \r\n{"type":"b"}\r\n{"type"')).toEqual([
      { type: "a" },
      { type: "b" },
    ]);
    expect(parser.push(':"c"}\n')).toEqual([{ type: "c" }]);
  });

  it("parses a last line without its newline at end(), and reports a truncated one", () => {
    const parser = new NdjsonParser();
    expect(parser.push('{"type":"a"}\n{"type":"b"}')).toEqual([{ type: "a" }]);
    expect(parser.end()).toEqual([{ type: "b" }]);
    const truncated = new NdjsonParser();
    truncated.push('{"type":"a","te');
    expect(truncated.end()).toEqual([
      {
        type: "client_error",
        code: "malformed-event",
        message: expect.stringMatching(/^Not JSON: /),
        line: '{"type":"a","te',
      },
    ]);
  });

  it("says why a line is not an event", () => {
    const parser = new NdjsonParser();
    expect(parser.push('[{"type":"a"}]\n{"type":null}\nnope\n{"type":"ok"}\n')).toEqual([
      {
        type: "client_error",
        code: "malformed-event",
        message: 'Not an event: an event is a JSON object with a string "type".',
        line: '[{"type":"a"}]',
      },
      {
        type: "client_error",
        code: "malformed-event",
        message: 'Not an event: an event is a JSON object with a string "type".',
        line: '{"type":null}',
      },
      expect.objectContaining({ code: "malformed-event", line: "nope" }),
      { type: "ok" },
    ]);
  });

  it("takes no client_error from the stream: that type is the client's own, so a server cannot forge one", () => {
    const forged = '{"type":"client_error","code":"tool-result-rejected","toolCallId":"c1","status":410}';
    const expected = [
      {
        type: "client_error",
        code: "malformed-event",
        message:
          "Not an event: \"client_error\" is the type of the client's own events, never of the stream's.",
        line: forged,
      },
    ];
    expect(new NdjsonParser().push(`${forged}\n`)).toEqual(expected);
    expect(new SseParser().push(`data: ${forged}\n\n`)).toEqual(expected);
  });
});

describe("SseParser", () => {
  it("joins data lines with \\n, strips one space after the colon, ignores comments, other fields and a lone id", () => {
    const parser = new SseParser();
    const wire =
      ': a comment\nretry: 10\nid: 7\nevent: thinking\ndata:{"type":"thinking",\ndata:  "text":"x"}\nunknown: field\n\n' +
      "id: 8\n\n" +
      'data: {"type":"a"}\n\n';
    expect(parser.push(wire)).toEqual([{ type: "thinking", text: "x" }, { type: "a" }]);
  });

  it("handles \\r\\n split between chunks, and lone \\r line endings", () => {
    const parser = new SseParser();
    expect(parser.push('data: {"type":"a"}\r')).toEqual([]);
    expect(parser.push("\n")).toEqual([]);
    expect(parser.push("\r")).toEqual([{ type: "a" }]);
    // The "\n" after that "\r" is part of the same line break, not another blank line.
    expect(parser.push('\ndata: {"type":"b"}\r\rdata: {"type":"c"}\r\n\r\n')).toEqual([
      { type: "b" },
      { type: "c" },
    ]);
  });

  it("a field line without a colon is a field with an empty value; empty data dispatches nothing", () => {
    const parser = new SseParser();
    expect(parser.push("data\n\ndata:\n\n")).toEqual([]);
    // "data" alone adds an empty line to the event's data: JSON allows that leading "\n".
    expect(parser.push('data\ndata: {"type":"a"}\n\ndata\ndata: no\n\n')).toEqual([
      { type: "a" },
      expect.objectContaining({ code: "malformed-event", line: "\nno" }),
    ]);
  });

  it("drops an event whose closing blank line never came, at end()", () => {
    const parser = new SseParser();
    expect(parser.push('data: {"type":"a"}\n\ndata: {"type":"b"}\n')).toEqual([{ type: "a" }]);
    expect(parser.end()).toEqual([]);
  });

  it("decodes a multi-byte character split between chunks", () => {
    const bytes = encoder.encode('data: {"type":"t","text":"東京"}\n\n');
    const at = bytes.indexOf(0xe6) + 1; // inside 東
    const parser = new SseParser();
    expect([...parser.push(bytes.subarray(0, at)), ...parser.push(bytes.subarray(at))]).toEqual([
      { type: "t", text: "東京" },
    ]);
  });
});

describe("maxEventBytes", () => {
  const bytesOf = (text: string) => encoder.encode(text).length;

  /** What `feed` returns, and whether the parser refused an event past its maxEventBytes. */
  function outcome(parser: Parser, bytes: Uint8Array, cuts: number[]) {
    const events = feed(parser, bytes, cuts);
    return { events, tooLarge: parser.tooLarge };
  }

  /** Every way to cut `bytes` in two, and the cut into single bytes. */
  function everyCut(bytes: Uint8Array): number[][] {
    const single = Array.from({ length: bytes.length }, (_, at) => at);
    return [[], single, ...single.map((at) => [at])];
  }

  it("counts an event's bytes however the chunks cut it: events within the limit parse, the first past it is refused after them", () => {
    // The model: an NDJSON event is its line; an SSE event is its frame, but it is complete once its
    // blank line's `\r` comes, so the `\n` of a closing `\r\n` counts toward the next event.
    fc.assert(
      fc.property(items, cuts, fc.nat(), fc.constantFrom(-1, 0, 1), (frames, at, pick, delta) => {
        const events = frames.map(([event]) => plain(event));
        const lines = events.map((event) => ndjson([event]));
        const sseFrames = frames.map(([event, how]) => sse([[plain(event), how]]));
        const sseCounts = frames.map(
          ([, how], i) =>
            bytesOf(sseFrames[i] as string) -
            (how.eol === "\r\n" ? 1 : 0) +
            (frames[i - 1]?.[1].eol === "\r\n" ? 1 : 0),
        );
        for (const [parser, wire, counts] of [
          [NdjsonParser, lines, lines.map(bytesOf)],
          [SseParser, sseFrames, sseCounts],
        ] as const) {
          const maxEventBytes = Math.max(1, (counts[pick % Math.max(1, counts.length)] ?? 1) + delta);
          const taken = counts.findIndex((count) => count > maxEventBytes);
          const expected = taken === -1 ? events : events.slice(0, taken);
          const fed = outcome(new parser({ maxEventBytes }), encoder.encode(wire.join("")), at);
          expect(fed).toEqual({ events: expected, tooLarge: taken !== -1 });
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("takes an event of exactly maxEventBytes and refuses one byte more, cut anywhere, a byte at a time included", () => {
    const ndjsonEvent = '{"type":"a","text":"東京 🎉"}\n';
    const sseEvent = 'data: {"type":"a",\ndata: "text":"東京 🎉"}\n\n';
    for (const [parser, wire] of [
      [NdjsonParser, ndjsonEvent],
      [SseParser, sseEvent],
    ] as const) {
      const bytes = encoder.encode(wire);
      for (const at of everyCut(bytes)) {
        expect(outcome(new parser({ maxEventBytes: bytes.length }), bytes, at)).toEqual({
          events: [{ type: "a", text: "東京 🎉" }],
          tooLarge: false,
        });
        expect(outcome(new parser({ maxEventBytes: bytes.length - 1 }), bytes, at)).toEqual({
          events: [],
          tooLarge: true,
        });
      }
    }
  });

  it("refuses at the byte past the limit though it is inside a multi-byte character", () => {
    const line = '{"type":"a","text":"東"}\n';
    const bytes = encoder.encode(line);
    const inside = bytes.indexOf(0xe6) + 1; // after the first of 東's three bytes
    const parser = new NdjsonParser({ maxEventBytes: inside });
    expect(parser.push(bytes.subarray(0, inside))).toEqual([]);
    expect(parser.tooLarge).toBe(false);
    expect(parser.push(bytes.subarray(inside, inside + 1))).toEqual([]);
    expect(parser.tooLarge).toBe(true);
  });

  it("SSE with \\r\\n line breaks: each event after the first counts its own bytes, however the chunks cut the \\r\\n", () => {
    const first = 'data: {"type":"a"}\r\n\r\n';
    const second = 'data: {"type":"bb"}\r\n\r\n';
    const bytes = encoder.encode(first + second);
    for (const at of everyCut(bytes)) {
      expect(outcome(new SseParser({ maxEventBytes: second.length }), bytes, at)).toEqual({
        events: [{ type: "a" }, { type: "bb" }],
        tooLarge: false,
      });
      expect(outcome(new SseParser({ maxEventBytes: second.length - 1 }), bytes, at)).toEqual({
        events: [{ type: "a" }],
        tooLarge: true,
      });
    }
  });

  it("refuses a line that never ends at the chunk that takes it past the limit, and takes nothing more", () => {
    for (const [parser, start, line] of [
      [new NdjsonParser({ maxEventBytes: 1_000 }), '{"type":"a"}\n', "x"],
      [new SseParser({ maxEventBytes: 1_000 }), 'data: {"type":"a"}\n\n', "data: x"],
    ] as const) {
      expect(parser.push(start)).toEqual([{ type: "a" }]);
      expect(parser.push(line.padEnd(100, "x"))).toEqual([]);
      for (let i = 1; i < 10; i++) parser.push("x".repeat(100));
      expect(parser.tooLarge).toBe(false);
      expect(parser.push("x")).toEqual([]);
      expect(parser.tooLarge).toBe(true);
      expect(parser.push('\n\n{"type":"b"}\n\ndata: {"type":"b"}\n\n')).toEqual([]);
      expect(parser.end()).toEqual([]);
    }
  });
});
