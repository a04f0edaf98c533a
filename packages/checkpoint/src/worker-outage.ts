import { PostgresStoreError } from "./postgres-errors.js";
import type { WorkerStatus } from "./worker-types.js";

/** What a `WorkerOutage` needs from the worker that composes it. */
export interface WorkerOutageSettings {
  workerId: string;
  /** The database as error messages name it (host and database, never the password). */
  target: string;
  pollingIntervalMs: number;
  maxBackoffMs: number;
  /** Reports a status change (never throws). */
  status: (news: WorkerStatus) => void;
  /** Reports an error (never throws). */
  reportError: (error: unknown, at: string) => void;
  /** Waits `ms`, or less when the worker stops. */
  idle: (ms: number) => Promise<void>;
}

/**
 * The outage concern of a worker: while the database is unreachable every polling loop waits
 * out one shared backoff (from `pollingIntervalMs`, doubling up to `maxBackoffMs`), reported
 * once per attempt through `onStatus` and `onError`; when it is back, `onStatus` hears once.
 * Never throws.
 */
export class WorkerOutage {
  readonly #settings: WorkerOutageSettings;
  /** The database is down: since when, how many attempts failed, and the wait all loops share. */
  #outage: { since: number; failures: number; wait: Promise<void> | undefined } | undefined;

  constructor(settings: WorkerOutageSettings) {
    this.#settings = settings;
  }

  /** The backoff in progress, which every loop waits out; undefined when there is none. */
  get wait(): Promise<void> | undefined {
    return this.#outage?.wait;
  }

  /** One failed attempt: every loop waits out one shared backoff, reported once. */
  async unreachable(error: unknown): Promise<void> {
    if (this.#outage?.wait) return this.#outage.wait;
    const { workerId, target, pollingIntervalMs, maxBackoffMs } = this.#settings;
    this.#outage ??= { since: Date.now(), failures: 0, wait: undefined };
    const current = this.#outage;
    current.failures += 1;
    const retryInMs = Math.min(maxBackoffMs, pollingIntervalMs * 2 ** (current.failures - 1));
    const message = error instanceof Error ? error.message : String(error);
    this.#settings.status({
      type: "database-unreachable",
      workerId,
      error: message,
      failures: current.failures,
      retryInMs,
      downForMs: Date.now() - current.since,
    });
    this.#settings.reportError(
      new PostgresStoreError(
        `[checkpoint] worker ${workerId}: database unreachable (${target}: ${message}); ${current.failures} attempt(s) failed, retrying in ${retryInMs} ms. Slices in flight fail and their jobs are retried once the database is back`,
        { cause: error },
      ),
      "database",
    );
    current.wait = this.#settings.idle(retryInMs).then(() => {
      current.wait = undefined;
    });
    return current.wait;
  }

  /** An attempt succeeded: ends the outage, if any, and says so once. */
  reachable(): void {
    if (!this.#outage) return;
    const downForMs = Date.now() - this.#outage.since;
    this.#outage = undefined;
    this.#settings.status({
      type: "database-reachable",
      workerId: this.#settings.workerId,
      downForMs,
    });
  }
}
