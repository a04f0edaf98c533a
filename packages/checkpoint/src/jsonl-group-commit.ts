import { constants, fstatSync } from "node:fs";
import { unlink } from "node:fs/promises";
import type { AppendResult } from "@loopguard/core";
import { AppendConflictError, CorruptLogError } from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import { type DescriptorBudget, isOutOfDescriptors } from "./descriptor-budget.js";
import { type ChainSettings, link, withChain } from "./hash-chain.js";
import { catchUp } from "./jsonl-catch-up.js";
import { logFiles, writeFully } from "./jsonl-files.js";
import { lineAt } from "./jsonl-log.js";
import type { JsonlRunLeases } from "./jsonl-run-leases.js";
import type { Lease, PendingAppend, RunLog } from "./jsonl-run-log.js";
import { StoreWriteError } from "./store-errors.js";

/** What `JsonlGroupCommit` needs from the store that composes it. */
export interface JsonlGroupCommitSettings {
  leases: JsonlRunLeases;
  budget: DescriptorBudget;
  chain: ChainSettings;
  /** How often, at most, a running run's summary file is rewritten. */
  summaryIntervalMs: number;
  /** Rewrites a run's summary file (must not reject). */
  writeSummary: (log: RunLog) => Promise<void>;
}

/** Events after which a run's summary file is rewritten at once: they change its status. */
const statusEvents = new Set([
  "run-start",
  "run-end",
  "approval-request",
  "approval-decision",
  "run-resume",
]);

/**
 * The append-and-commit concern of the JSONL store: appends to one run queue behind the write
 * in flight, and everything queued goes out as one durable write (group commit), fenced by
 * `expectedSeq` and chained. An append rejects with `AppendConflictError` when its fence does
 * not hold, with `StoreWriteError` when a write or fsync failed (the run is then refused by
 * this instance), `CorruptLogError` when the log vanished or is damaged, or as taking the
 * run's lease rejects (`RunLockedError`).
 */
export class JsonlGroupCommit {
  readonly #leases: JsonlRunLeases;
  readonly #budget: DescriptorBudget;
  readonly #chain: ChainSettings;
  readonly #summaryIntervalMs: number;
  readonly #writeSummary: (log: RunLog) => Promise<void>;

  constructor(settings: JsonlGroupCommitSettings) {
    this.#leases = settings.leases;
    this.#budget = settings.budget;
    this.#chain = settings.chain;
    this.#summaryIntervalMs = settings.summaryIntervalMs;
    this.#writeSummary = settings.writeSummary;
  }

  /** Queues an append (already validated and encoded) on its run; settles when its group commit does. */
  enqueue(
    log: RunLog,
    bodies: string[],
    events: PendingAppend["events"],
    expectedSeq: number,
  ): Promise<AppendResult> {
    // A promise settles once: an append rejected as a conflict ignores the batch's later outcome.
    const result = new Promise<AppendResult>((resolve, reject) => {
      log.queue.push({ bodies, events, expectedSeq, resolve, reject });
    });
    log.flushing ??= this.#flush(log);
    return result;
  }

  async #flush(log: RunLog): Promise<void> {
    // Appends made in the same tick as this one join its batch.
    await Promise.resolve();
    while (log.queue.length > 0) {
      const batch = log.queue;
      log.queue = [];
      try {
        if (log.broken) throw log.broken;
        await this.#commit(log, batch);
      } catch (error) {
        // Appends already settled ignore this; the rest fail with the cause. No lock is kept
        // after a failure.
        for (const append of batch) append.reject(error);
        await this.#leases.release(log);
      }
    }
    log.flushing = undefined;
    this.#leases.settle(log);
  }

  /**
   * One group commit: every append queued for the run is fenced, then written in one write,
   * durable when it returns (`O_DSYNC`; elsewhere write then fdatasync).
   */
  async #commit(log: RunLog, batch: PendingAppend[]): Promise<void> {
    const lease = log.lease ?? (await this.#leases.take(log));
    // Busy: the budget must not lend this log's descriptor while the commit uses it.
    this.#budget.setIdle(log, undefined);
    if (lease.fd === undefined && lease.exists) {
      // The descriptor was lent to another run while this one was idle: reopen it (the lock
      // was held all along, but the size check below still guards the position).
      lease.fd = await this.#leases.openHeld(
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
    // A new log is chained (unless the chain is off); one written before the chain stays as it is.
    const chained = log.cursor.chained ?? this.#chain.enabled;
    if (chained && log.cursor.key === undefined && log.cursor.head?.startsWith("hmac:"))
      throw new StoreWriteError(
        `[checkpoint] ${log.file} is chained with an HMAC key, and this store has none: set LOOPGUARD_LOG_KEY (or logKey) to the key the run was written with before appending to it`,
      );
    const { text, seq, head, changedStatus } = this.#encode(log, batch, chained);
    if (text !== "") {
      const bytes = Buffer.from(text, "utf8");
      if (lease.fd === undefined) await this.#create(log, lease, bytes);
      else {
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
    if (changedStatus || Date.now() - log.summaryWrittenAt >= this.#summaryIntervalMs)
      await this.#writeSummary(log);
    for (const append of batch)
      if (append.expectedSeq !== -1)
        append.resolve({ nextSeq: append.expectedSeq + append.events.length });
  }

  /**
   * Fences a batch against the log's length (a conflicting append is rejected and marked -1)
   * and encodes the rest as chained lines.
   */
  #encode(
    log: RunLog,
    batch: PendingAppend[],
    chained: boolean,
  ): { text: string; seq: number; head: string | undefined; changedStatus: boolean } {
    let seq = log.nextSeq;
    let text = "";
    let changedStatus = false;
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
          head = link(head!, covered, this.#chain.key);
          text += `${withChain(covered, head)}\n`;
        } else text += line;
        seq += 1;
      }
    }
    return { text, seq, head, changedStatus };
  }

  /**
   * The run's first write creates its log. If any step fails, the file is removed again: the
   * append never resolved, and no half-created run is left `running`.
   */
  async #create(log: RunLog, lease: Lease, bytes: Buffer): Promise<void> {
    const fd = (await this.#leases.openHeld(
      log.file,
      constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | logFiles.syncFlag,
      `creating ${log.file}`,
    )) as number;
    try {
      await writeFully(fd, bytes, 0);
      if (!lease.dsync) await logFiles.datasync(fd);
      // The new file's name is durable only once its directory is.
      await this.#leases.syncStoreDirectory();
    } catch (error) {
      await this.#leases.closeHeld(fd);
      try {
        await unlink(log.file);
      } catch (unlinkError) {
        log.broken = writeFailure(log, unlinkError);
        throw log.broken;
      }
      throw isOutOfDescriptors(error)
        ? this.#budget.outOfDescriptors(`creating ${log.file}`, error)
        : new StoreWriteError(
            `[checkpoint] creating ${log.file} failed (${(error as Error).message}); the file was removed, so run ${log.runId} has no log: start it again`,
            { cause: error },
          );
    }
    lease.fd = fd;
    lease.exists = true;
  }
}

function writeFailure(log: RunLog, error: unknown): StoreWriteError {
  return new StoreWriteError(
    `[checkpoint] writing ${log.file} failed (${(error as Error).message}): what reached the disk is unknown, so this store stops writing run ${log.runId}; fix the disk, then open a new store to resume the run`,
    { cause: error },
  );
}
