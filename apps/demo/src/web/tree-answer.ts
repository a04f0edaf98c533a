import type { EventStore, StoredEvent } from "@loopguard/core";
import type { WebBackend } from "./backend.js";

/**
 * A run's first event (its `run-start`), read without the whole log where the store allows;
 * `undefined` when the run has no log or it cannot be read.
 */
async function firstEvent(store: EventStore, runId: string): Promise<StoredEvent | undefined> {
  try {
    if (store.readBatches) {
      for await (const batch of store.readBatches(runId, { batchSize: 1 })) return batch[0];
      return undefined;
    }
    return (await store.read(runId))[0];
  } catch {
    return undefined;
  }
}

/** The root run of the tree `runId` belongs to (itself when it was not started by another run). */
export async function rootRunOf(store: EventStore, runId: string): Promise<string> {
  const start = await firstEvent(store, runId);
  return start?.type === "run-start" && start.parent ? start.parent.rootRunId : runId;
}

/**
 * Whether this server answers approvals asked inside the runs of the tree rooted at
 * `rootRunId`: only when the root run was started by the agent it serves (the root's recorded
 * policy digest is the served agent's). The answer is recorded in the run that asked and the
 * whole tree goes on from its root, under the served agent's rules, so a tree some other
 * agent runs is left to that agent (its policy could differ from what the inbox would apply).
 */
export async function answersTree(backend: WebBackend, rootRunId: string): Promise<boolean> {
  if (backend.policyDigest === undefined) return false;
  const start = await firstEvent(backend.store, rootRunId);
  return (
    start?.type === "run-start" &&
    start.parent === undefined &&
    start.policyDigest === backend.policyDigest
  );
}
