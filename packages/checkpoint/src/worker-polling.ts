import { isConnectionError, type PgPool } from "./postgres-pool.js";
import { WorkerOutage, type WorkerOutageSettings } from "./worker-outage.js";
import type { QueueClient, QueueJob } from "./worker-queue.js";

/** What `WorkerPolling` needs from the worker that composes it. */
export interface WorkerPollingSettings extends Omit<WorkerOutageSettings, "idle"> {
  /** The pg-boss queue name. */
  queue: string;
}

/**
 * The polling concern of a worker: `concurrency` loops, each fetching one job at a time (through
 * a query that keeps database errors, which pg-boss's fetch would swallow) and handing it to the
 * slice runner; an idle loop sleeps `pollingIntervalMs`, and while the database is unreachable
 * every loop waits out one shared backoff (`WorkerOutage`). Never rejects: errors go to
 * `reportError`.
 */
export class WorkerPolling {
  readonly #settings: WorkerPollingSettings;
  readonly #outage: WorkerOutage;
  readonly #sleepers = new Set<() => void>();
  #running = false;
  #loops: Promise<void>[] = [];

  constructor(settings: WorkerPollingSettings) {
    this.#settings = settings;
    this.#outage = new WorkerOutage({ ...settings, idle: (ms) => this.#idle(ms) });
  }

  /** Starts `concurrency` loops that run each job they fetch through `runSlice`. */
  start(
    concurrency: number,
    boss: QueueClient,
    pool: PgPool,
    runSlice: (job: QueueJob) => Promise<void>,
  ): void {
    this.#running = true;
    this.#loops = Array.from({ length: concurrency }, () => this.#loop(boss, pool, runSlice));
  }

  /** Stops taking jobs, wakes sleeping loops, and waits for slices in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    for (const wake of [...this.#sleepers]) wake();
    await Promise.all(this.#loops);
  }

  #idle(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#sleepers.add(wake);
    });
  }

  async #loop(
    boss: QueueClient,
    pool: PgPool,
    runSlice: (job: QueueJob) => Promise<void>,
  ): Promise<void> {
    const outage = this.#outage;
    while (this.#running) {
      if (outage.wait) {
        await outage.wait;
        continue;
      }
      let jobs: QueueJob[] = [];
      try {
        // pg-boss's fetch swallows every error of its query (it expects only unique
        // violations), so a database that is down would look like an empty queue: the query
        // goes through this db, which keeps the error.
        let failed: { error: unknown } | undefined;
        const db = {
          executeSql: (text: string, values: unknown[]) =>
            pool.query(text, values).catch((error: unknown) => {
              failed = { error };
              throw error;
            }),
        };
        // With its times (created, started), for the run's queue wait.
        jobs = await boss.fetch(this.#settings.queue, { batchSize: 1, includeMetadata: true, db });
        if (failed) throw failed.error;
        outage.reachable();
      } catch (error) {
        if (isConnectionError(error)) {
          await outage.unreachable(error);
          continue;
        }
        this.#settings.reportError(error, "fetch");
      }
      const job = jobs[0];
      if (!job) {
        if (this.#running) await this.#idle(this.#settings.pollingIntervalMs);
        continue;
      }
      await runSlice(job);
    }
  }
}
