/**
 * Arguments the tool may change: a schema may pass any part of what it checks through (a JSON
 * Schema all of it, zod a `z.any()` field or a loose object's extra keys), and a tool that sorted
 * a list in place would change the call the history (and its `tool_call` event) records. The
 * arguments are JSON, so a copy of their objects and arrays is cheap; anything else an
 * orchestrator's call holds is kept as it is, and one nested past `MAX_COPY_DEPTH` (a cycle, say)
 * is copied by `structuredClone`, when it can be. The calls an agent lists as waiting for approval
 * give copies too: an approval screen that edits what it shows must change neither the history nor
 * what the tool is run with.
 */
export function ownArgs(args: unknown): unknown {
  if (typeof args !== "object" || args === null) return args;
  try {
    return copyJson(args, 0);
  } catch {
    try {
      return structuredClone(args);
    } catch {
      return args;
    }
  }
}

const MAX_COPY_DEPTH = 256;

function copyJson(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (depth > MAX_COPY_DEPTH) throw new RangeError("nested too deep to copy");
  if (Array.isArray(value)) return value.map((item) => copyJson(item, depth + 1));
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = copyJson((value as Record<string, unknown>)[key], depth + 1);
    // JSON.parse makes "__proto__" a key like any other; assigned, it would set the prototype.
    if (key === "__proto__")
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy;
}
