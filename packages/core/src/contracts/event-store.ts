/**
 * The EventStore contract: the append-only log a run is folded from.
 *
 * Failure rule: a store that fails stops the run. `append` resolves only when the events are
 * durable, and rejects with `AppendConflictError` when `expectedSeq` is not the log's length
 * (another writer got there first: this is the fence that keeps two workers off one run).
 * The runtime takes no action that the log has not recorded first. If the process dies before
 * `append` resolves, a prefix of the batch may be in the log (never a gap or a later event
 * without the earlier ones); the fold and `resume` handle that.
 */
import type { RunEvent } from "../events.js";

/** An event as stored: its position in the run's log and the time it was written. */
export type StoredEvent = RunEvent & {
  /** 0-based position in the run's log. */
  seq: number;
  /** Milliseconds since the epoch when the runtime produced the event. */
  at: number;
};

/** Options of one append. */
export interface AppendOptions {
  /** The number of events the writer believes the log holds (the seq of the first new event). */
  expectedSeq: number;
}

/** What `append` resolves with. */
export interface AppendResult {
  /** The log's length after the append. */
  nextSeq: number;
}

/** One row of `list`. */
export interface RunSummary {
  runId: string;
  agentId?: string;
  status: string;
  steps: number;
  costUsd: number;
  events: number;
  createdAt: number;
  updatedAt: number;
  task?: string;
  /** A child run's parent run (from its `run-start`); absent for a root run. */
  parentRunId?: string;
  /** A child run's tree root (from its `run-start`); absent for a root run. */
  rootRunId?: string;
  /** A child run's depth in its tree (1 for a child of a root run); absent for a root run. */
  depth?: number;
  /** How many `shadow-decision` events the run has (calls a shadow policy would have decided differently). */
  shadowDifferences?: number;
  /**
   * Set when the run's log cannot be read (corrupt or unreadable): `list` still returns the
   * run, with `status` `unreadable` and the reason here, so one bad log never hides the rest.
   */
  error?: string;
  /**
   * Set by a store that keeps only some logs (the in-memory store keeps the last
   * `maxFinishedRuns` finished ones): the run finished, its summary stays, its log is gone.
   */
  logDropped?: boolean;
}

/** A position in a `list`: the last row of the previous page (its `updatedAt` and `runId`). */
export interface ListCursor {
  updatedAt: number;
  runId: string;
}

/** What `list` filters on; every field is optional. */
export interface ListFilter {
  status?: string | readonly string[];
  agentId?: string;
  /**
   * Only the direct children of this run: the runs whose summary's `parentRunId` is it (from
   * their `run-start.parent`). A store that keeps summaries in columns indexes this one.
   */
  parentRunId?: string;
  /**
   * Only the runs below this root, at every depth: the runs whose summary's `rootRunId` is it.
   * The root itself is not one of them (a root run's summary has no `rootRunId`); read it by
   * its id to show a whole tree.
   */
  rootRunId?: string;
  updatedAfter?: number;
  limit?: number;
  /**
   * `newest` (the default): most recently updated first; `oldest`: least recently updated
   * first. Ties go by run id (code-unit order) in both, so the order is total and pages are
   * stable.
   */
  order?: "newest" | "oldest";
  /**
   * Keyset pagination: only the rows that come strictly after this one in `order`. Pass the
   * last row of the previous page with the same filter and `limit`. A run updated while
   * someone pages moves ahead of the cursor (newest first) instead of appearing twice.
   */
  after?: ListCursor;
}

/**
 * An event store.
 *
 * Fails closed for the run: a rejected `append` stops the run before the action it describes.
 */
export interface EventStore {
  /** A name for diagnostics, e.g. `jsonl`, `sqlite`, `postgres`, `memory`. */
  readonly name: string;
  /** Appends events durably; rejects with `AppendConflictError` on a fence violation. */
  append(
    runId: string,
    events: readonly StoredEventInput[],
    options: AppendOptions,
  ): Promise<AppendResult>;
  /**
   * Reads a run's events in order; an unknown run gives `[]`. A store that drops finished logs
   * rejects for a run it dropped (`RunLogDroppedError`) rather than pretend it never existed.
   */
  read(runId: string): Promise<StoredEvent[]>;
  /**
   * Optional: reads a run's events in order, `batchSize` events at a time, so resuming a long
   * log holds one batch in memory rather than the whole log (and the reader yields between
   * batches). An unknown run yields nothing. Fails as `read` does (a corrupt or tampered log
   * throws from the iteration, naming the line); core falls back to `read` without it.
   */
  readBatches?(
    runId: string,
    options?: { batchSize?: number },
  ): AsyncIterable<readonly StoredEvent[]>;
  /** Lists runs, newest update first (or `order: "oldest"`), a page at a time with `after` and `limit`. */
  list(filter?: ListFilter): Promise<RunSummary[]>;
  /** Releases resources; safe to call twice. */
  close?(): Promise<void>;
  /**
   * Optional: takes a run for the whole of a resume or an approval, so a second resumer gets
   * an error (`RunLockedError` in `@loopguard/checkpoint`) before it executes anything. Core
   * calls it before reading the log and releases the lease when the call returns. Rejects
   * when another owner holds the run.
   */
  acquireRun?(runId: string): Promise<RunLease>;
  /**
   * Optional: confirms, in one round trip, that this writer still owns the run. Core calls it
   * right before a tool runs (after its intent is durable); a rejection (e.g. a worker fenced
   * off because another claimed the run) stops the run without executing the tool.
   */
  confirmOwner?(runId: string): Promise<void>;
}

/** A run taken by `acquireRun`: give it back exactly once (a second call does nothing). */
export interface RunLease {
  release(): Promise<void>;
}

/** An event handed to `append`: the store assigns `seq`; `at` is set by the runtime. */
export type StoredEventInput = RunEvent & { at: number };
