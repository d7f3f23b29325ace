import { describe, expect, it } from "vitest";
import { canonicalHash, canonicalJson, canonicalJsonWithin } from "./canonical-json.js";

describe("canonicalJson", () => {
  it("gives the same text whether or not the keys came sorted, skipping undefined like JSON does", () => {
    expect(canonicalJson({ a: 1, b: { c: [1, { d: 2, e: null }] } })).toBe(
      '{"a":1,"b":{"c":[1,{"d":2,"e":null}]}}',
    );
    expect(canonicalJson({ b: { e: null, d: 2 }, a: 1 })).toBe('{"a":1,"b":{"d":2,"e":null}}');
    expect(canonicalJson({ a: 1, z: undefined })).toBe('{"a":1}');
    expect(canonicalJson({ z: undefined, a: 1 })).toBe('{"a":1}');
    expect(canonicalJson("x")).toBe('"x"');
  });

  it("sorts keys at every depth and keeps arrays in order", () => {
    expect(canonicalJson({ b: [2, { d: 1, c: 0 }], a: null })).toBe('{"a":null,"b":[2,{"c":0,"d":1}]}');
  });
});

describe("canonicalHash", () => {
  it("is the same for values with the same canonical JSON", () => {
    const same: [unknown, unknown][] = [
      [
        { q: "a", page: 1 },
        { page: 1, q: "a" },
      ],
      [{ a: { y: [1, "x"], x: true } }, { a: { x: true, y: [1, "x"] } }],
      [{ a: 1, skipped: undefined, fn: () => 1 }, { a: 1 }],
      [-0, 0],
      [Number.NaN, null],
      [Number.POSITIVE_INFINITY, null],
      [undefined, null],
      [
        [undefined, 1],
        [null, 1],
      ],
      [
        "a long text that is sampled rather than read whole, ".repeat(20),
        "a long text that is sampled rather than read whole, ".repeat(20),
      ],
    ];
    for (const [a, b] of same) {
      expect(canonicalJson(a)).toBe(canonicalJson(b));
      expect(canonicalHash(a)).toBe(canonicalHash(b));
    }
  });

  it("tells apart the values tool arguments usually differ by", () => {
    const distinct: unknown[] = [
      { a: 0, b: 1 },
      { a: 1, b: 1 },
      { a: 1, b: 0 },
      { a: 0.5, b: 1 },
      { a: "0", b: 1 },
      { b: 0, c: 1 },
      [0, 1],
      [1, 0],
      "search",
      "searches",
      true,
      false,
      null,
      { a: { b: 1 } },
      { a: [1] },
    ];
    expect(new Set(distinct.map((value) => canonicalHash(value))).size).toBe(distinct.length);
  });
});

describe("canonicalJson, values JSON writes as null or leaves out", () => {
  it("writes a function or a symbol on its own as null", () => {
    expect(canonicalJson(() => 1)).toBe("null");
    expect(canonicalJson(Symbol("s"))).toBe("null");
    expect(canonicalJson(undefined)).toBe("null");
  });

  it("sorts the keys of every object in an array, not only when all of them need it", () => {
    expect(canonicalJson([{ a: 1 }, { b: 2, a: 1 }])).toBe('[{"a":1},{"a":1,"b":2}]');
  });

  it("keeps keys named like JSON literals", () => {
    expect(canonicalJson({ null: 2, undefined: 1 })).toBe('{"null":2,"undefined":1}');
    expect(canonicalJson({ undefined: 1, null: 2 })).toBe('{"null":2,"undefined":1}');
  });
});

describe("canonicalHash, values JSON leaves out of an object", () => {
  it("skips undefined, functions and symbols, as JSON.stringify does", () => {
    const withSkipped = { a: 1, u: undefined, f: () => 1, s: Symbol("s") };
    expect(JSON.stringify(withSkipped)).toBe('{"a":1}');
    expect(canonicalHash(withSkipped)).toBe(canonicalHash({ a: 1 }));
  });
});

describe("canonicalJson and keys JSON leaves out", () => {
  it("drops a symbol-valued key as JSON.stringify does, in any key order, and hashes alike", () => {
    const sorted = { a: 1, s: Symbol("x") };
    const unsorted = { s: Symbol("x"), a: 1 };
    expect(canonicalJson(sorted)).toBe('{"a":1}');
    expect(canonicalJson(unsorted)).toBe('{"a":1}');
    expect(canonicalHash(unsorted)).toBe(canonicalHash({ a: 1 }));
  });
});

describe("canonicalJsonWithin", () => {
  /** Arrays and objects taking turns, `levels` deep. */
  const nested = (levels: number): unknown =>
    levels === 0 ? 1 : levels % 2 ? [nested(levels - 1)] : { a: nested(levels - 1) };

  it("writes what canonicalJson writes while the value nests at most maxDepth levels", () => {
    expect(canonicalJsonWithin({ b: [1], a: 2 }, 2)).toBe('{"a":2,"b":[1]}');
    expect(canonicalJsonWithin(nested(3), 3)).toBe(canonicalJson(nested(3)));
    expect(canonicalJsonWithin("text", 0)).toBe('"text"');
  });

  it("gives up past maxDepth, in arrays and objects, and on a cyclic value", () => {
    expect(canonicalJsonWithin(nested(3), 2)).toBeUndefined();
    expect(canonicalJsonWithin(nested(4), 3)).toBeUndefined();
    expect(canonicalJsonWithin({ ok: 1, deep: [[[]]] }, 3)).toBeUndefined();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(canonicalJsonWithin(cyclic, 1000)).toBeUndefined();
  });
});
