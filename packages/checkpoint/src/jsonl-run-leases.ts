import { constants, fstatSync } from "node:fs";
import { join } from "node:path";
import type { RunLease } from "@loopguard/core";
import { CorruptLogError } from "@loopguard/core";
import type { DescriptorBudget } from "./descriptor-budget.js";
import { acquireFileLock } from "./file-lock.js";
import { catchUp } from "./jsonl-catch-up.js";
import { type Brief, createDirectory, logFiles, syncDirectory } from "./jsonl-files.js";
import { type Lease, newRunLog, type RunLog } from "./jsonl-run-log.js";
import { RunLockedError } from "./store-errors.js";

/** What `JsonlRunLeases` needs from the store that composes it. */
export interface JsonlRunLeasesSettings {
  /** The store's absolute directory. */
  dir: string;
  /** How long taking a run's lock waits for another holder. */
  lockTimeoutMs: number;
  /** How long a lease is kept after the run's last append. */
  lockIdleMs: number;
  /** The store's descriptor budget. */
  budget: DescriptorBudget;
  /** The key of the hash chain, for the cursor of a new run. */
  key: Buffer | undefined;
  /** Called before an idle run's lease is given back (brings its summary file up to date; must not reject). */
  onIdle: (log: RunLog) => Promise<void>;
}

const logSuffix = ".jsonl";
/** How many runs an instance remembers (size, seq, summary) before forgetting idle ones. */
const maxCachedRuns = 10_000;

/**
 * The locking concern of the JSONL store: which runs this instance knows (a bounded cache of
 * `RunLog`s), their leases (a run's `<runId>.lock` file and open log, kept until the run has
 * been idle for `lockIdleMs`, so a burst of appends takes the lock once), the descriptors they
 * hold under the budget, and the store directory. Taking a lease rejects with `RunLockedError`
 * after `lockTimeoutMs`, `CorruptLogError` when the log vanished, shrank or is damaged, or the
 * file system's error; giving one back never rejects.
 */
export class JsonlRunLeases {
  readonly #dir: string;
  readonly #lockTimeoutMs: number;
  readonly #lockIdleMs: number;
  readonly #budget: DescriptorBudget;
  readonly #key: Buffer | undefined;
  readonly #onIdle: (log: RunLog) => Promise<void>;
  readonly #brief: Brief;
  readonly #runs = new Map<string, RunLog>();
  /** The run used last: already last in `#runs`, so appending to it again moves nothing. */
  #lastUsed: RunLog | undefined;
  #dirReady: Promise<void> | undefined;
  #directorySync: Promise<void> | undefined;
  #directorySyncQueued: Promise<void> | undefined;

  constructor(settings: JsonlRunLeasesSettings) {
    this.#dir = settings.dir;
    this.#lockTimeoutMs = settings.lockTimeoutMs;
    this.#lockIdleMs = settings.lockIdleMs;
    this.#budget = settings.budget;
    this.#key = settings.key;
    this.#onIdle = settings.onIdle;
    const budget = settings.budget;
    this.#brief = (what, work) => budget.brief(what, work);
  }

  /** The suffix of log file names. */
  static readonly logSuffix = logSuffix;

