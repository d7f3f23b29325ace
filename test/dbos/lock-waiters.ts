import type pg from "pg";

/**
 * Waits until `count` sessions wait for an advisory lock (a mailbox's, held by the test to make two
 * writers meet); throws after 20 s.
 */
export async function untilLockWaiters(db: pg.Client, count: number): Promise<void> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    const { rowCount } = await db.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
    if (rowCount === count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`never ${count} waiting for the lock`);
}
