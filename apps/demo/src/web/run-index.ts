import { type FSWatcher, watch } from "node:fs";
import type { EventStore, RunSummary, StoredEvent } from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";

/** Options of the run index. */
export interface RunIndexOptions {
  /**
   * The JSONL runs directory, watched for changed logs (one inotify watch), so a refresh
   * re-reads only the runs that changed. Without it, refreshes ask the store for the runs
   * updated since the last one (`list({ updatedAfter })`, an indexed query in PostgreSQL).
   */
  watchDir?: string;
  /** How often everything is listed again, to catch what a watch or a clock missed. Default 60 s. */
  fullEveryMs?: number;
  now?: () => number;
}

/**
 * The web inbox's in-memory view of every run's summary. The store is listed once at start;
 * after that a refresh touches only what changed, so a page over 10,000 runs costs a filter
 * and a slice, not 10,000 file reads.
 */
export class RunIndex {
  readonly #store: EventStore;
  readonly #options: RunIndexOptions;
  readonly #rows = new Map<string, RunSummary>();
  readonly #dirty = new Set<string>();
  #sorted: RunSummary[] | undefined;
  #watcher: FSWatcher | undefined;
  #rescan = true;
  #lastFull = 0;
  #newest = 0;
  #refreshing: Promise<boolean> | undefined;

  constructor(store: EventStore, options: RunIndexOptions = {}) {
    this.#store = store;
    this.#options = options;
  }

  /** Lists the store once and starts watching for changes. */
  async start(): Promise<void> {
    if (this.#options.watchDir) {
      try {
        this.#watcher = watch(this.#options.watchDir, (_event, name) => {
          const file = typeof name === "string" ? name : "";
          if (file.endsWith(".jsonl")) this.#dirty.add(file.slice(0, -".jsonl".length));
          else if (file === "") this.#rescan = true;
        });
        this.#watcher.on("error", () => {
          // A lost watch (the directory moved, too many watches) falls back to full listings.
          this.#watcher?.close();
          this.#watcher = undefined;
          this.#rescan = true;
        });
        this.#watcher.unref();
      } catch {
        this.#watcher = undefined;
      }
    }
    await this.refresh();
  }

  /** Marks a run as changed by this process (an answer, a halt), so the next refresh re-reads it. */
  touch(runId: string): void {
    this.#dirty.add(runId);
  }

  /** Brings the index up to date; resolves with whether anything changed. */
  refresh(): Promise<boolean> {
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<boolean> {
    const now = (this.#options.now ?? Date.now)();
    if (
      this.#rescan ||
      now - this.#lastFull >= (this.#options.fullEveryMs ?? 60_000) ||
      (!this.#watcher && this.#options.watchDir)
    ) {
      this.#rescan = false;
      this.#dirty.clear();
      const rows = await this.#store.list();
      const before = this.#signature();
      this.#rows.clear();
      for (const row of rows) this.#put(row);
      this.#lastFull = now;
      this.#sorted = undefined;
      return before !== this.#signature();
    }
    let changed = false;
    if (this.#watcher) {
      const ids = [...this.#dirty];
      this.#dirty.clear();
      for (const runId of ids) {
        const row = await summaryOf(this.#store, runId);
        const previous = this.#rows.get(runId);
        if (!row) {
          if (previous) {
            this.#rows.delete(runId);
            changed = true;
          }
          continue;
        }
        if (!previous || previous.events !== row.events || previous.status !== row.status)
          changed = true;
        this.#put(row);
      }
    } else {
      const ids = [...this.#dirty];
      this.#dirty.clear();
      // A second of overlap: rows written in the same millisecond as the newest seen.
      const rows = await this.#store.list({ updatedAfter: Math.max(0, this.#newest - 1_000) });
      for (const row of rows) {
        const previous = this.#rows.get(row.runId);
        if (!previous || previous.events !== row.events || previous.status !== row.status)
          changed = true;
        this.#put(row);
      }
      for (const runId of ids) {
        const row = await summaryOf(this.#store, runId);
        if (row) {
          changed = true;
          this.#put(row);
        }
      }
    }
    if (changed) this.#sorted = undefined;
    return changed;
  }

  /** Every run, newest update first (ties by run id). */
  all(): readonly RunSummary[] {
    this.#sorted ??= [...this.#rows.values()].sort(
      (a, b) => b.updatedAt - a.updatedAt || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0),
    );
    return this.#sorted;
  }

  /** The runs with a status (and agent), newest first. */
  filter(filter: { status?: string; agentId?: string }): RunSummary[] {
    return this.all().filter(
      (row) =>
        (!filter.status || row.status === filter.status) &&
        (!filter.agentId || row.agentId === filter.agentId),
    );
  }

  get(runId: string): RunSummary | undefined {
    return this.#rows.get(runId);
  }

  close(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  #put(row: RunSummary): void {
    this.#rows.set(row.runId, row);
    if (row.updatedAt > this.#newest) this.#newest = row.updatedAt;
    this.#sorted = undefined;
  }

  #signature(): string {
    let sum = 0;
    for (const row of this.#rows.values()) sum += row.events + row.updatedAt;
    return `${this.#rows.size}:${sum}`;
  }
}

/** A run's summary from its log; a log that cannot be read is listed as unreadable. */
async function summaryOf(store: EventStore, runId: string): Promise<RunSummary | undefined> {
  let events: StoredEvent[];
  try {
    events = await store.read(runId);
  } catch (error) {
    const now = Date.now();
    return {
      runId,
      status: "unreadable",
      steps: 0,
      costUsd: 0,
      events: 0,
      createdAt: now,
      updatedAt: now,
      error: error instanceof Error ? error.message : String(error),
    };
  }
  if (events.length === 0) return undefined;
  // The same summary the stores keep for `list` (core's fold of a log into its summary).
  return summarize(undefined, runId, events);
}
