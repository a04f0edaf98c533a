import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { readFile, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { RunSummary } from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import { keyedMarker, summaryMac } from "./hash-chain.js";
import { type Brief, logFiles, readUpTo, writeSmallFile } from "./jsonl-files.js";
import { parseLog } from "./jsonl-log.js";
import type { RunLog } from "./jsonl-run-log.js";

/** The content of a `<runId>.summary.json` file. */
export interface SummaryFile {
  version: 1;
  /** The log bytes (complete lines) the summary covers. */
  bytes: number;
  summary: RunSummary;
  /** The chain value of the last event it covers (`summary.events` of them), when the log is chained. */
  head?: string;
  /** With a log key: `summaryMac` over the run id, the events and the head. */
  mac?: string;
}

/** What `JsonlSummaries` needs from the store that composes it. */
export interface JsonlSummariesSettings {
  /** The store's absolute directory. */
  dir: string;
  /** The key of the hash chain: summaries of keyed logs carry a MAC. */
  key: Buffer | undefined;
  /** Runs a step under the store's descriptor budget. */
  brief: Brief;
  /** The log file of a run. */
  fileOf: (runId: string) => string;
  /** What the store instance knows of a run, if anything. */
  cached: (runId: string) => RunLog | undefined;
}

/**
 * The summary concern of the JSONL store: `<runId>.summary.json` files, a cache of each run's
 * summary and chain head that `list` reads instead of the log. Written atomically (a temporary
 * file renamed), never fsynced, and checked against the log's size on read. Writing never
 * rejects (a failed write leaves the old file, and readers fall back to the log); reading a
 * summary rejects only as reading the log does (`CorruptLogError`, the file system's error).
 */
export class JsonlSummaries {
  readonly #dir: string;
  readonly #key: Buffer | undefined;
  readonly #brief: Brief;
  readonly #fileOf: (runId: string) => string;
  readonly #cached: (runId: string) => RunLog | undefined;
  #markedKeyed = false;

  constructor(settings: JsonlSummariesSettings) {
    this.#dir = settings.dir;
    this.#key = settings.key;
    this.#brief = settings.brief;
    this.#fileOf = settings.fileOf;
    this.#cached = settings.cached;
  }

  /** The summary file of a run. */
  fileOf(runId: string): string {
    return join(this.#dir, `${runId}.summary.json`);
  }

  /** Reads a run's summary file as it is (unchecked); rejects when it is missing or not JSON. */
  async readSaved(runId: string): Promise<SummaryFile> {
    return JSON.parse(
      await this.#brief("reading a summary", () => readFile(this.fileOf(runId), "utf8")),
    );
  }

  /** Rewrites a run's summary file (derived data: written atomically, never fsynced, checked on read). */
  async write(log: RunLog): Promise<void> {
    if (!log.summary || log.summaryBytes === log.size) return;
    const key = this.#key;
    const head = log.cursor.chained && log.cursor.head ? log.cursor.head : undefined;
    const content: SummaryFile = {
      version: 1,
      bytes: log.size,
      summary: log.summary,
      ...(head ? { head } : {}),
      ...(head && key ? { mac: summaryMac(key, log.runId, log.summary.events, head) } : {}),
    };
    if (key && !this.#markedKeyed) {
      // The directory says its logs are keyed, so verify without the key never calls one
      // re-chained with plain SHA-256 intact (while the marker stays).
      this.#markedKeyed = true;
      await writeSmallFile(join(this.#dir, keyedMarker), "hmac\n").catch(() => {
        this.#markedKeyed = false;
      });
    }
    const target = this.fileOf(log.runId);
    const temporary = `${target}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await this.#brief(`writing ${temporary}`, () =>
        writeSmallFile(temporary, JSON.stringify(content)),
      );
      await rename(temporary, target);
      log.summaryBytes = log.size;
      log.summaryWrittenAt = Date.now();
    } catch {
      // A summary file is a cache: list() reads the log when it is missing or behind.
      await unlink(temporary).catch(() => undefined);
    }
  }

  /** The summary of a run from memory, its summary file, or its log (only the part the summary file does not cover). */
  async of(runId: string): Promise<RunSummary | undefined> {
    const file = this.#fileOf(runId);
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const log = this.#cached(runId);
    if (log?.summary && log.size === size && !log.flushing) return log.summary;
    let base: { bytes: number; summary: RunSummary | undefined } = { bytes: 0, summary: undefined };
    try {
      const saved = await this.readSaved(runId);
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
    const read = await this.#brief(`reading ${file}`, async () => {
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
  }
}
