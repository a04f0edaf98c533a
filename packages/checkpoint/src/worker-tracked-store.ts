import {
  AppendConflictError,
  type EventStore,
  InvalidArgumentError,
  LoopguardError,
  type StoredEvent,
} from "@loopguard/core";
import type { FencedError } from "./postgres-errors.js";
import type { FencedEventStore } from "./postgres-event-store.js";

/** Whether `error` is a FencedError, from any copy of the package. */
export function isFenced(error: unknown): boolean {
  return LoopguardError.isInstance(error) && error.code === "fenced";
}

/** A fenced view that remembers what happened to it during one slice. */
export interface TrackedStore extends EventStore {
  confirmOwner(runId: string): Promise<void>;
  readonly runId: string;
  readonly epoch: number;
  /** Set when an append was refused because another worker claimed the run. */
  fenced: FencedError | undefined;
  /** Set when an append lost an `expectedSeq` race to a writer with no epoch. */
  conflict: AppendConflictError | undefined;
  /**
   * Lets this slice write the `run-start` of one child run (the slice's child runner does, just
   * before it queues the child's job). Any other run's append is refused, so a child run inline
   * (an agent built without the slice's runner) fails its call instead of writing through a
   * view fenced to its parent.
   */
  permitChild(childRunId: string): void;
  /** Whether the run's own log holds a run-end (read or written in this slice; not a child's). */
  ended: boolean;
}

/**
 * Wraps a slice's fenced store view so the worker knows, after the slice, whether it was fenced,
 * lost an `expectedSeq` race, or saw the run end. The first read of the run is answered from
 * `prefetched` (the log read with the claim). Errors of the view pass through unchanged.
 */
export function trackStore(view: FencedEventStore, prefetched?: StoredEvent[]): TrackedStore {
  // The log read with the claim answers the first read of the slice (the agent's resume).
  let first = prefetched;
  const children = new Set<string>();
  const tracked: TrackedStore = {
    name: view.name,
    runId: view.runId,
    epoch: view.epoch,
    fenced: undefined,
    conflict: undefined,
    ended: false,
    permitChild: (childRunId) => void children.add(childRunId),
    async append(runId, events, appendOptions) {
      if (runId !== view.runId && !children.has(runId))
        throw new InvalidArgumentError(
          `[checkpoint] this store view is fenced to run ${view.runId} (epoch ${view.epoch}); it cannot append to run ${runId}. A child run of an asTool call runs as a job of its own on workers: pass the slice's childRunner to createAgent`,
        );
      try {
        const result = await view.append(runId, events, appendOptions);
        // Only this run's end counts (a parent reads and creates its children's logs too).
        if (runId === view.runId && events.some((event) => event.type === "run-end"))
          tracked.ended = true;
        return result;
      } catch (error) {
        if (isFenced(error)) tracked.fenced = error as FencedError;
        else if (AppendConflictError.isInstance(error))
          tracked.conflict = error as AppendConflictError;
        throw error;
      }
    },
    async read(runId) {
      let events: StoredEvent[];
      if (first && runId === view.runId) {
        events = first;
        first = undefined;
      } else events = await view.read(runId);
      if (runId === view.runId && events.some((event) => event.type === "run-end"))
        tracked.ended = true;
      return events;
    },
    list: (filter) => view.list(filter),
    async confirmOwner(runId) {
      try {
        await view.confirmOwner(runId);
      } catch (error) {
        if (isFenced(error)) tracked.fenced = error as FencedError;
        throw error;
      }
    },
  };
  if (prefetched?.some((event) => event.type === "run-end")) tracked.ended = true;
  return tracked;
}
