/**
 * Errors of the PostgreSQL store and the workers of `@loopguard/checkpoint`.
 */
import { AppendConflictError, LoopguardError } from "@loopguard/core";

/**
 * A writer whose claim on a run was taken over appended to it: its epoch is older than the
 * run's. The writer (a paused or partitioned "zombie" worker) must stop advancing the run.
 */
export class FencedError extends AppendConflictError {
  static override readonly marker: string = "loopguard.error.FencedError";
  /** The epoch the writer holds. */
  readonly epoch: number;
  /** The run's epoch in the store. */
  readonly currentEpoch: number;
  constructor(
    runId: string,
    epoch: number,
    currentEpoch: number,
    expectedSeq: number,
    actualSeq: number,
  ) {
    super(runId, expectedSeq, actualSeq, {
      code: "fenced",
      message: `[checkpoint] append to run ${runId} refused: this writer holds epoch ${epoch} but the run was claimed again (epoch ${currentEpoch}); another worker owns the run now, so stop advancing it`,
    });
    this.epoch = epoch;
    this.currentEpoch = currentEpoch;
  }
}

/** PostgreSQL failed or refused a statement the store needs (connection, permissions, schema). */
export class PostgresStoreError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.PostgresStoreError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("postgres_store_error", message, options);
  }
}
