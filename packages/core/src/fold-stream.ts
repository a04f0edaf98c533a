import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import { RunFold } from "./fold.js";
import { yieldToEventLoop } from "./output-limit.js";

/** Longest stretch of folding between two yields to the event loop. */
const sliceMs = 10;
/** Events folded between two looks at the clock. */
const checkEvery = 256;
/** Events per batch when the store has no `readBatches` (the log is in memory already). */
const batchSize = 4096;

/** A run folded from its log, and how many events the log held. */
export interface FoldedLog {
  fold: RunFold;
  events: number;
}

/**
 * Reads and folds a run's log without holding the event loop: from `store.readBatches` when the
 * store has it (memory bounded by the batch plus the fold, i.e. the conversation the run will
 * send next), else from `store.read` in batches; either way the fold yields to the event loop
 * every ~10 ms. `visit` sees each event after it is applied (the span builder's replay).
 * Resolves `undefined` for a run with no events.
 */
export async function foldLog(
  store: EventStore,
  runId: string,
  where: string,
  options: { reveal?: (text: string) => string },
  visit?: (event: StoredEvent, fold: RunFold) => void,
): Promise<FoldedLog | undefined> {
  const source: AsyncIterable<readonly StoredEvent[]> | Iterable<readonly StoredEvent[]> =
    store.readBatches ? store.readBatches(runId) : batchesOf(await store.read(runId));
  let fold: RunFold | undefined;
  let count = 0;
  let sliceStart = performance.now();
  for await (const batch of source) {
    for (const event of batch) {
      if (fold) fold.apply(event);
      else fold = new RunFold(event, where, options);
      visit?.(event, fold);
      count += 1;
      if (count % checkEvery === 0 && performance.now() - sliceStart > sliceMs) {
        await yieldToEventLoop();
        sliceStart = performance.now();
      }
    }
  }
  return fold ? { fold, events: count } : undefined;
}

function* batchesOf(events: readonly StoredEvent[]): Iterable<readonly StoredEvent[]> {
  for (let start = 0; start < events.length; start += batchSize)
    yield events.slice(start, start + batchSize);
}
