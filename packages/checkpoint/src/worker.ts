import { randomBytes } from "node:crypto";
import { type Agent, type EventStore, InvalidArgumentError, type RunResult } from "@loopguard/core";
import { type PostgresEventStore, postgresEventStore } from "./postgres-event-store.js";
import { describeTarget, type PgPool } from "./postgres-pool.js";
import { WorkerPolling } from "./worker-polling.js";
import {
  jobSettings,
  openQueue,
  type QueueClient,
  type ResolvedQueueOptions,
  type RunQueueOptions,
  resolveQueueOptions,
} from "./worker-queue.js";
import { WorkerSliceRunner } from "./worker-slice-runner.js";
import { checkTenantConcurrency, tenantSlots } from "./worker-tenant-slots.js";

/** Options of `createWorker`. */
export interface WorkerOptions extends RunQueueOptions {
  /** The PostgreSQL store (its pool carries the queue too), or pass `connectionString`. */
  store?: PostgresEventStore;
  /** Opens a store on this database (and closes it on `stop()`). */
  connectionString?: string;
  /** The store's schema when opened from `connectionString`. Default `loopguard`. */
  schema?: string;
  /**
   * Makes the agent that advances one slice of a run, given the store view it must use (fenced
   * to the run and the worker's claim) and which run and claim it is for (to load per-run state
   * such as a PII vault). Called once per slice; may be async; keep it cheap.
   */
  agent: AgentFactory;
  /** Slices run at once in this process. Default 4. */
  concurrency?: number;
  /**
   * At most this many runs of one tenant (`submitRun({ tenant })`) advanced at once across every
   * worker of the database (a number, or a function of the tenant). A job over its tenant's cap
   * goes back to the queue for a second while this worker takes other jobs. Default: no cap.
   */
  tenantConcurrency?: number | ((tenant: string) => number);
  /** How long one job advances a run before it pauses at a step boundary and re-queues it. Default 5 000 ms. */
  sliceMs?: number;
  /** How often an idle worker asks for a job. Default 2 000 ms (pg-boss's minimum is 500). */
  pollingIntervalMs?: number;
  /** How often pg-boss looks for expired leases. Default 5 000 ms (at least 1 000). */
  maintenanceIntervalMs?: number;
  /** A name for diagnostics. Default `worker-<random>`. */
  id?: string;
  /** Hears about every slice (for logs and metrics); errors in it are ignored. */
  onSlice?: (report: SliceReport) => void;
  /** Receives errors of the queue, the store and slices; they never stop the worker. */
  onError?: (error: unknown, where: string) => void;
  /**
   * Hears when the database becomes unreachable (then again at each retry, on a backoff from
   * `pollingIntervalMs` doubling up to `maxBackoffMs`) and when it is back. The same news also
   * reaches `onError` (where `database`) while it is down.
   */
  onStatus?: (status: WorkerStatus) => void;
  /** The longest wait between two attempts to reach a database that is down. Default 30 000 ms. */
  maxBackoffMs?: number;
}

/** What `onStatus` hears: the database went away (at each retry), or came back. */
export type WorkerStatus =
  | {
      type: "database-unreachable";
      workerId: string;
      /** The error of the last attempt. */
      error: string;
      /** Attempts that failed in a row. */
      failures: number;
      /** When the next attempt is made. */
      retryInMs: number;
      /** Since the first failure. */
      downForMs: number;
    }
  | { type: "database-reachable"; workerId: string; downForMs: number };

/** Which run and claim an agent is made for (the second argument of an agent factory). */
export interface SliceContext {
  /** The run the agent will start, resume or answer. */
  runId: string;
  /** The fencing epoch of the claim the store view is bound to. */
  epoch: number;
  /** The worker's id, or `approveQueuedRun` when an approval is recorded. */
  workerId: string;
}

/**
 * Makes the agent of one slice (or of one `approveQueuedRun`), on the store view it must write
 * through. It may return a promise (e.g. after loading the run's vault).
 */
export type AgentFactory = (store: EventStore, slice: SliceContext) => Agent | Promise<Agent>;

