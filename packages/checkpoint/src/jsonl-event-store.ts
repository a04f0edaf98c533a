import { resolve } from "node:path";
import type {
  AppendOptions,
  AppendResult,
  EventStore,
  ListFilter,
  RunLease,
  RunSummary,
  StoredEvent,
  StoredEventInput,
} from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { DescriptorBudget, sharedDescriptorBudget } from "./descriptor-budget.js";
import { chainSettings, type VerifyResult } from "./hash-chain.js";
import type { Brief } from "./jsonl-files.js";
import { JsonlGroupCommit } from "./jsonl-group-commit.js";
import { encodeStored, storedEvent } from "./jsonl-log.js";
import { JsonlLogReader } from "./jsonl-log-reader.js";
import { JsonlRunLeases } from "./jsonl-run-leases.js";
import { JsonlSummaries } from "./jsonl-summaries.js";
import { assertRunId } from "./run-id.js";
import { StoreClosedError } from "./store-errors.js";

export { logFiles } from "./jsonl-files.js";

/** Options of `jsonlEventStore`. */
export interface JsonlEventStoreOptions {
  /** The directory of the logs (created if missing): one `<runId>.jsonl` per run. */
  dir: string;
  /** How long an append waits for another process's lock on the same run. Default 10 000 ms. */
  lockTimeoutMs?: number;
  /**
   * How long a run's lock (and open file) is kept after its last append, so a burst of appends
   * takes the lock once. Another process waits at most this long for an idle run. Default 100 ms.
   */
  lockIdleMs?: number;
  /**
   * How often, at most, a running run's summary file is rewritten. Summaries are rewritten at
   * once when a run starts, ends, waits on or gets an approval, or resumes. Default 1 000 ms.
   */
  summaryIntervalMs?: number;
  /**
   * The most file descriptors this store opens at once. Runs beyond it keep their locks and
   * take turns with their open logs (least recently used idle logs are closed first), so any
   * number of concurrent runs works within it. Default: every JSONL store of the process shares
   * half the soft limit (`ulimit -n`), between 16 and 4 096.
   */
  maxOpenFiles?: number;
  /**
   * The key of the log's HMAC chain. Default: `LOOPGUARD_LOG_KEY` from the environment; without
   * either, the chain is plain SHA-256 (catches corruption and edits that do not rewrite the
   * chain; with a key, any edit, deletion, reorder or forged line).
   */
  logKey?: string | Buffer;
  /** Chains new events (default true). `false` only to measure what the chain costs. */
  hashChain?: boolean;
}

/** The JSONL event store: an EventStore with the directory it writes to. */
export interface JsonlEventStore extends EventStore {
  /**
   * Takes run `runId` for as long as the caller works on it (core calls it around a resume):
   * its lock file is held until `release()`, so a second resumer, in this process or another
   * on the host, gets `RunLockedError` (after `lockTimeoutMs`) before it executes anything.
   */
  acquireRun(runId: string): Promise<RunLease>;
  /**
   * Checks a run's log end to end: every line's JSON and seq, the hash chain (each link, with
   * the key when one is set), and the head kept in the run's summary file (a log cut short).
   * Never throws for a damaged log: the result names the first bad seq and why.
   */
  verify(runId: string): Promise<VerifyResult>;
  readonly name: "jsonl";
  /** The absolute directory of the logs. */
  readonly dir: string;
  /** The log file of a run (which may not exist yet). */
  fileOf(runId: string): string;
  /** Waits for writes in flight and brings summary files up to date; safe to call twice. */
  close(): Promise<void>;
  /**
   * Reads a run's log in order, `batchSize` events at a time (default 1 000), checking the
   * chain as it goes: memory stays proportional to a batch and one read of 256 KB, not to the
   * log, and the event loop gets a turn between reads. Yields nothing for an unknown run.
   */
  readBatches(runId: string, options?: { batchSize?: number }): AsyncIterable<StoredEvent[]>;
  /** Descriptors the store's budget allows, has open now, and held at most (logs kept open). */
  descriptors(): { cap: number; open: number; peakHeld: number };
}

/**
 * The embedded default EventStore: one append-only JSONL file per run (`<dir>/<runId>.jsonl`),
 * each line one event `{"seq","at","type",...}`. `append` resolves only after its bytes were
 * fsynced (and the directory, when the file was created). Appends that arrive while a write is
 * in flight are batched into the next write and fsync of the file (group commit); different
 * runs write and fsync concurrently. A torn last line (a crash mid-write) is cut off; a damaged
 * line anywhere else is a `CorruptLogError` naming the file and line. The `expectedSeq` fence
 * holds across store instances and processes on one host: every write happens under an
 * exclusive `<runId>.lock` file, after checking the file's size against what this instance
 * knows. `list` reads small `<runId>.summary.json` files, checked against the log's size.
 *
 * @example
 * const agent = createAgent({ model, tools, store: jsonlEventStore({ dir: ".loopguard/runs" }) });
 * const result = await agent.run("Order A1001 arrived broken, refund please");
 * // after a crash, in a new process:
 * await agent.resume(result.runId);
 */
