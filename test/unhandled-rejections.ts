/**
 * The rejections left unhandled while `body` ran, and until the microtasks after it ran out (when
 * Node reports them): what a test of "no rejection goes unhandled" expects to be empty.
 */
export async function unhandledRejectionsOf(body: () => Promise<void>): Promise<unknown[]> {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", record);
  try {
    await body();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off("unhandledRejection", record);
  }
  return unhandled;
}