  /** The log file of a run. */
  fileOf(runId: string): string {
    return join(this.#dir, `${runId}${logSuffix}`);
  }

  /** The lock file of a run. */
  lockOf(runId: string): string {
    return join(this.#dir, `${runId}.lock`);
  }

  /** What this instance knows of a run, without creating or reordering anything. */
  cached(runId: string): RunLog | undefined {
    return this.#runs.get(runId);
  }

  /** Every run this instance knows. */
  known(): RunLog[] {
    return [...this.#runs.values()];
  }

  /** What this instance knows of a run, created on first use; the least recently used idle runs beyond the bound are forgotten. */
  logOf(runId: string): RunLog {
    const runs = this.#runs;
    let log = runs.get(runId);
    if (log) {
      // Most recently used last, for the eviction below.
      if (log !== this.#lastUsed) {
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
      log = newRunLog(runId, this.fileOf(runId), this.#key);
      runs.set(runId, log);
    }
    this.#lastUsed = log;
    return log;
  }

  /** Creates the store directory (once; retried after a failure). */
  ensureDir(): Promise<void> {
    this.#dirReady ??= createDirectory(this.#dir, this.#brief).catch((error: unknown) => {
      this.#dirReady = undefined;
      throw error;
    });
    return this.#dirReady;
  }

  /**
   * Makes new log names durable: one directory fsync serves every log created before it
   * started, so runs that start together share one instead of paying one each.
   */
  syncStoreDirectory(): Promise<void> {
    this.#directorySyncQueued ??= (async () => {
      await this.#directorySync?.catch(() => undefined);
      // From here on a new caller's file may be missed by this sync: it queues the next one.
      this.#directorySyncQueued = undefined;
      const current = syncDirectory(this.#dir, this.#brief);
      this.#directorySync = current;
      try {
        await current;
      } finally {
        if (this.#directorySync === current) this.#directorySync = undefined;
      }
    })();
    return this.#directorySyncQueued;
  }

  /**
   * Takes the run's lease: its lock file and an open handle on its log, kept until the run has
   * been idle for `lockIdleMs`, so a burst of appends pays for one lock, not one per append.
   * On a new lease the file is checked against what this instance knows (another writer may
   * have appended, or died mid-write, while the lock was free).
   */
  async take(log: RunLog): Promise<Lease> {
    await log.releasing;
    await this.ensureDir();
    const lock = await acquireFileLock(this.lockOf(log.runId), this.#lockTimeoutMs, this.#brief);
    let fd: number | undefined;
    const dsync = logFiles.syncFlag !== 0;
    try {
      fd = await this.openHeld(
        log.file,
        constants.O_RDWR | logFiles.syncFlag,
        `opening ${log.file}`,
      );
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
      if (fd !== undefined) await this.closeHeld(fd);
      await lock.release();
      throw error;
    }
  }

  /**
   * Opens a log under a held slot of the budget; undefined (and no slot kept) when it does not
   * exist and `flags` do not create it.
   */
  async openHeld(file: string, flags: number, what: string): Promise<number | undefined> {
    await this.#budget.takeHeld();
    try {
      return await this.#budget.retrying(what, () => logFiles.open(file, flags));
    } catch (error) {
      this.#budget.giveHeld();
      if ((error as NodeJS.ErrnoException).code === "ENOENT" && !(flags & constants.O_CREAT))
        return undefined;
      throw error;
    }
  }

  /** Closes a descriptor opened by `openHeld` and gives its slot back; never rejects. */
  async closeHeld(fd: number): Promise<void> {
    try {
      await logFiles.close(fd);
    } catch {
      // Closing a descriptor that failed is not worth an error: it is gone either way.
    } finally {
      this.#budget.giveHeld();
    }
  }

  /** Gives the lease back: closes the log and removes the lock file. */
  release(log: RunLog): Promise<void> {
    const lease = log.lease;
    if (!lease) return log.releasing ?? Promise.resolve();
    log.lease = undefined;
    clearTimeout(lease.idleTimer);
    this.#budget.setIdle(log, undefined);
    const fd = lease.fd;
    lease.fd = undefined;
    const releasing = (async () => {
      if (fd !== undefined) await this.closeHeld(fd);
      await lease.lock.release().catch(() => undefined);
    })();
    log.releasing = releasing;
    void releasing.then(() => {
      if (log.releasing === releasing) log.releasing = undefined;
    });
    return releasing;
  }

  /** When a run goes idle: brings its summary file up to date and gives its lease back. */
  async retire(log: RunLog): Promise<void> {
    await this.#onIdle(log);
    if (!log.flushing && log.queue.length === 0) await this.release(log);
  }

  /**
   * After a run's group commits drained its queue: lends its open log to the budget while idle,
   * and gives the lease back once the run has been idle for `lockIdleMs`.
   */
  settle(log: RunLog): void {
    const lease = log.lease;
    if (!lease) return;
    if (lease.fd !== undefined) this.#budget.setIdle(log, lease.evictable);
    lease.lastUsedAt = Date.now();
    if (lease.idleTimer === undefined) this.#armIdleTimer(log, lease, this.#lockIdleMs);
  }

  /** Gives the lease back once the run has been idle for `lockIdleMs`, re-arming while it is busy. */
  #armIdleTimer(log: RunLog, lease: Lease, delayMs: number): void {
    const lockIdleMs = this.#lockIdleMs;
    lease.idleTimer = setTimeout(() => {
      lease.idleTimer = undefined;
      if (log.lease !== lease || log.pinned) return;
      const idleFor = Date.now() - lease.lastUsedAt;
      if (log.flushing || idleFor < lockIdleMs)
        this.#armIdleTimer(log, lease, log.flushing ? lockIdleMs : lockIdleMs - idleFor);
      else void this.retire(log);
    }, delayMs);
    lease.idleTimer.unref();
  }

  /**
   * Takes run `runId` for a resume: its lease is pinned (kept however long the run idles) until
   * `release()`. Rejects with `RunLockedError` when this instance already holds it for a
   * resume, or as `take` rejects.
   */
  async acquire(runId: string): Promise<RunLease> {
    const log = this.logOf(runId);
    if (log.pinned)
      throw new RunLockedError(
        this.lockOf(runId),
        `this process (a resume of run ${runId} is in progress through this store)`,
        0,
      );
    // Pinned before the first await: a second resume through this store fails at once.
    log.pinned = true;
    try {
      await log.flushing;
      if (!log.lease) await this.take(log);
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
        if (log.lease && log.queue.length === 0) await this.retire(log);
      },
    };
  }
}
