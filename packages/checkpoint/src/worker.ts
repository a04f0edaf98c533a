import { randomBytes } from "node:crypto";
import { InvalidArgumentError } from "@loopguard/core";
import { postgresEventStore } from "./postgres-event-store.js";
import { describeTarget, type PgPool } from "./postgres-pool.js";
import { WorkerPolling } from "./worker-polling.js";
import {
  jobSettings,
  openQueue,
  type QueueClient,
  type ResolvedQueueOptions,
  resolveQueueOptions,
} from "./worker-queue.js";
import { WorkerSliceRunner } from "./worker-slice-runner.js";
import { checkTenantConcurrency, tenantSlots } from "./worker-tenant-slots.js";

import type { SliceReport, Worker, WorkerOptions } from "./worker-types.js";

export type {
  AgentFactory,
  SliceContext,
  SliceReport,
  Worker,
  WorkerOptions,
  WorkerStatus,
} from "./worker-types.js";

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
