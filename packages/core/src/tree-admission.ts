import type { RunState } from "./run-state.js";

/** The last admission queued in each tree (keyed by the state at its top). */
const queues = new WeakMap<RunState, Promise<unknown>>();

/**
 * Judges-and-records a call of a run in a tree one at a time across the tree, as the calls of
 * one run's turn are: parallel siblings in this process could otherwise each pass a gate that
 * counts the tree (a cap per run, a rate, a loop) before the other's call is recorded. A run in
 * no tree admits at once, with no queue.
 */
export async function admitInTree<T>(state: RunState, admit: () => Promise<T>): Promise<T> {
  const top = state.treeTop;
  if (!top) return admit();
  const before = queues.get(top) ?? Promise.resolve();
  const mine = before.then(admit, admit);
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  queues.set(top, settled);
  try {
    return await mine;
  } finally {
    if (queues.get(top) === settled) queues.delete(top);
  }
}
