import { InvalidConfigError } from "@agent-core/core";
import { shown } from "./durable-messages.js";

// A run's id is a workflow's: it must name one PostgreSQL can store and DBOS can notify of.

/**
 * The longest run id, in UTF-8 bytes: below what a btree index entry holds (about 2700 bytes, the
 * key of every table of runs) and a `NOTIFY` payload (under 8000).
 */
const LONGEST_RUN_ID_BYTES = 2048;

/**
 * Throws unless `runId` can name a workflow: a non-empty string (an empty one would be no id, and
 * the start not idempotent), not of the form of a workflow's later runs, `<runId>.2`, `.3`, …,
 * whose events it would share, and one PostgreSQL can store and `NOTIFY`.
 */
export function checkRunId(runId: unknown): void {
  if (runId === undefined) return;
  checkIsRunId(runId);
  if (!storable(runId))
    throw new InvalidConfigError(
      `runId must hold no U+0000 and no lone surrogate (PostgreSQL cannot store them), got ${shown(runId)}.`,
    );
  // Every table keys a run by its id, and each event's `NOTIFY` carries it (with a later run's
  // `.<n>`): past these bounds, a workflow would start, call the model, and fail at its first event.
  const bytes = Buffer.byteLength(runId);
  if (bytes > LONGEST_RUN_ID_BYTES)
    throw new InvalidConfigError(
      `runId must be at most ${LONGEST_RUN_ID_BYTES} bytes (UTF-8), got one of ${bytes}.`,
    );
  if (/\.\d+$/.test(runId))
    throw new InvalidConfigError(
      `runId "${runId}" ends in ".<digits>", the form of a workflow's later runs (<runId>.2, …): choose another.`,
    );
}

/**
 * What the entry points of a run (`retrieve().result()`, `events()`, `answer()`, `steer()`,
 * `followUp()`, `cancel()`) check first, before the database is asked: throws
 * `InvalidConfigError` unless `runId` is a non-empty string (pg would send `42` as "42", and
 * reach that run); then whether PostgreSQL can store it. One it cannot, no run has (`start()`
 * refuses it): the caller answers it as an id no workflow has. Asked, PostgreSQL would reject a
 * U+0000 with its bare `DatabaseError`, and take a lone surrogate for U+FFFD: another run's id.
 */
export function canNameRun(runId: unknown): boolean {
  checkIsRunId(runId);
  return storable(runId);
}

function checkIsRunId(runId: unknown): asserts runId is string {
  if (typeof runId !== "string" || runId === "")
    throw new InvalidConfigError(`runId must be a non-empty string, got ${shown(runId)}.`);
}

/**
 * Whether PostgreSQL can store `runId` as it is: its text holds no U+0000, and pg writes a lone
 * surrogate as U+FFFD (`"a\ud800"` and `"a\udc00"` would be the one run).
 */
function storable(runId: string): boolean {
  return !runId.includes("\u0000") && !/\p{Cs}/u.test(runId);
}
