import {
  close as closeFd,
  constants,
  fdatasync,
  ftruncate,
  open as openFd,
  read as readFd,
  write as writeFd,
  writeFile as writeFileCallback,
} from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import { CorruptLogError } from "@loopguard/core";

/** How much of a log `readBatches` and a catch-up read at once. */
export const readChunkBytes = 1 << 18;

/**
 * The error for a log file that holds no complete event. Returned, not thrown: callers throw it
 * or quote its message. It carries `neverStarted: true`, so a caller that would start the run
 * anyway (a parent starting its child again) can tell it from a damaged log.
 */
export function emptyLog(file: string): CorruptLogError & { neverStarted: true } {
  const error = new CorruptLogError(
    `[checkpoint] ${file} holds no complete event: the run's first write never finished (a crash as it started, or the file was emptied), so nothing of it ran. Start the run again with the same id (its first append replaces the file), or delete the file`,
  );
  return Object.assign(error, { neverStarted: true as const });
}

/** Runs a step that opens and closes one descriptor under the store's budget (rejects with what the step rejects with). */
export type Brief = <T>(what: string, work: () => Promise<T>) => Promise<T>;

/**
 * Creates a store directory (0700) and fsyncs every directory `mkdir` created, from the parent of
 * the first one down; rejects with the file system's error.
 */
export async function createDirectory(dir: string, brief: Brief): Promise<void> {
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

/** Fsyncs a directory, so the names of files created in it are durable; rejects with the file system's error. */
export async function syncDirectory(directory: string, brief: Brief): Promise<void> {
  await brief(`syncing ${directory}`, async () => {
    const handle = await open(directory, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
}

/** `writeFile` (0600) through the callback API: no FileHandle to create and collect per summary; rejects with the file system's error. */
export function writeSmallFile(path: string, text: string): Promise<void> {
  return new Promise((resolve, reject) =>
    writeFileCallback(path, text, { mode: 0o600 }, (error) => (error ? reject(error) : resolve())),
  );
}

/** Writes all of `buffer` at `position`, going on after a short write; rejects with the file system's error. */
export async function writeFully(fd: number, buffer: Buffer, position: number): Promise<void> {
  // A short write (rare: a full disk, a signal) goes on from where it stopped.
  let offset = await logFiles.write(fd, buffer, 0, buffer.length, position);
  while (offset < buffer.length) {
    offset += await logFiles.write(fd, buffer, offset, buffer.length - offset, position + offset);
  }
}

/** Reads exactly `buffer.length` bytes at `position`; a `CorruptLogError` when the file is shorter (changed under the lock). */
export async function readFully(fd: number, buffer: Buffer, position: number): Promise<void> {
  const read = await readUpTo(fd, buffer, position);
  if (read < buffer.length)
    throw new CorruptLogError(
      `[checkpoint] a log shrank while it was read under its lock; something outside loopguard is changing it`,
    );
}

/** Reads up to `buffer.length` bytes at `position`, stopping at the end of the file; resolves with the count read. */
export async function readUpTo(fd: number, buffer: Buffer, position: number): Promise<number> {
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
