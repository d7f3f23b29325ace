import { InvalidConfigError } from "@agent-core/core";

/**
 * Throws an `InvalidConfigError` naming a key of `record` that is not one of `known`, as agent-core
 * refuses one in an agent's config: a misspelt key (`arg` for `args`, `callTimeout`) would
 * otherwise silently not apply. `what` says where, and whose the keys are: `connectMcp(): …`.
 */
export function refuseUnknownKeys(record: object, known: readonly string[], what: string): void {
  const unknown = Object.keys(record).filter((key) => !known.includes(key));
  if (unknown.length === 0) return;
  const keys = unknown.join(", ");
  throw new InvalidConfigError(
    `${what}: ${keys} ${unknown.length === 1 ? "is not a setting" : "are not settings"} (known: ${known.join(", ")}).`,
  );
}
