import { constants } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { ListFilter, RunSummary, StoredEvent } from "@loopguard/core";
import { filterSummaries } from "@loopguard/core/plugin";
import { checkBatchSize } from "./batch-size.js";
import {
  chainStart,
  keyedMarker,
  summaryMac,
  type VerifyResult,
  verifiedLog,
} from "./hash-chain.js";
import { type Brief, emptyLog, logFiles, readChunkBytes } from "./jsonl-files.js";
import { parseLog } from "./jsonl-log.js";
import { JsonlRunLeases } from "./jsonl-run-leases.js";
import type { JsonlSummaries, SummaryFile } from "./jsonl-summaries.js";
import { assertRunId, isValidRunId } from "./run-id.js";
import { validateFilter } from "./validate-filter.js";

/** What `JsonlLogReader` needs from the store that composes it. */
export interface JsonlLogReaderSettings {
  /** The store's absolute directory. */
  dir: string;
  /** The key of the hash chain, checked on every read. */
  key: Buffer | undefined;
  /** Runs a step under the store's descriptor budget. */
  brief: Brief;
  leases: JsonlRunLeases;
  summaries: JsonlSummaries;
  /** Throws `StoreClosedError` once the store is closing. */
  checkOpen: () => void;
}

/**
 * The reading concern of the JSONL store: `read`, `readBatches`, `verify` and `list`. Each waits
 * for this instance's writes in flight to the run, so it never returns bytes not yet durable,
 * and checks the hash chain. Reading rejects with `InvalidArgumentError` for a bad run id or
 * filter, `StoreClosedError` after `close`, `CorruptLogError` naming the file and line for a
 * damaged log, or the file system's error; `verify` reports damage in its result instead, and
 * `list` lists a damaged run as `unreadable`.
 */
export class JsonlLogReader {
  readonly #dir: string;
  readonly #key: Buffer | undefined;
  readonly #brief: Brief;
  readonly #leases: JsonlRunLeases;
  readonly #summaries: JsonlSummaries;
  readonly #checkOpen: () => void;

  constructor(settings: JsonlLogReaderSettings) {
    this.#dir = settings.dir;
    this.#key = settings.key;
    this.#brief = settings.brief;
    this.#leases = settings.leases;
    this.#summaries = settings.summaries;
    this.#checkOpen = settings.checkOpen;
  }

  /** A run's whole log, chain checked; `[]` for an unknown run. */
  async read(runId: string): Promise<StoredEvent[]> {
    assertRunId(runId, "jsonlEventStore.read");
    this.#checkOpen();
    // Wait for this instance's writes in flight, so a read never returns bytes not yet fsynced.
    await this.#leases.cached(runId)?.flushing;
    let buffer: Buffer;
    try {
      buffer = await this.#brief(`reading ${this.#leases.fileOf(runId)}`, () =>
        readFile(this.#leases.fileOf(runId)),
      );
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    // A torn tail (or another process's write in flight) is not part of the log; the next
    // append cuts it off under the lock. The chain is checked on every read: resume refuses
    // a log that was tampered with.
    const parsed = parseLog(buffer, this.#leases.fileOf(runId), 0, chainStart(runId, this.#key));
    if (parsed.events.length === 0) throw emptyLog(this.#leases.fileOf(runId));
    return parsed.events;
  }

  /** A run's log in batches of `batchSize` events, read 256 KB at a time with a turn of the event loop between reads. */
  async *readBatches(runId: string, batchOptions: { batchSize?: number } = {}) {
    assertRunId(runId, "jsonlEventStore.readBatches");
    this.#checkOpen();
    const batchSize = checkBatchSize(batchOptions.batchSize, "jsonlEventStore.readBatches");
    await this.#leases.cached(runId)?.flushing;
    const file = this.#leases.fileOf(runId);
    const fd = await this.#leases.openHeld(file, constants.O_RDONLY, `reading ${file}`);
    if (fd === undefined) return;
    try {
      const cursor = chainStart(runId, this.#key);
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
      await this.#leases.closeHeld(fd);
    }
  }

  /** Checks a run's log end to end (lines, seq, chain, the head its summary file keeps); reports damage in the result. */
  async verify(runId: string): Promise<VerifyResult> {
    assertRunId(runId, "jsonlEventStore.verify");
    this.#checkOpen();
    await this.#leases.cached(runId)?.flushing;
    const file = this.#leases.fileOf(runId);
    let buffer: Buffer;
    try {
      buffer = await this.#brief(`reading ${file}`, () => readFile(file));
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
    const cursor = chainStart(runId, this.#key);
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
      saved = await this.#summaries.readSaved(runId);
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
    if (this.#key && keyedLog) {
      // With the key, the log must end where an authenticated record says it ends: a summary
      // whose MAC holds and that covers every event, or a run-end (its HMAC checked above).
      // Otherwise a log cut short with its summary deleted, emptied, replaced by an older
      // genuine one or rewritten to match would pass.
      const macHolds =
        typeof savedEvents === "number" &&
        typeof saved?.head === "string" &&
        saved.mac === summaryMac(this.#key, runId, savedEvents, saved.head);
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
    if (!this.#key && cursor.chained === true && !keyedLog) {
      // A plain chain where the store's records say the logs are keyed: a keyed log re-chained
      // without the key looks exactly like this, so only the key can tell.
      let marked = typeof saved?.mac === "string";
      if (!marked)
        marked = await stat(join(this.#dir, keyedMarker)).then(
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
    return verifiedLog(runId, events, last, this.#key, notes, cursor.chained === true);
  }

  /** The summaries of the directory's runs that match `filter`, 16 read at a time; a damaged run is listed as `unreadable`. */
  async list(filter: ListFilter = {}): Promise<RunSummary[]> {
    this.#checkOpen();
    validateFilter(filter);
    let names: string[];
    try {
      names = await this.#brief(`listing ${this.#dir}`, () => readdir(this.#dir));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const runIds = names
      .filter((name) => name.endsWith(JsonlRunLeases.logSuffix))
      .map((name) => name.slice(0, -JsonlRunLeases.logSuffix.length))
      .filter(isValidRunId);
    const summaries: RunSummary[] = [];
    let next = 0;
    const worker = async () => {
      while (next < runIds.length) {
        const runId = runIds[next]!;
        next += 1;
        let summary: RunSummary | undefined;
        try {
          summary = await this.#summaries.of(runId);
        } catch (error) {
          // One damaged log must not hide every other run: list it as unreadable, with why.
          const changed = await stat(this.#leases.fileOf(runId)).then(
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
  }
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
