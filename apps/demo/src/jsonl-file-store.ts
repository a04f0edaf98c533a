import {
  appendFileSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import {
  AppendConflictError,
  type EventStore,
  filterSummaries,
  type RunSummary,
  type StoredEvent,
  summarize,
} from "@loopguard/core";

/**
 * A minimal JSONL event store for the CLI until `@loopguard/checkpoint`'s `jsonlEventStore`
 * lands: one file per run, appends fsynced before they resolve, the `expectedSeq` fence
 * checked against the file (single process per run; no cross-process lock).
 */
export function jsonlFileStore(dir: string): EventStore {
  mkdirSync(dir, { recursive: true });
  const fileOf = (runId: string) => join(dir, `${runId}.jsonl`);
  const readSync = (runId: string): StoredEvent[] => {
    const file = fileOf(runId);
    if (!existsSync(file)) return [];
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as StoredEvent);
  };
  return {
    name: "jsonl",
    async append(runId, events, options) {
      const existing = readSync(runId).length;
      if (existing !== options.expectedSeq)
        throw new AppendConflictError(runId, options.expectedSeq, existing);
      const lines = events
        .map((event, index) => `${JSON.stringify({ ...event, seq: existing + index })}\n`)
        .join("");
      const fd = openSync(fileOf(runId), "a");
      try {
        writeSync(fd, lines);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      return { nextSeq: existing + events.length };
    },
    async read(runId) {
      return readSync(runId);
    },
    async list(filter) {
      const summaries: RunSummary[] = readdirSync(dir)
        .filter((name) => name.endsWith(".jsonl"))
        .map((name) => {
          const runId = name.slice(0, -".jsonl".length);
          return summarize(undefined, runId, readSync(runId));
        });
      return filterSummaries(
        summaries.sort((a, b) => b.updatedAt - a.updatedAt),
        filter,
      );
    },
  };
}

/** Appends one JSON line to a file and fsyncs it (the ledger of the demo's outside world). */
export function appendJsonLine(file: string, value: unknown): void {
  appendFileSync(file, `${JSON.stringify(value)}\n`);
  const fd = openSync(file, "r+");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
