/**
 * A run's tree read back from the store: when a run that delegated is read from its log
 * (resumed, or read as the ancestor of a child resumed alone), every descendant's calls,
 * refusals and outputs are read from the descendants' logs and inserted where the run started
 * each child, so the run's state (what its gates read) holds the tree as an uncrashed run's
 * would. Read once per open, never per step.
 */
import type { EventStore } from "./contracts/event-store.js";
import type { RunFold } from "./fold.js";
import { foldLog } from "./fold-stream.js";
import type { TreeHistory } from "./run-state.js";

/** How a tree is read: the vault's reveal, and where an unreadable descendant is reported. */
export interface TreeReadOptions {
  reveal?: ((text: string) => string) | undefined;
  reportError?: ((error: unknown, where: string) => void) | undefined;
}

/** Deeper than any tree `maxDepth` allows: a log naming itself cannot recurse for ever. */
const maxTreeDepth = 32;

/**
 * Inserts every stored descendant's history into a run folded from its log (before any gate
 * reads it, and before `inherit`). A descendant whose log cannot be read (never written,
 * dropped, corrupt) adds nothing; the error goes to `reportError`.
 */
export async function spliceStoredDescendants(
  store: EventStore,
  fold: RunFold,
  options: TreeReadOptions,
  depth = 0,
): Promise<void> {
  const marks = fold.childMarks;
  // Latest first, so the places of the earlier marks hold while inserting.
  for (let index = marks.length - 1; index >= 0; index -= 1) {
    const mark = marks[index]!;
    const history = await storedHistory(store, mark.childRunId, options, depth + 1);
    if (history) fold.state.spliceDescendant(mark, history);
  }
}

/** A stored run's own history and its descendants', each entry marked with its run id. */
async function storedHistory(
  store: EventStore,
  runId: string,
  options: TreeReadOptions,
  depth: number,
): Promise<TreeHistory | undefined> {
  if (depth > maxTreeDepth) return undefined;
  let fold: RunFold | undefined;
  try {
    const folded = await foldLog(
      store,
      runId,
      `run ${runId} (${store.name} store)`,
      options.reveal ? { reveal: options.reveal } : {},
    );
    fold = folded?.fold;
  } catch (error) {
    options.reportError?.(error, `reading child run ${runId} for its ancestors' view of the tree`);
    return undefined;
  }
  if (!fold) return undefined;
  const state = fold.state;
  for (const call of state.calls) call.runId = runId;
  for (const refusal of state.refusals) refusal.runId = runId;
  for (const output of state.outputs) output.runId = runId;
  await spliceStoredDescendants(store, fold, options, depth);
  return { calls: state.calls, refusals: state.refusals, outputs: state.outputs };
}
