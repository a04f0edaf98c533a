import type { EventStore } from "./contracts/event-store.js";

/**
 * Runs `work` (a resume or an approval) with the run taken through the store's optional
 * `acquireRun`, so a second resumer of the same run is refused before it executes anything;
 * the lease is given back when `work` settles. Stores without `acquireRun` run `work` as is.
 */
export async function withRunLease<T>(
  store: EventStore,
  runId: string,
  work: () => Promise<T>,
  reportError: (error: unknown, where: string) => void,
): Promise<T> {
  // A bad run id is left to `work`, which says what is wrong with it.
  if (!store.acquireRun || typeof runId !== "string" || runId.trim() === "") return work();
  const lease = await store.acquireRun(runId);
  try {
    return await work();
  } finally {
    try {
      await lease.release();
    } catch (error) {
      reportError(error, `releasing run ${runId}`);
    }
  }
}
