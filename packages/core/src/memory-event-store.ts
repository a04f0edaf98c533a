import type {
  AppendOptions,
  AppendResult,
  EventStore,
  ListCursor,
  ListFilter,
  RunSummary,
  StoredEvent,
  StoredEventInput,
} from "./contracts/event-store.js";
import {
  AppendConflictError,
  InvalidArgumentError,
  RunLogDroppedError,
  VolatileStoreError,
} from "./errors.js";
import { cloneJson } from "./json.js";
import { summarize, summarizeInto } from "./summary.js";
import { validateListFilter } from "./validate-list-filter.js";

/** Options of `memoryEventStore`. */
export interface MemoryEventStoreOptions {
  /**
   * How many finished runs (a `run-end` in the log) keep their logs. The logs of unfinished runs
   * (running, paused, awaiting an approval) are always kept; past this many finished ones, the
   * oldest finished log is dropped: resuming, approving or reading it rejects with
   * `RunLogDroppedError`, and `list` still returns its summary with `logDropped: true`.
   * Default 100; 0 drops a log as soon as its run ends.
   */
  maxFinishedRuns?: number;
  /**
   * How many summaries of runs whose log was dropped `list` keeps (a few hundred bytes each);
   * past it the oldest are forgotten and their runs are unknown. Default 10 000.
   */
  maxDroppedSummaries?: number;
}

/** Finished logs the default in-memory store keeps. */
export const defaultMaxFinishedRuns = 100;
/** Summaries of dropped logs the default in-memory store keeps. */
export const defaultMaxDroppedSummaries = 10_000;

/**
 * An EventStore in memory: the default when an agent is given no store, and the reference
 * implementation for tests. Nothing survives the process. Bounded: it keeps the logs of
 * unfinished runs and of the last `maxFinishedRuns` finished ones (default 100), so a
 * long-lived process that forgot its store does not grow without end.
 *
 * @example
 * const agent = createAgent({ model, tools, store: memoryEventStore({ maxFinishedRuns: 1000 }) });
 */
export function memoryEventStore(
  options: MemoryEventStoreOptions = {},
): EventStore & { readonly size: number } {
  const { maxFinishedRuns, maxDroppedSummaries } = validateMemoryOptions(options);
  const logs = new Map<string, StoredEvent[]>();
  const summaries = new Map<string, RunSummary>();
  // Insertion-ordered: the oldest first, so eviction takes the head.
  const finished = new Set<string>();
  const dropped = new Set<string>();
  const checkKnown = (runId: string): void => {
    if (dropped.has(runId)) throw new RunLogDroppedError(runId, maxFinishedRuns);
  };
  const settle = (runId: string, ended: boolean): void => {
    if (!ended) {
      finished.delete(runId);
      return;
    }
    finished.delete(runId);
    finished.add(runId);
    while (finished.size > maxFinishedRuns) {
      const oldest = finished.values().next().value as string;
      finished.delete(oldest);
      logs.delete(oldest);
      dropped.add(oldest);
      const summary = summaries.get(oldest);
      if (summary) summary.logDropped = true;
    }
    while (dropped.size > maxDroppedSummaries) {
      const oldest = dropped.values().next().value as string;
      dropped.delete(oldest);
      summaries.delete(oldest);
    }
  };
  return {
    name: "memory",
    get size() {
      return logs.size;
    },
    async append(
      runId: string,
      events: readonly StoredEventInput[],
      options: AppendOptions,
    ): Promise<AppendResult> {
      if (typeof runId !== "string" || runId === "")
        throw new InvalidArgumentError(
          "[core] memoryEventStore.append: runId must be a non-empty string",
        );
      checkKnown(runId);
      const log = logs.get(runId) ?? [];
      if (options.expectedSeq !== log.length)
        throw new AppendConflictError(runId, options.expectedSeq, log.length);
      // The store keeps its own copy: a caller that changes an event later changes nothing here.
      const stored: StoredEvent[] = [];
      for (let index = 0; index < events.length; index += 1) {
        const copy = cloneJson(events[index]!) as StoredEvent;
        copy.seq = log.length + index;
        stored.push(copy);
      }
      for (const event of stored) log.push(event);
      logs.set(runId, log);
      let summary = summaries.get(runId);
      if (summary) summarizeInto(summary, stored);
      else {
        summary = summarize(undefined, runId, stored);
        summaries.set(runId, summary);
      }
      if (stored.length > 0) {
        const last = log[log.length - 1]!;
        settle(runId, last.type === "run-end" && last.status !== "awaiting_approval");
      }
      return { nextSeq: log.length };
    },
    async read(runId: string): Promise<StoredEvent[]> {
      checkKnown(runId);
      return cloneJson(logs.get(runId) ?? []);
    },
    async list(filter: ListFilter = {}): Promise<RunSummary[]> {
      validateListFilter(filter, "core");
      // The store updates its summaries in place: callers get copies.
      return filterSummaries([...summaries.values()], filter).map((summary) => ({ ...summary }));
    },
    async close() {},
  };
}

