import { CorruptLogError } from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import { logFiles, readChunkBytes, readFully, writeFully } from "./jsonl-files.js";
import { parseLog } from "./jsonl-log.js";
import type { RunLog } from "./jsonl-run-log.js";

/**
 * Reads what other writers appended to a run's log since this instance last looked, under the
 * run's lock, and brings `log` (size, seq, summary, chain) up to date; cuts off a torn tail and
 * completes a whole last line that lacks its newline, then fdatasyncs what it found.
 * Rejects with `CorruptLogError` when the file shrank or a line is damaged, or with the file
 * system's error.
 */
export async function catchUp(log: RunLog, fd: number, fileSize: number): Promise<void> {
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
}