export function jsonlEventStore(options: JsonlEventStoreOptions): JsonlEventStore {
  if (
    typeof options !== "object" ||
    options === null ||
    typeof options.dir !== "string" ||
    options.dir.trim() === ""
  ) {
    throw new InvalidArgumentError(
      '[checkpoint] jsonlEventStore(options): options.dir must be a directory path, e.g. jsonlEventStore({ dir: ".loopguard/runs" })',
    );
  }
  const lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
  if (!Number.isFinite(lockTimeoutMs) || lockTimeoutMs < 0) {
    throw new InvalidArgumentError(
      `[checkpoint] jsonlEventStore: lockTimeoutMs must be a non-negative number of milliseconds, got ${String(options.lockTimeoutMs)}`,
    );
  }
  const lockIdleMs = options.lockIdleMs ?? 100;
  if (!Number.isFinite(lockIdleMs) || lockIdleMs < 0) {
    throw new InvalidArgumentError(
      `[checkpoint] jsonlEventStore: lockIdleMs must be a non-negative number of milliseconds, got ${String(options.lockIdleMs)}`,
    );
  }
  const maxOpenFiles = options.maxOpenFiles;
  if (maxOpenFiles !== undefined && (!Number.isSafeInteger(maxOpenFiles) || maxOpenFiles < 8)) {
    throw new InvalidArgumentError(
      `[checkpoint] jsonlEventStore: maxOpenFiles must be an integer of at least 8, got ${String(maxOpenFiles)}`,
    );
  }
  const budget =
    maxOpenFiles === undefined ? sharedDescriptorBudget() : new DescriptorBudget(maxOpenFiles);
  const summaryIntervalMs = options.summaryIntervalMs ?? 1_000;
  const chain = chainSettings(options, "jsonlEventStore");
  if (!Number.isFinite(summaryIntervalMs) || summaryIntervalMs < 0) {
    throw new InvalidArgumentError(
      `[checkpoint] jsonlEventStore: summaryIntervalMs must be a non-negative number of milliseconds, got ${String(options.summaryIntervalMs)}`,
    );
  }
  const dir = resolve(options.dir);
  const brief: Brief = (what, work) => budget.brief(what, work);
  let closing: Promise<void> | undefined;
  const checkOpen = () => {
    if (closing) throw new StoreClosedError("jsonlEventStore");
  };
  // The concerns, each its own module: leases (locks, open logs, the run cache), summary files,
  // group commit (append), and reading (read, readBatches, verify, list).
  const leases: JsonlRunLeases = new JsonlRunLeases({
    dir,
    lockTimeoutMs,
    lockIdleMs,
    budget,
    key: chain.key,
    onIdle: (log) => summaries.write(log),
  });
  const summaries = new JsonlSummaries({
    dir,
    key: chain.key,
    brief,
    fileOf: (runId) => leases.fileOf(runId),
    cached: (runId) => leases.cached(runId),
  });
  const commits = new JsonlGroupCommit({
    leases,
    budget,
    chain,
    summaryIntervalMs,
    writeSummary: (log) => summaries.write(log),
  });
  const reader = new JsonlLogReader({ dir, key: chain.key, brief, leases, summaries, checkOpen });

  return {
    name: "jsonl",
    dir,
    fileOf(runId: string): string {
      assertRunId(runId, "jsonlEventStore.fileOf");
      return leases.fileOf(runId);
    },

    append(
      runId: string,
      events: readonly StoredEventInput[],
      appendOptions: AppendOptions,
    ): Promise<AppendResult> {
      // Not an async function (one promise per append, not two): bad input is a rejection.
      const copies: StoredEvent[] = [];
      const bodies: string[] = [];
      let expectedSeq: number;
      try {
        assertRunId(runId, "jsonlEventStore.append");
        checkOpen();
        if (!Array.isArray(events))
          throw new InvalidArgumentError(
            `[checkpoint] append to run ${runId}: events must be an array`,
          );
        expectedSeq = appendOptions?.expectedSeq;
        if (!Number.isSafeInteger(expectedSeq) || expectedSeq < 0) {
          throw new InvalidArgumentError(
            `[checkpoint] append to run ${runId}: options.expectedSeq must be the log's length (a non-negative integer), got ${String(expectedSeq)}`,
          );
        }
        // The bytes are fixed now (a caller changing its events later changes nothing
        // written); the copies feed the summary.
        for (let index = 0; index < events.length; index += 1) {
          const copy = storedEvent(events[index]!, runId, index);
          copies.push(copy);
          bodies.push(encodeStored(copy, runId, index));
        }
      } catch (error) {
        return Promise.reject(error);
      }
      return commits.enqueue(leases.logOf(runId), bodies, copies, expectedSeq);
    },

    async acquireRun(runId: string): Promise<RunLease> {
      assertRunId(runId, "jsonlEventStore.acquireRun");
      checkOpen();
      return leases.acquire(runId);
    },

    read: (runId: string): Promise<StoredEvent[]> => reader.read(runId),
    readBatches: (runId: string, batchOptions?: { batchSize?: number }) =>
      reader.readBatches(runId, batchOptions),
    verify: (runId: string): Promise<VerifyResult> => reader.verify(runId),
    list: (filter?: ListFilter): Promise<RunSummary[]> => reader.list(filter),

    descriptors() {
      return { cap: budget.cap, open: budget.open, peakHeld: budget.peakHeld };
    },

    close(): Promise<void> {
      closing ??= (async () => {
        const logs = leases.known();
        await Promise.all(logs.map((log) => log.flushing));
        await Promise.all(logs.map((log) => (log.broken ? undefined : summaries.write(log))));
        await Promise.all(logs.map((log) => leases.release(log)));
      })();
      return closing;
    },
  };
}
