/**
 * A tool's value as the JSON text the model reads, or a `TypeError` saying which part JSON would
 * write as something else (the model would read that as the tool's answer). `undefined` for a
 * value JSON writes nothing for (a tool that returns nothing).
 */
export function jsonAsWritten(value: unknown): string | undefined {
  const content = JSON.stringify(value);
  // What JSON writes in place of a value it cannot hold is `{}` or `null`: only a text with one
  // of them is written again, to refuse such a value (the common result pays two scans).
  if (content !== undefined && (content.includes("{}") || content.includes("null")))
    JSON.stringify(value, refuseWrittenAsOther);
  return content;
}

/**
 * A `JSON.stringify` replacer that throws for a value JSON writes as something else, which the
 * model would read as the tool's answer: NaN and ±Infinity (written `null`), an array's
 * `undefined`, hole, function or symbol (written `null`; as an object's property JSON leaves
 * such a value out, and the rest reads true), and an object that is neither plain nor an array
 * and has no property of its own (written `{}`: a Map, a Set, an Error, a class instance whose
 * data is in private fields or getters). A `toJSON` has already run.
 */
function refuseWrittenAsOther(this: unknown, key: string, value: unknown): unknown {
  const at = key === "" ? "" : ` at ${JSON.stringify(key)}`;
  if (typeof value === "number" && !Number.isFinite(value))
    throw new TypeError(`${value}${at}, which JSON writes as null.`);
  if (
    Array.isArray(this) &&
    (value === undefined || typeof value === "function" || typeof value === "symbol")
  )
    throw new TypeError(
      `${value === undefined ? "undefined" : `a ${typeof value}`}${at} in an array, which JSON writes as null.`,
    );
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype === Object.prototype || prototype === null || Object.keys(value).length > 0) return value;
  const name = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
  const what =
    typeof name === "string" && name !== "" ? `${/^[AEIOU]/.test(name) ? "an" : "a"} ${name}` : "an object";
  throw new TypeError(
    `${what}${at}, which JSON writes as {} (convert it to a plain object or an array first).`,
  );
}
