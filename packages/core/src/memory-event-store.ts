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
import { AppendConflictError, InvalidArgumentError } from "./errors.js";
import { cloneJson } from "./json.js";
import { summarize, summarizeInto } from "./summary.js";

/**
 * An EventStore in memory: the default when an agent is given no store, and the reference
 * implementation for tests. Nothing survives the process.
 *
 * @example
 * const agent = createAgent({ model, tools, store: memoryEventStore() });
 */
export function memoryEventStore(): EventStore & { readonly size: number } {
  const logs = new Map<string, StoredEvent[]>();
  const summaries = new Map<string, RunSummary>();
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
      const summary = summaries.get(runId);
      if (summary) summarizeInto(summary, stored);
      else summaries.set(runId, summarize(undefined, runId, stored));
      return { nextSeq: log.length };
    },
    async read(runId: string): Promise<StoredEvent[]> {
      return cloneJson(logs.get(runId) ?? []);
    },
    async list(filter: ListFilter = {}): Promise<RunSummary[]> {
      // The store updates its summaries in place: callers get copies.
      return filterSummaries([...summaries.values()], filter).map((summary) => ({ ...summary }));
    },
    async close() {},
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
