import { randomBytes } from "node:crypto";
import {
  close as closeFd,
  constants,
  fdatasync,
  fstatSync,
  ftruncate,
  open as openFd,
  read as readFd,
  write as writeFd,
  writeFile as writeFileCallback,
} from "node:fs";
import { mkdir, open, readdir, readFile, rename, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
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
import { AppendConflictError, CorruptLogError, InvalidArgumentError } from "@loopguard/core";
import { filterSummaries, summarize } from "@loopguard/core/plugin";
import { checkBatchSize } from "./batch-size.js";
import {
  DescriptorBudget,
  type Evictable,
  isOutOfDescriptors,
  sharedDescriptorBudget,
} from "./descriptor-budget.js";
import { acquireFileLock, type FileLock } from "./file-lock.js";
import {
  type ChainCursor,
  chainSettings,
  chainStart,
  keyedMarker,
  link,
  summaryMac,
  type VerifyResult,
  verifiedLog,
  withChain,
} from "./hash-chain.js";
import { encodeStored, lineAt, parseLog, storedEvent } from "./jsonl-log.js";
import { assertRunId, isValidRunId } from "./run-id.js";
import { RunLockedError, StoreClosedError, StoreWriteError } from "./store-errors.js";
import { validateFilter } from "./validate-filter.js";

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

interface PendingAppend {
  bodies: string[];
  /** Shallow copies of the events (the summary reads only top-level fields); their seq is set at commit. */
  events: StoredEvent[];
  expectedSeq: number;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

/** What this store instance knows of one run's log. */
interface RunLog {
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

interface Lease {
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

interface SummaryFile {
  version: 1;
  /** The log bytes (complete lines) the summary covers. */
  bytes: number;
  summary: RunSummary;
  /** The chain value of the last event it covers (`summary.events` of them), when the log is chained. */
  head?: string;
  /** With a log key: `summaryMac` over the run id, the events and the head. */
  mac?: string;
}

/** Events after which a run's summary file is rewritten at once: they change its status. */
const statusEvents = new Set([
  "run-start",
  "run-end",
  "approval-request",
  "approval-decision",
  "run-resume",
]);
const logSuffix = ".jsonl";
/** How many runs an instance remembers (size, seq, summary) before forgetting idle ones. */
const maxCachedRuns = 10_000;

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
  const brief = <T>(what: string, work: () => Promise<T>): Promise<T> => budget.brief(what, work);
  const summaryIntervalMs = options.summaryIntervalMs ?? 1_000;
  const chain = chainSettings(options, "jsonlEventStore");
  if (!Number.isFinite(summaryIntervalMs) || summaryIntervalMs < 0) {
    throw new InvalidArgumentError(
      `[checkpoint] jsonlEventStore: summaryIntervalMs must be a non-negative number of milliseconds, got ${String(options.summaryIntervalMs)}`,
    );
  }
  const dir = resolve(options.dir);
  const runs = new Map<string, RunLog>();
  let dirReady: Promise<void> | undefined;
  let closing: Promise<void> | undefined;

  const fileOf = (runId: string) => join(dir, `${runId}${logSuffix}`);
  const lockOf = (runId: string) => join(dir, `${runId}.lock`);
  const summaryFileOf = (runId: string) => join(dir, `${runId}.summary.json`);
  let markedKeyed = false;

  /**
   * Makes new log names durable: one directory fsync serves every log created before it
   * started, so runs that start together share one instead of paying one each.
   */
  let directorySync: Promise<void> | undefined;
  let directorySyncQueued: Promise<void> | undefined;
  const syncStoreDirectory = (): Promise<void> => {
    directorySyncQueued ??= (async () => {
      await directorySync?.catch(() => undefined);
      // From here on a new caller's file may be missed by this sync: it queues the next one.
      directorySyncQueued = undefined;
      const current = syncDirectory(dir, brief);
      directorySync = current;
      try {
        await current;
      } finally {
        if (directorySync === current) directorySync = undefined;
      }
    })();
    return directorySyncQueued;
  };

  const ensureDir = (): Promise<void> => {
    dirReady ??= createDirectory(dir, brief).catch((error: unknown) => {
      dirReady = undefined;
      throw error;
    });
    return dirReady;
  };

  /** The run used last: already last in `runs`, so appending to it again moves nothing. */
  let lastUsed: RunLog | undefined;
  const logOf = (runId: string): RunLog => {
    let log = runs.get(runId);
    if (log) {
      // Most recently used last, for the eviction below.
      if (log !== lastUsed) {
        runs.delete(runId);
        runs.set(runId, log);
      }
    } else {
      // What an instance knows of a run is only a cache (checked against the file at each
      // lease), so idle runs beyond the bound are forgotten, oldest first. A run whose write
      // failed is kept: this instance must go on refusing it.
      if (runs.size >= maxCachedRuns) {
        for (const [id, idle] of runs) {
          if (runs.size < maxCachedRuns) break;
          if (
            !idle.lease &&
            !idle.pinned &&
            !idle.releasing &&
            !idle.flushing &&
            idle.queue.length === 0 &&
            !idle.broken
          )
            runs.delete(id);
        }
      }
      log = {
        runId,
        file: fileOf(runId),
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
        cursor: chainStart(runId, chain.key),
      };
      runs.set(runId, log);
    }
    lastUsed = log;
    return log;
  };

  /** Reads what other writers appended since this instance last looked, under the lock; cuts off a torn tail. */
  const catchUp = async (log: RunLog, fd: number, fileSize: number): Promise<void> => {
    if (fileSize < log.size) {
      throw new CorruptLogError(
        `[checkpoint] ${log.file} shrank from ${log.size} to ${fileSize} bytes: something outside loopguard truncated or replaced it; restore it from a backup`,
      );
    }
    if (fileSize === log.size) return;
    // Read in readBatches-sized pieces (256 KB) with a turn of the event loop between them: a
    // new instance taking a long log (a resume of a million events) never holds the loop, nor a
    // copy of the whole log.
    let pending: Buffer[] = [];
    let position = log.size;
    let parsed: ReturnType<typeof parseLog> | undefined;
    while (position < fileSize) {
      const chunk = Buffer.allocUnsafe(Math.min(readChunkBytes, fileSize - position));
      await readFully(fd, chunk, position);
      position += chunk.length;
      const last = position >= fileSize;
      pending.push(chunk);
      // A line longer than a piece waits for its newline (no concat per piece).
      if (!last && chunk.lastIndexOf(0x0a) === -1) continue;
      const bytes = pending.length === 1 ? chunk : Buffer.concat(pending);
      const end = last ? bytes.length : bytes.lastIndexOf(0x0a) + 1;
      parsed = parseLog(bytes.subarray(0, end), log.file, log.nextSeq, log.cursor);
      pending = end < bytes.length ? [Buffer.from(bytes.subarray(end))] : [];
      if (parsed.events.length > 0) {
        log.summary = summarize(log.summary, log.runId, parsed.events);
        log.nextSeq += parsed.events.length;
        log.size += parsed.completeBytes;
      }
      if (!last) await new Promise((resolve) => setImmediate(resolve));
    }
    if (!parsed) return;
    if (parsed.unterminated) {
      // The last event is whole but lacks its newline: complete it rather than lose it.
      await writeFully(fd, Buffer.from("\n"), fileSize);
      log.size = fileSize + 1;
    } else if (parsed.tornBytes > 0) {
      // We hold the lock, so no live writer is mid-write: torn bytes are a write that died
      // (its append never resolved). Cut them off before writing after them.
      await logFiles.truncate(fd, log.size);
    }
    // Sync what we found before building on it: a writer that died between its write and its
    // sync left lines that a crash of the machine could still lose, and an O_DSYNC write syncs
    // only its own bytes (a whole-file fdatasync after it would have covered them).
    await logFiles.datasync(fd);
  };

  /**
   * Takes the run's lease: its lock file and an open handle on its log, kept until the run has
   * been idle for `lockIdleMs`, so a burst of appends pays for one lock, not one per append.
   * On a new lease the file is checked against what this instance knows (another writer may
   * have appended, or died mid-write, while the lock was free).
   */
  const takeLease = async (log: RunLog): Promise<Lease> => {
    await log.releasing;
    await ensureDir();
    const lock = await acquireFileLock(lockOf(log.runId), lockTimeoutMs, brief);
    let fd: number | undefined;
    const dsync = logFiles.syncFlag !== 0;
    try {
      fd = await openHeld(log.file, constants.O_RDWR | logFiles.syncFlag, `opening ${log.file}`);
      if (fd === undefined && log.size > 0) {
        // No log yet: it is created by the first write, so a rejected append leaves no file.
        throw new CorruptLogError(
          `[checkpoint] ${log.file} disappeared after ${log.nextSeq} events were written to it; restore it from a backup`,
        );
      }
      if (fd !== undefined) await catchUp(log, fd, fstatSync(fd).size);
      const lease: Lease = {
        lock,
        fd,
        exists: fd !== undefined,
        dsync,
        idleTimer: undefined,
        lastUsedAt: 0,
        evictable: {
          // Lends the idle log's descriptor to another run; the next append reopens it.
          evict: async () => {
            const open = lease.fd;
            lease.fd = undefined;
            if (open !== undefined) await logFiles.close(open);
          },
        },
      };
      log.lease = lease;
      return lease;
    } catch (error) {
      if (fd !== undefined) await closeHeld(fd);
      await lock.release();
      throw error;
    }
  };

  /**
   * Opens a log under a held slot of the budget; undefined (and no slot kept) when it does not
   * exist and `flags` do not create it.
   */
  const openHeld = async (
    file: string,
    flags: number,
    what: string,
  ): Promise<number | undefined> => {
    await budget.takeHeld();
    try {
      return await budget.retrying(what, () => logFiles.open(file, flags));
    } catch (error) {
      budget.giveHeld();
      if ((error as NodeJS.ErrnoException).code === "ENOENT" && !(flags & constants.O_CREAT))
        return undefined;
      throw error;
    }
  };

  const closeHeld = async (fd: number): Promise<void> => {
    try {
      await logFiles.close(fd);
    } catch {
      // Closing a descriptor that failed is not worth an error: it is gone either way.
    } finally {
      budget.giveHeld();
    }
  };

  /** Gives the lease back: closes the log and removes the lock file. */
  const releaseLease = (log: RunLog): Promise<void> => {
    const lease = log.lease;
    if (!lease) return log.releasing ?? Promise.resolve();
    log.lease = undefined;
    clearTimeout(lease.idleTimer);
    budget.setIdle(log, undefined);
    const fd = lease.fd;
    lease.fd = undefined;
    const releasing = (async () => {
      if (fd !== undefined) await closeHeld(fd);
      await lease.lock.release().catch(() => undefined);
    })();
    log.releasing = releasing;
    void releasing.then(() => {
      if (log.releasing === releasing) log.releasing = undefined;
    });
    return releasing;
  };

  /** When a run goes idle: brings its summary file up to date and gives its lease back. */
  const retire = async (log: RunLog): Promise<void> => {
    await writeSummary(log);
    if (!log.flushing && log.queue.length === 0) await releaseLease(log);
  };

  /**
   * One group commit: every append queued for the run is fenced, then written in one write,
   * durable when it returns (`O_DSYNC`; elsewhere write then fdatasync).
   */
  const commit = async (log: RunLog, batch: PendingAppend[]): Promise<void> => {
    const lease = log.lease ?? (await takeLease(log));
    // Busy: the budget must not lend this log's descriptor while the commit uses it.
    budget.setIdle(log, undefined);
    if (lease.fd === undefined && lease.exists) {
      // The descriptor was lent to another run while this one was idle: reopen it (the lock
      // was held all along, but the size check below still guards the position).
      lease.fd = await openHeld(
        log.file,
        constants.O_RDWR | logFiles.syncFlag,
        `reopening ${log.file}`,
      );
      if (lease.fd === undefined)
        throw new CorruptLogError(
          `[checkpoint] ${log.file} disappeared after ${log.nextSeq} events were written to it; restore it from a backup`,
        );
    }
    // Cheap (a synchronous fstat of a cached inode) and catches a writer that got past the
    // lock, or a file truncated under us, before a byte is written at the wrong place.
    if (lease.fd !== undefined) {
      const fileSize = fstatSync(lease.fd).size;
      if (fileSize !== log.size) await catchUp(log, lease.fd, fileSize);
    }
    let seq = log.nextSeq;
    let text = "";
    let changedStatus = false;
    // A new log is chained (unless the chain is off); one written before the chain stays as it is.
    const chained = log.cursor.chained ?? chain.enabled;
    if (chained && log.cursor.key === undefined && log.cursor.head?.startsWith("hmac:"))
      throw new StoreWriteError(
        `[checkpoint] ${log.file} is chained with an HMAC key, and this store has none: set LOOPGUARD_LOG_KEY (or logKey) to the key the run was written with before appending to it`,
      );
    let head = log.cursor.head;
    for (const append of batch) {
      if (append.expectedSeq !== seq) {
        append.reject(new AppendConflictError(log.runId, append.expectedSeq, seq));
        append.expectedSeq = -1;
        continue;
      }
      const { bodies, events } = append;
      for (let index = 0; index < bodies.length; index += 1) {
        const event = events[index]!;
        (event as { seq: number }).seq = seq;
        if (statusEvents.has(event.type)) changedStatus = true;
        const line = lineAt(seq, bodies[index]!);
        if (chained) {
          const covered = line.slice(0, -1);
          head = link(head!, covered, chain.key);
          text += `${withChain(covered, head)}\n`;
        } else text += line;
        seq += 1;
      }
    }
    if (text !== "") {
      const bytes = Buffer.from(text, "utf8");
      if (lease.fd === undefined) {
        // The run's first write creates its log. If any step fails, the file is removed
        // again: the append never resolved, and no half-created run is left `running`.
        const fd = (await openHeld(
          log.file,
          constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | logFiles.syncFlag,
          `creating ${log.file}`,
        )) as number;
        try {
          await writeFully(fd, bytes, 0);
          if (!lease.dsync) await logFiles.datasync(fd);
          // The new file's name is durable only once its directory is.
          await syncStoreDirectory();
        } catch (error) {
          await closeHeld(fd);
          try {
            await unlink(log.file);
          } catch (unlinkError) {
            log.broken = writeFailure(log, unlinkError);
            throw log.broken;
          }
          throw isOutOfDescriptors(error)
            ? budget.outOfDescriptors(`creating ${log.file}`, error)
            : new StoreWriteError(
                `[checkpoint] creating ${log.file} failed (${(error as Error).message}); the file was removed, so run ${log.runId} has no log: start it again`,
                { cause: error },
              );
        }
        lease.fd = fd;
        lease.exists = true;
      } else {
        try {
          await writeFully(lease.fd, bytes, log.size);
          if (!lease.dsync) await logFiles.datasync(lease.fd);
        } catch (error) {
          log.broken = writeFailure(log, error);
          throw log.broken;
        }
      }
      log.size += bytes.length;
      log.nextSeq = seq;
      log.cursor.chained = chained;
      log.cursor.head = chained ? head : undefined;
    }
    for (const append of batch)
      if (append.expectedSeq !== -1 && append.events.length > 0)
        log.summary = summarize(log.summary, log.runId, append.events);
    // The summary file is a cache that anyone may rewrite; the events are already durable.
    if (changedStatus || Date.now() - log.summaryWrittenAt >= summaryIntervalMs)
      await writeSummary(log);
    for (const append of batch)
      if (append.expectedSeq !== -1)
        append.resolve({ nextSeq: append.expectedSeq + append.events.length });
  };

  /** Rewrites a run's summary file (derived data: written atomically, never fsynced, checked on read). */
  const writeSummary = async (log: RunLog): Promise<void> => {
    if (!log.summary || log.summaryBytes === log.size) return;
    const head = log.cursor.chained && log.cursor.head ? log.cursor.head : undefined;
    const content: SummaryFile = {
      version: 1,
      bytes: log.size,
      summary: log.summary,
      ...(head ? { head } : {}),
      ...(head && chain.key
        ? { mac: summaryMac(chain.key, log.runId, log.summary.events, head) }
        : {}),
    };
    if (chain.key && !markedKeyed) {
      // The directory says its logs are keyed, so verify without the key never calls one
      // re-chained with plain SHA-256 intact (while the marker stays).
      markedKeyed = true;
      await writeSmallFile(join(dir, keyedMarker), "hmac\n").catch(() => {
        markedKeyed = false;
      });
    }
    const target = summaryFileOf(log.runId);
    const temporary = `${target}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await brief(`writing ${temporary}`, () => writeSmallFile(temporary, JSON.stringify(content)));
      await rename(temporary, target);
      log.summaryBytes = log.size;
      log.summaryWrittenAt = Date.now();
    } catch {
      // A summary file is a cache: list() reads the log when it is missing or behind.
      await unlink(temporary).catch(() => undefined);
    }
  };

  const flush = async (log: RunLog): Promise<void> => {
    // Appends made in the same tick as this one join its batch.
    await Promise.resolve();
    while (log.queue.length > 0) {
      const batch = log.queue;
      log.queue = [];
      try {
        if (log.broken) throw log.broken;
        await commit(log, batch);
      } catch (error) {
        // Appends already settled ignore this; the rest fail with the cause. No lock is kept
        // after a failure.
        for (const append of batch) append.reject(error);
        await releaseLease(log);
      }
    }
    log.flushing = undefined;
    const lease = log.lease;
    if (lease) {
      if (lease.fd !== undefined) budget.setIdle(log, lease.evictable);
      lease.lastUsedAt = Date.now();
      if (lease.idleTimer === undefined) armIdleTimer(log, lease, lockIdleMs);
    }
  };

  /** Gives the lease back once the run has been idle for `lockIdleMs`, re-arming while it is busy. */
  const armIdleTimer = (log: RunLog, lease: Lease, delayMs: number): void => {
    lease.idleTimer = setTimeout(() => {
      lease.idleTimer = undefined;
      if (log.lease !== lease || log.pinned) return;
      const idleFor = Date.now() - lease.lastUsedAt;
      if (log.flushing || idleFor < lockIdleMs)
        armIdleTimer(log, lease, log.flushing ? lockIdleMs : lockIdleMs - idleFor);
      else void retire(log);
    }, delayMs);
    lease.idleTimer.unref();
  };

  const checkOpen = () => {
    if (closing) throw new StoreClosedError("jsonlEventStore");
  };

  /** The summary of a run from memory, its summary file, or its log (only the part the summary file does not cover). */
  const summaryOf = async (runId: string): Promise<RunSummary | undefined> => {
    const file = fileOf(runId);
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const log = runs.get(runId);
    if (log?.summary && log.size === size && !log.flushing) return log.summary;
    let base: { bytes: number; summary: RunSummary | undefined } = { bytes: 0, summary: undefined };
    try {
      const saved = JSON.parse(
        await brief("reading a summary", () => readFile(summaryFileOf(runId), "utf8")),
      ) as SummaryFile;
      if (
        saved.version === 1 &&
        Number.isInteger(saved.bytes) &&
        saved.bytes <= size &&
        saved.summary?.runId === runId
      )
        base = saved;
    } catch {
      // Missing or unreadable: the log is read from its start.
    }
    if (base.bytes === size) return base.summary;
    const buffer = Buffer.allocUnsafe(size - base.bytes);
    const read = await brief(`reading ${file}`, async () => {
      const fd = await logFiles.open(file, constants.O_RDONLY);
      try {
        return await readUpTo(fd, buffer, base.bytes);
      } finally {
        await logFiles.close(fd);
      }
    });
    const parsed = parseLog(buffer.subarray(0, read), file, base.summary?.events ?? 0);
    return parsed.events.length === 0
      ? base.summary
      : summarize(base.summary, runId, parsed.events);
  };

  return {
    name: "jsonl",
    dir,
    fileOf(runId: string): string {
      assertRunId(runId, "jsonlEventStore.fileOf");
      return fileOf(runId);
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
      const log = logOf(runId);
      // A promise settles once: an append rejected as a conflict ignores the batch's later outcome.
      const result = new Promise<AppendResult>((resolve, reject) => {
        log.queue.push({ bodies, events: copies, expectedSeq, resolve, reject });
      });
      log.flushing ??= flush(log);
      return result;
    },

    async acquireRun(runId: string): Promise<RunLease> {
      assertRunId(runId, "jsonlEventStore.acquireRun");
      checkOpen();
      const log = logOf(runId);
      if (log.pinned)
        throw new RunLockedError(
          lockOf(runId),
          `this process (a resume of run ${runId} is in progress through this store)`,
          0,
        );
      // Pinned before the first await: a second resume through this store fails at once.
      log.pinned = true;
      try {
        await log.flushing;
        if (!log.lease) await takeLease(log);
      } catch (error) {
        log.pinned = false;
        throw error;
      }
      let released = false;
      return {
        release: async () => {
          if (released) return;
          released = true;
          log.pinned = false;
          await log.flushing;
          if (log.lease && log.queue.length === 0) await retire(log);
        },
      };
    },

    async read(runId: string): Promise<StoredEvent[]> {
      assertRunId(runId, "jsonlEventStore.read");
      checkOpen();
      // Wait for this instance's writes in flight, so a read never returns bytes not yet fsynced.
      await runs.get(runId)?.flushing;
      let buffer: Buffer;
      try {
        buffer = await brief(`reading ${fileOf(runId)}`, () => readFile(fileOf(runId)));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
        throw error;
      }
      // A torn tail (or another process's write in flight) is not part of the log; the next
      // append cuts it off under the lock. The chain is checked on every read: resume refuses
      // a log that was tampered with.
      const parsed = parseLog(buffer, fileOf(runId), 0, chainStart(runId, chain.key));
      if (parsed.events.length === 0) throw emptyLog(fileOf(runId));
      return parsed.events;
    },

    async *readBatches(runId: string, batchOptions: { batchSize?: number } = {}) {
      assertRunId(runId, "jsonlEventStore.readBatches");
      checkOpen();
      const batchSize = checkBatchSize(batchOptions.batchSize, "jsonlEventStore.readBatches");
      await runs.get(runId)?.flushing;
      const file = fileOf(runId);
      const fd = await openHeld(file, constants.O_RDONLY, `reading ${file}`);
      if (fd === undefined) return;
      try {
        const cursor = chainStart(runId, chain.key);
        const chunk = Buffer.allocUnsafe(readChunkBytes);
        let carry = Buffer.alloc(0);
        let position = 0;
        let seq = 0;
        let batch: StoredEvent[] = [];
        for (;;) {
          const read = await logFiles.read(fd, chunk, 0, chunk.length, position);
          position += read;
          const bytes =
            carry.length > 0
              ? Buffer.concat([carry, chunk.subarray(0, read)])
              : chunk.subarray(0, read);
          // Complete lines now; the rest waits for the next chunk (or is the tail at the end).
          const end = read === 0 ? bytes.length : bytes.lastIndexOf(0x0a) + 1;
          const parsed = parseLog(bytes.subarray(0, end), file, seq, cursor);
          carry = Buffer.from(bytes.subarray(end));
          seq += parsed.events.length;
          for (const event of parsed.events) {
            batch.push(event);
            if (batch.length >= batchSize) {
              yield batch;
              batch = [];
            }
          }
          if (read === 0) break;
          // Whatever the consumer does with a batch, the next chunk waits for a turn of the loop.
          await new Promise((resolve) => setImmediate(resolve));
        }
        if (seq === 0) throw emptyLog(file);
        if (batch.length > 0) yield batch;
      } finally {
        await closeHeld(fd);
      }
    },

    async verify(runId: string): Promise<VerifyResult> {
      assertRunId(runId, "jsonlEventStore.verify");
      checkOpen();
      await runs.get(runId)?.flushing;
      const file = fileOf(runId);
      let buffer: Buffer;
      try {
        buffer = await brief(`reading ${file}`, () => readFile(file));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT")
          return {
            ok: false,
            runId,
            firstBadSeq: 0,
            events: 0,
            reason: `no log: ${file} does not exist`,
          };
        throw error;
      }
      const cursor = chainStart(runId, chain.key);
      let parsed: ReturnType<typeof parseLog>;
      try {
        parsed = parseLog(buffer, file, 0, cursor, true);
      } catch (error) {
        const seq = (error as { seq?: number }).seq ?? 0;
        return {
          ok: false,
          runId,
          firstBadSeq: seq,
          events: seq,
          reason: (error as Error).message,
        };
      }
      const events = parsed.events.length;
      if (events === 0)
        return { ok: false, runId, firstBadSeq: 0, events: 0, reason: emptyLog(file).message };
      const notes: string[] = [];
      if (parsed.unterminated)
        notes.push(
          `the last line (seq ${events - 1}) is whole but lacks its newline: accepted as written; the next append adds the newline`,
        );
      else if (parsed.tornBytes > 0)
        notes.push(
          `${parsed.tornBytes} bytes after the last line are a torn write (an append that never completed): not part of the log; the next append removes them`,
        );
      // The summary file keeps the head: a log cut short (with its chain intact) shows here.
      let saved: SummaryFile | undefined;
      try {
        saved = JSON.parse(
          await brief("reading a summary", () => readFile(summaryFileOf(runId), "utf8")),
        );
      } catch {
        notes.push("no summary file: a log cut short cannot be told from a whole one");
      }
      const savedEvents = saved?.summary?.events;
      if (typeof savedEvents === "number" && saved?.head !== undefined) {
        if (savedEvents > events)
          return {
            ok: false,
            runId,
            firstBadSeq: events,
            events,
            reason: `the log was cut short: its summary records ${savedEvents} events ending in ${saved.head}, but the log holds ${events}; events ${events} to ${savedEvents - 1} were removed`,
          };
        if (savedEvents > 0 && parsed.chains?.[savedEvents - 1] !== saved.head)
          return {
            ok: false,
            runId,
            firstBadSeq: savedEvents - 1,
            events,
            reason: `event ${savedEvents - 1} is not the one the summary recorded (head ${saved.head}): the log was rewritten from there on`,
          };
      }
      const last = parsed.chains?.at(-1);
      const keyedLog = cursor.chained === true && last?.startsWith("hmac:") === true;
      if (chain.key && keyedLog) {
        // With the key, the log must end where an authenticated record says it ends: a summary
        // whose MAC holds and that covers every event, or a run-end (its HMAC checked above).
        // Otherwise a log cut short with its summary deleted, emptied, replaced by an older
        // genuine one or rewritten to match would pass.
        const macHolds =
          typeof savedEvents === "number" &&
          typeof saved?.head === "string" &&
          saved.mac === summaryMac(chain.key, runId, savedEvents, saved.head);
        const endsInRunEnd = parsed.events.at(-1)?.type === "run-end";
        if (!endsInRunEnd && (!macHolds || savedEvents !== events))
          return {
            ok: false,
            runId,
            firstBadSeq: macHolds ? (savedEvents as number) : events,
            events,
            reason: !saved
              ? `the log does not end in a run-end and its summary is missing: with LOOPGUARD_LOG_KEY the end of a log must be vouched for, so a log cut short cannot be told from a whole one (if the run is still going or crashed, verify after it ends or resumes)`
              : !macHolds
                ? `the log does not end in a run-end and its summary carries no valid MAC (emptied, rewritten or written without the key): a log cut short cannot be told from a whole one`
                : `the log does not end in a run-end and its summary covers ${savedEvents} of its ${events} events: the log may have been cut short and an older summary put back (if the run is still going or crashed, verify after it ends or resumes)`,
          };
      }
      if (!chain.key && cursor.chained === true && !keyedLog) {
        // A plain chain where the store's records say the logs are keyed: a keyed log re-chained
        // without the key looks exactly like this, so only the key can tell.
        let marked = typeof saved?.mac === "string";
        if (!marked)
          marked = await stat(join(dir, keyedMarker)).then(
            () => true,
            () => false,
          );
        if (marked)
          return {
            ok: true,
            runId,
            events,
            ...(last ? { head: last } : {}),
            chain: "hmac-unchecked",
            notes: [
              ...notes,
              "the log carries plain SHA-256 hashes, but this store's logs are keyed: it may have been re-chained without the key; only LOOPGUARD_LOG_KEY can tell",
            ],
          };
      }
      return verifiedLog(runId, events, last, chain.key, notes, cursor.chained === true);
    },

    async list(filter: ListFilter = {}): Promise<RunSummary[]> {
      checkOpen();
      validateFilter(filter);
      let names: string[];
      try {
        names = await brief(`listing ${dir}`, () => readdir(dir));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
        throw error;
      }
      const runIds = names
        .filter((name) => name.endsWith(logSuffix))
        .map((name) => name.slice(0, -logSuffix.length))
        .filter(isValidRunId);
      const summaries: RunSummary[] = [];
      let next = 0;
      const worker = async () => {
        while (next < runIds.length) {
          const runId = runIds[next]!;
          next += 1;
          let summary: RunSummary | undefined;
          try {
            summary = await summaryOf(runId);
          } catch (error) {
            // One damaged log must not hide every other run: list it as unreadable, with why.
            const changed = await stat(fileOf(runId)).then(
              (stats) => stats.mtimeMs,
              () => 0,
            );
            summary = unreadableSummary(runId, error, changed);
          }
          if (summary) summaries.push(summary);
        }
      };
      await Promise.all(Array.from({ length: Math.min(16, runIds.length) }, worker));
      return filterSummaries(summaries, filter);
    },

    descriptors() {
      return { cap: budget.cap, open: budget.open, peakHeld: budget.peakHeld };
    },

    close(): Promise<void> {
      closing ??= (async () => {
        const logs = [...runs.values()];
        await Promise.all(logs.map((log) => log.flushing));
        await Promise.all(logs.map((log) => (log.broken ? undefined : writeSummary(log))));
        await Promise.all(logs.map((log) => releaseLease(log)));
      })();
      return closing;
    },
  };
}

/** The `list` row of a run whose log cannot be read. */
function unreadableSummary(runId: string, error: unknown, changedAt: number): RunSummary {
  return {
    runId,
    status: "unreadable",
    steps: 0,
    costUsd: 0,
    events: 0,
    createdAt: changedAt,
    updatedAt: changedAt,
    error: error instanceof Error ? error.message : String(error),
  };
}

/** How much of a log `readBatches` reads at once. */
const readChunkBytes = 1 << 18;

/** The error for a log file that holds no complete event. */
function emptyLog(file: string): CorruptLogError {
  return new CorruptLogError(
    `[checkpoint] ${file} holds no complete event: the run's first write never finished (a crash as it started, or the file was emptied), so nothing of it ran. Start the run again with the same id (its first append replaces the file), or delete the file`,
  );
}

/** Runs a step that opens and closes one descriptor under the store's budget. */
type Brief = <T>(what: string, work: () => Promise<T>) => Promise<T>;

function writeFailure(log: RunLog, error: unknown): StoreWriteError {
  return new StoreWriteError(
    `[checkpoint] writing ${log.file} failed (${(error as Error).message}): what reached the disk is unknown, so this store stops writing run ${log.runId}; fix the disk, then open a new store to resume the run`,
    { cause: error },
  );
}

async function createDirectory(dir: string, brief: Brief): Promise<void> {
  // Logs hold tasks, tool arguments and outputs: readable by their owner only (0600 files in
  // 0700 directories, whatever the umask leaves).
  const first = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return;
  // New directories are durable only once their parents' entries are: fsync from the
  // parent of the first created directory down to the store's own.
  let current = dir;
  const chain: string[] = [];
  while (current !== dirname(first)) {
    chain.push(dirname(current));
    current = dirname(current);
  }
  for (const directory of chain.reverse()) await syncDirectory(directory, brief);
}

async function syncDirectory(directory: string, brief: Brief): Promise<void> {
  await brief(`syncing ${directory}`, async () => {
    const handle = await open(directory, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
}

/** `writeFile` through the callback API: no FileHandle to create and collect per summary. */
function writeSmallFile(path: string, text: string): Promise<void> {
  return new Promise((resolve, reject) =>
    writeFileCallback(path, text, { mode: 0o600 }, (error) => (error ? reject(error) : resolve())),
  );
}

async function writeFully(fd: number, buffer: Buffer, position: number): Promise<void> {
  // A short write (rare: a full disk, a signal) goes on from where it stopped.
  let offset = await logFiles.write(fd, buffer, 0, buffer.length, position);
  while (offset < buffer.length) {
    offset += await logFiles.write(fd, buffer, offset, buffer.length - offset, position + offset);
  }
}

async function readFully(fd: number, buffer: Buffer, position: number): Promise<void> {
  const read = await readUpTo(fd, buffer, position);
  if (read < buffer.length)
    throw new CorruptLogError(
      `[checkpoint] a log shrank while it was read under its lock; something outside loopguard is changing it`,
    );
}

async function readUpTo(fd: number, buffer: Buffer, position: number): Promise<number> {
  let offset = 0;
  while (offset < buffer.length) {
    const bytesRead = await logFiles.read(
      fd,
      buffer,
      offset,
      buffer.length - offset,
      position + offset,
    );
    if (bytesRead === 0) break;
    offset += bytesRead;
  }
  return offset;
}

const settle =
  <T>(resolve: (value: T) => void, reject: (error: unknown) => void) =>
  (error: NodeJS.ErrnoException | null, value: T) => {
    if (error) reject(error);
    else resolve(value);
  };

/**
 * The log's file operations: raw descriptors through Node's callback API, one thread-pool task
 * each, without `FileHandle`'s bookkeeping. Internal; the tests wrap `write` and `datasync` to
 * see what was durable when an append resolved, and set `syncFlag` to 0 to test the fallback.
 */
export const logFiles = {
  /**
   * `O_DSYNC` where a write on a file opened with it gives the guarantee of write + fdatasync:
   * on Linux the kernel runs the file's fdatasync over the written range before `write`
   * returns (synchronized I/O data integrity completion), so one thread-pool round trip makes
   * an append durable instead of two. Elsewhere 0, and each write is followed by `datasync`:
   * on macOS Node's fdatasync is `F_FULLFSYNC`, which flushes the drive's cache, and O_DSYNC
   * does not.
   */
  syncFlag: process.platform === "linux" ? (constants.O_DSYNC ?? 0) : 0,
  open(path: string, flags: number): Promise<number> {
    return new Promise((resolve, reject) => openFd(path, flags, 0o600, settle(resolve, reject)));
  },
  write(
    fd: number,
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
  ): Promise<number> {
    return new Promise((resolve, reject) =>
      writeFd(fd, buffer, offset, length, position, settle(resolve, reject)),
    );
  },
  read(fd: number, buffer: Buffer, offset: number, length: number, position: number) {
    return new Promise<number>((resolve, reject) =>
      readFd(fd, buffer, offset, length, position, settle(resolve, reject)),
    );
  },
  datasync(fd: number): Promise<void> {
    return new Promise((resolve, reject) => fdatasync(fd, settle(resolve, reject)));
  },
  truncate(fd: number, length: number): Promise<void> {
    return new Promise((resolve, reject) => ftruncate(fd, length, settle(resolve, reject)));
  },
  close(fd: number): Promise<void> {
    return new Promise((resolve, reject) => closeFd(fd, settle(resolve, reject)));
  },
};