/** What one slice of a run did. */
export interface SliceReport {
  workerId: string;
  runId: string;
  jobId: string;
  epoch: number;
  /**
   * `paused` (re-queued), `parked` (awaiting approval; the job is done until someone answers),
   * `ended` (the run has its run-end), `fenced` (another worker claimed the run: this one wrote
   * nothing more and left the job alone), `conflict` (another writer appended: re-queued),
   * `failed` (the slice failed; pg-boss retries the job), `skipped` (a job for a run with no log and no task).
   */
  outcome:
    | "paused"
    | "parked"
    | "ended"
    | "fenced"
    | "conflict"
    | "failed"
    | "skipped"
    | "deferred";
  status?: RunResult["status"];
  startedAt: number;
  durationMs: number;
  error?: string;
}

/** A worker: advances runs queued on pg-boss, one slice at a time. */
export interface Worker {
  readonly id: string;
  /** Starts polling for jobs (resolves once the queue is ready). */
  start(): Promise<void>;
  /** Stops taking jobs and waits for slices in flight (each ends within `sliceMs` plus one step). */
  stop(): Promise<void>;
  /** The store the worker writes through (its pool also carries the queue). */
  readonly store: PostgresEventStore;
}

/**
 * Creates a worker that advances runs queued with `submitRun`, on pg-boss 10 over the same
 * PostgreSQL database as the event store. Each job claims its run (raising the run's fencing
 * epoch), advances it for `sliceMs` through an agent bound to that epoch, then re-queues it,
 * parks it (awaiting approval) or finishes it, in one transaction that first checks the
 * claim still stands. A worker that lost its claim (paused past its lease, partitioned) can
 * never append again: its writes are refused with `FencedError`.
 *
 * @example
 * const worker = createWorker({
 *   connectionString: process.env.DATABASE_URL,
 *   agent: (store) => createAgent({ model: claudeModel(), tools, store, approval: { durable: true } }),
 *   concurrency: 4, sliceMs: 5_000, leaseMs: 30_000,
 * });
 * await worker.start();
 * process.on("SIGTERM", () => worker.stop());
 */
