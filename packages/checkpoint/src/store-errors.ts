/**
 * Errors of the JSONL and SQLite stores of `@loopguard/checkpoint`.
 */
import { LoopguardError } from "@loopguard/core";

/** A store was used after `close()`. */
export class StoreClosedError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.StoreClosedError";
  constructor(store: string) {
    super(
      "store_closed",
      `[checkpoint] this ${store} was closed; create a new store to read or write runs again`,
    );
  }
}

/** Another writer held a run's lock for longer than the store would wait. */
export class RunLockedError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.RunLockedError";
  readonly lockPath: string;
  constructor(lockPath: string, holder: string, waitedMs: number) {
    super(
      "run_locked",
      `[checkpoint] ${lockPath} is held by ${holder} and was not released within ${waitedMs} ms: another process is writing this run. If no loopguard process is running on that host, delete ${lockPath}`,
    );
    this.lockPath = lockPath;
  }
}

/** A write or fsync of a run's log failed: what reached the disk is unknown until a reopen. */
export class StoreWriteError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.StoreWriteError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("store_write_failed", message, options);
  }
}
