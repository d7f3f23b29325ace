/** A whole-number option of a benchmark, from the environment: `name`, or `fallback` when unset. */
export function benchOption(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be a whole number >= 1, got ${JSON.stringify(text)}.`);
  return value;
}