export function createWorker(options: WorkerOptions): Worker {
  const where = "createWorker";
  const checked = checkWorkerOptions(options, where);
  const { concurrency, sliceMs, pollingIntervalMs, maintenanceIntervalMs, maxBackoffMs } = checked;
  const ownsStore = options.store === undefined;
  const store =
    options.store ??
    postgresEventStore({
      connectionString: options.connectionString!,
      schema: options.schema ?? "loopguard",
      max: concurrency * 2 + 2,
      // Idle connections lost (a restart) are reported, never thrown.
      onError: (error) => reportError(error, "database connection"),
    });
  if (
    options.store !== undefined &&
    options.schema !== undefined &&
    options.schema !== options.store.schema
  ) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: schema ${JSON.stringify(options.schema)} differs from the store's schema ${JSON.stringify(options.store.schema)}; leave schema out when you pass a store`,
    );
  }
  const settings = resolveQueueOptions(options, store.schema, where);
  if (sliceMs * 2 > settings.leaseMs) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: sliceMs (${sliceMs}) must be at most half of leaseMs (${settings.leaseMs}), so a healthy worker always finishes a slice, and its longest step, before its lease expires`,
    );
  }
  const id = options.id ?? `worker-${randomBytes(4).toString("hex")}`;
  const reportError = (error: unknown, at: string) => {
    try {
      options.onError?.(error, at);
    } catch {
      // The error hook failed too: nowhere left to report.
    }
  };
  const polling = new WorkerPolling({
    workerId: id,
    queue: settings.queue,
    target: options.connectionString
      ? describeTarget(options.connectionString)
      : `schema ${store.schema}`,
    pollingIntervalMs,
    maxBackoffMs,
    reportError,
    status: (news) => {
      try {
        options.onStatus?.(news);
      } catch (error) {
        reportError(error, "onStatus");
      }
    },
  });
  const report = (slice: SliceReport) => {
    try {
      options.onSlice?.(slice);
    } catch (error) {
      reportError(error, "onSlice");
    }
  };

  let starting: Promise<void> | undefined;
  let stopQueue: (() => Promise<unknown>) | undefined;
  return {
    id,
    store,
    start() {
      starting ??= (async () => {
        const pool: PgPool = await store.pool();
        const boss: QueueClient = await openQueue(
          pool,
          settings,
          {
            supervise: true,
            maintenanceIntervalMs,
            onError: (error) => reportError(error, "pg-boss"),
          },
          where,
        );
        stopQueue = () => boss.stop({ graceful: false, close: false, wait: true });
        await adoptQueueLease(boss, settings, id, reportError);
        const slots = checked.tenantLimit
          ? await tenantSlots(pool, store.schema, checked.tenantLimit, settings.leaseMs)
          : undefined;
        const runner = new WorkerSliceRunner({
          workerId: id,
          where,
          store,
          pool,
          boss,
          queue: settings,
          slots,
          sliceMs,
          agent: options.agent,
          reportError,
          report,
        });
        polling.start(concurrency, boss, pool, (job) => runner.run(job));
      })();
      return starting;
    },
    async stop() {
      if (!starting) {
        if (ownsStore) await store.close();
        return;
      }
      await starting.catch(() => undefined);
      await polling.stop();
      await stopQueue?.().catch((error: unknown) => reportError(error, "pg-boss stop"));
      if (ownsStore) await store.close();
    },
  };
}

/** Checks the options `createWorker` needs before it opens anything, and fills in defaults. */
function checkWorkerOptions(options: WorkerOptions, where: string) {
  if (!options || typeof options !== "object")
    throw new InvalidArgumentError(
      `[checkpoint] ${where}(options): pass { connectionString | store, agent: (store) => createAgent({ ..., store }) }`,
    );
  if (typeof options.agent !== "function") {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: agent must be a function (store) => Agent that builds the agent with the store it is given`,
    );
  }
  if ((options.store === undefined) === (options.connectionString === undefined)) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: pass exactly one of store (a postgresEventStore) and connectionString`,
    );
  }
  if (
    options.store !== undefined &&
    (typeof options.store.claim !== "function" || typeof options.store.fenced !== "function")
  ) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: store must be a postgresEventStore (workers need its fencing epochs)`,
    );
  }
  for (const hook of ["onError", "onSlice", "onStatus"] as const) {
    if (options[hook] !== undefined && typeof options[hook] !== "function")
      throw new InvalidArgumentError(
        `[checkpoint] ${where}: ${hook} must be a function, got ${typeof options[hook]}`,
      );
  }
  if (options.id !== undefined && (typeof options.id !== "string" || options.id.trim() === ""))
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: id must be a non-empty string naming this worker in reports, or left out for a random one`,
    );
  const concurrency = options.concurrency ?? 4;
  const sliceMs = options.sliceMs ?? 5_000;
  const pollingIntervalMs = options.pollingIntervalMs ?? 2_000;
  const maintenanceIntervalMs = options.maintenanceIntervalMs ?? 5_000;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  const positiveInteger = (name: string, value: number, min: number) => {
    if (!Number.isInteger(value) || value < min)
      throw new InvalidArgumentError(
        `[checkpoint] ${where}: ${name} must be an integer of at least ${min}, got ${JSON.stringify(value)}`,
      );
  };
  positiveInteger("concurrency", concurrency, 1);
  const tenantLimit = checkTenantConcurrency(options.tenantConcurrency, where);
  positiveInteger("sliceMs", sliceMs, 1);
  positiveInteger("pollingIntervalMs", pollingIntervalMs, 500);
  positiveInteger("maintenanceIntervalMs", maintenanceIntervalMs, 1_000);
  positiveInteger("maxBackoffMs", maxBackoffMs, pollingIntervalMs);
  return {
    concurrency,
    sliceMs,
    pollingIntervalMs,
    maintenanceIntervalMs,
    maxBackoffMs,
    tenantLimit,
  };
}

/**
 * Makes this worker's lease the queue's, so jobs sent without one (by `submitRun`,
 * `approveQueuedRun`) run their first slice under it too. A queue that had another lease means
 * another worker set it: reported, since every worker of a queue should share one leaseMs.
 */
async function adoptQueueLease(
  boss: QueueClient,
  settings: ResolvedQueueOptions,
  id: string,
  reportError: (error: unknown, at: string) => void,
): Promise<void> {
  const seconds = settings.leaseMs / 1000;
  const queue = await boss.getQueue?.(settings.queue);
  const previous = queue?.expireInSeconds == null ? undefined : Number(queue.expireInSeconds);
  if (previous === seconds) return;
  await boss.updateQueue(settings.queue, { policy: "stately", ...jobSettings(settings) });
  if (previous !== undefined)
    reportError(
      new InvalidArgumentError(
        `[checkpoint] worker ${id}: queue ${settings.queue} had a lease of ${previous} s, now ${seconds} s (this worker's leaseMs). Run every worker of a queue with the same leaseMs: the last one started sets the lease of new jobs, and each worker holds the jobs it takes to its own`,
      ),
      "lease",
    );
}
