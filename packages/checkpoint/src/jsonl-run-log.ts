import type { AppendResult, RunSummary, StoredEvent } from "@loopguard/core";
import type { Evictable } from "./descriptor-budget.js";
import type { FileLock } from "./file-lock.js";
import { type ChainCursor, chainStart } from "./hash-chain.js";

/** One `append` waiting in a run's queue for the next group commit. */
export interface PendingAppend {
  bodies: string[];
  /** Shallow copies of the events (the summary reads only top-level fields); their seq is set at commit. */
  events: StoredEvent[];
  /** The fence; set to -1 once the append was rejected as a conflict. */
  expectedSeq: number;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

/**
 * What one JSONL store instance knows of one run's log: a cache, checked against the file under
 * the run's lock before every write. Plain data; the store's modules (leases, group commit,
 * summaries) change it, and none of them throws on its own.
 */
export interface RunLog {
  readonly runId: string;
  readonly file: string;
  /** Bytes of complete lines, checked against the file under the lock before each write. */
  size: number;
  /** Events in those bytes. */
  nextSeq: number;
  /** The summary of those events. */
  summary: RunSummary | undefined;
  queue: PendingAppend[];
  flushing: Promise<void> | undefined;
  /** A write or fsync failed: what reached the disk is unknown, so this instance stops writing the run. */
  broken: unknown;
  /** Log bytes the summary file covers, and when it was written. */
  summaryBytes: number;
  summaryWrittenAt: number;
  /** The run's lock and open log, held between appends until the run is idle. */
  lease: Lease | undefined;
  /** A lease being given back. */
  releasing: Promise<void> | undefined;
  /** Held by `acquireRun` (a resume in progress): the lease is kept however long the run idles. */
  pinned: boolean;
  /** The hash chain as of the last event this instance knows. */
  cursor: ChainCursor;
}

/** A run's lock file and open log, held by one store instance between appends. */
export interface Lease {
  lock: FileLock;
  /** The open log's descriptor: none before the first write of a new log, or after its descriptor was lent to another run. */
  fd: number | undefined;
  /** Whether the log file exists (so a missing `fd` is reopened, not created). */
  exists: boolean;
  /** How the descriptor budget closes this log while it is idle. */
  evictable: Evictable;
  /** The log was opened with `O_DSYNC`: a write is durable when it returns, no fdatasync needed. */
  dsync: boolean;
  /** One timer per lease, re-armed while the run stays busy (not one per append). */
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  /** `Date.now()` when the last group commit finished. */
  lastUsedAt: number;
}

/** A `RunLog` for a run this instance has not seen yet: empty until its lease catches up with the file. Never throws. */
export function newRunLog(runId: string, file: string, key: Buffer | undefined): RunLog {
  return {
    runId,
    file,
    size: 0,
    nextSeq: 0,
    summary: undefined,
    queue: [],
    flushing: undefined,
    broken: undefined,
    summaryBytes: -1,
    summaryWrittenAt: 0,
    lease: undefined,
    releasing: undefined,
    pinned: false,
    cursor: chainStart(runId, key),
  };
}