let volatileWarned = false;

/**
 * Says that an agent given no store keeps its runs in memory only: once per agent through
 * `onError` when there is one, else once per process on `console.warn` (every runtime has it).
 */
export function noticeVolatileStore(
  onError: ((error: unknown, where: string) => void) | undefined,
): void {
  const notice = new VolatileStoreError(
    `[core] createAgent: no store given, so runs are kept in memory (the logs of unfinished runs and of the last ${defaultMaxFinishedRuns} finished ones) and none survives a restart of the process; pass store: jsonlEventStore(...) or another durable store from @loopguard/checkpoint, or store: memoryEventStore() to keep memory on purpose`,
  );
  if (onError) {
    try {
      onError(notice, "createAgent store");
    } catch {
      // onError itself failed: there is nowhere left to report to.
    }
    return;
  }
  if (volatileWarned) return;
  volatileWarned = true;
  globalThis.console?.warn?.(notice.message);
}

/** Checks `memoryEventStore`'s options and fills in the defaults. */
function validateMemoryOptions(
  options: MemoryEventStoreOptions,
): Required<MemoryEventStoreOptions> {
  if (typeof options !== "object" || options === null)
    throw new InvalidArgumentError(
      `[core] memoryEventStore(options): options must be an object like { maxFinishedRuns: 100 }, got ${JSON.stringify(options)}`,
    );
  const count = (name: keyof MemoryEventStoreOptions, fallback: number): number => {
    const value = options[name] ?? fallback;
    if (!Number.isSafeInteger(value) || value < 0)
      throw new InvalidArgumentError(
        `[core] memoryEventStore: ${name} must be an integer of at least 0 (default ${fallback}), got ${JSON.stringify(options[name])}`,
      );
    return value;
  };
  return {
    maxFinishedRuns: count("maxFinishedRuns", defaultMaxFinishedRuns),
    maxDroppedSummaries: count("maxDroppedSummaries", defaultMaxDroppedSummaries),
  };
}

/** Applies a ListFilter to summaries: filters, `order` (newest first by default), `after`, `limit`. */
export function filterSummaries(
  summaries: readonly RunSummary[],
  filter: ListFilter = {},
): RunSummary[] {
  const statuses =
    filter.status === undefined
      ? undefined
      : new Set(typeof filter.status === "string" ? [filter.status] : filter.status);
  const oldest = filter.order === "oldest";
  const after = filter.after;
  const out = summaries
    .filter((summary) => (statuses ? statuses.has(summary.status) : true))
    .filter((summary) => (filter.agentId === undefined ? true : summary.agentId === filter.agentId))
    .filter((summary) =>
      filter.parentRunId === undefined ? true : summary.parentRunId === filter.parentRunId,
    )
    .filter((summary) =>
      filter.rootRunId === undefined ? true : summary.rootRunId === filter.rootRunId,
    )
    .filter((summary) =>
      filter.updatedAfter === undefined ? true : summary.updatedAt > filter.updatedAfter,
    )
    .filter((summary) => (after === undefined ? true : comesAfter(summary, after, oldest)))
    .sort((a, b) =>
      a.updatedAt !== b.updatedAt
        ? oldest
          ? a.updatedAt - b.updatedAt
          : b.updatedAt - a.updatedAt
        : a.runId < b.runId
          ? -1
          : a.runId > b.runId
            ? 1
            : 0,
    );
  return filter.limit === undefined ? out : out.slice(0, filter.limit);
}

/** Whether a row comes strictly after the cursor in the list's order. */
function comesAfter(summary: RunSummary, cursor: ListCursor, oldest: boolean): boolean {
  if (summary.updatedAt !== cursor.updatedAt)
    return oldest ? summary.updatedAt > cursor.updatedAt : summary.updatedAt < cursor.updatedAt;
  return summary.runId > cursor.runId;
}
