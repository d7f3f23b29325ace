/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same arguments. Built directly:
 * a stringify replacer would copy every object on each call. */
export function canonicalJson(value: unknown): string {
  return canonicalJsonWithin(value, Number.POSITIVE_INFINITY) as string;
}

/**
 * `canonicalJson(value)`, or `undefined` when objects and arrays nest more than `maxDepth` levels
 * deep (a cyclic value too): the text is written recursively, and some thousands of levels
 * overflow the stack.
 */
export function canonicalJsonWithin(value: unknown, maxDepth: number): string | undefined {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (maxDepth < 1) return undefined;
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      const item = canonicalJsonWithin(value[i] ?? null, maxDepth - 1);
      if (item === undefined) return undefined;
      out += (i > 0 ? "," : "") + item;
    }
    return `${out}]`;
  }
  const keys = Object.keys(value);
  if (keys.length > 1) keys.sort();
  let out = "{";
  let first = true;
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    // As JSON.stringify (and canonicalHash) do: keys whose value JSON cannot write are left out.
    if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
    const text = canonicalJsonWithin(item, maxDepth - 1);
    if (text === undefined) return undefined;
    out += `${first ? "" : ","}${JSON.stringify(key)}:${text}`;
    first = false;
  }
  return `${out}}`;
}
/**
 * A cheap hash of a value's canonical JSON: values with the same `canonicalJson` always get the
 * same hash (keys are combined in any order, `-0` is `0`, whatever JSON writes as `null` hashes
 * like `null`), so a value whose hash was never seen is certainly new, without building any text.
 * Strings are sampled rather than read whole, and depth is capped: equal hashes only mean
 * "compare the canonical texts".
 */
export function canonicalHash(value: unknown, depth = 0): number {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value) ? numberHash(value) : NULL_HASH;
    case "string":
      return stringHash(value);
    case "boolean":
      return value ? 0x2f0b3c71 : 0x5a4e6d19;
    case "object":
      if (value === null) return NULL_HASH;
      if (depth >= MAX_HASH_DEPTH) return DEEP_HASH;
      if (Array.isArray(value)) {
        let hash = 0x3c6ef372 ^ value.length;
        for (let i = 0; i < value.length; i++)
          hash = (Math.imul(hash, 0x01000193) ^ canonicalHash(value[i], depth + 1)) | 0;
        return hash;
      } else {
        // A sum, so the order of the keys does not matter; skipped values are the ones JSON drops.
        let hash = 0x1b873593;
        for (const key in value) {
          const item = (value as Record<string, unknown>)[key];
          if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
          hash = (hash + (Math.imul(stringHash(key), 0x9e3779b1) ^ canonicalHash(item, depth + 1))) | 0;
        }
        return hash;
      }
    default:
      // undefined, a function, a symbol: JSON writes `null` (or nothing, inside an object).
      return NULL_HASH;
  }
}

const NULL_HASH = 0x6b43a9b5;
const DEEP_HASH = 0x7f4a7c15;
const MAX_HASH_DEPTH = 8;

function numberHash(value: number): number {
  // `-0 | 0` and `-0 % 1 * 1e9 | 0` are both 0: `-0` and `0` hash alike, as JSON writes both "0".
  return Math.imul((value | 0) ^ 0x45d9f3b, 0x27d4eb2d) ^ (((value % 1) * 1e9) | 0);
}

/** The length and up to 16 characters spread over the string. */
function stringHash(text: string): number {
  const length = text.length;
  let hash = 0x811c9dc5 ^ length;
  const step = length <= 16 ? 1 : length >>> 4;
  for (let i = 0; i < length; i += step) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash;
}
