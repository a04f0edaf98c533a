import { randomBytes } from "node:crypto";
import {
  type Agent,
  AppendConflictError,
  type EventStore,
  InvalidArgumentError,
  LoopguardError,
  type RunResult,
  type StoredEvent,
} from "@loopguard/core";
import { type FencedError, PostgresStoreError } from "./postgres-errors.js";
import {
  type FencedEventStore,
  type PostgresEventStore,
  postgresEventStore,
} from "./postgres-event-store.js";
import { describeTarget, inTransaction, isConnectionError, type PgPool } from "./postgres-pool.js";
import {
  jobSettings,
  openQueue,
  type QueueClient,
  type QueueJob,
  queueDb,
  type RunJobData,
  type RunQueueOptions,
  resolveQueueOptions,
} from "./worker-queue.js";
import {
  checkTenantConcurrency,
  deferJob,
  type TenantSlots,
  tenantSlots,
} from "./worker-tenant-slots.js";

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
  const status = (news: WorkerStatus) => {
    try {
      options.onStatus?.(news);
    } catch (error) {
      reportError(error, "onStatus");
    }
  };
  const report = (slice: SliceReport) => {
    try {
      options.onSlice?.(slice);
    } catch (error) {
      reportError(error, "onSlice");
    }
  };

  let boss: QueueClient | undefined;
  let pool: PgPool | undefined;
  let slots: TenantSlots | undefined;
  let running = false;
  let loops: Promise<void>[] = [];
  const sleepers = new Set<() => void>();

  const idle = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      sleepers.add(wake);
    });

  /** Ends a job under the claim: nothing happens unless `epoch` is still the run's epoch. */
  async function settle(
    job: QueueJob,
    runId: string,
    epoch: number,
    action: "complete" | "continue" | "fail",
    data: RunJobData,
    detail: object,
  ): Promise<boolean> {
    return inTransaction(
      pool!,
      async (client, rows) => {
        if (Number(rows[0]?.epoch ?? 0) !== epoch) return false;
        const db = queueDb(client);
        if (action === "fail") {
          await boss!.fail(settings.queue, job.id, detail, { db });
          return true;
        }
        await boss!.complete(settings.queue, job.id, detail, { db });
        if (action === "continue") {
          const { task: _task, ...next } = data;
          await boss!.send(settings.queue, next, {
            ...jobSettings(settings),
            singletonKey: runId,
            ...(typeof data.priority === "number" ? { priority: data.priority } : {}),
            db,
          });
        }
        return true;
      },
      // BEGIN and the check in one round trip (a simple query: no parameters, so the run id,
      // checked by assertRunId to letters, digits and _.:-, is written in as a literal).
      // FOR SHARE makes a concurrent claim (an UPDATE of this row) wait for this transaction.
      `BEGIN; SELECT epoch FROM "${store.schema}".runs WHERE run_id = '${runId}' FOR SHARE`,
    );
  }

  /**
   * Makes this worker's lease the queue's, so jobs sent without one (by `submitRun`,
   * `approveQueuedRun`) run their first slice under it too. A queue that had another lease means
   * another worker set it: reported, since every worker of a queue should share one leaseMs.
   */
  async function adoptQueueLease(): Promise<void> {
    const seconds = settings.leaseMs / 1000;
    const queue = await boss!.getQueue?.(settings.queue);
    const previous = queue?.expireInSeconds == null ? undefined : Number(queue.expireInSeconds);
    if (previous === seconds) return;
    await boss!.updateQueue(settings.queue, { policy: "stately", ...jobSettings(settings) });
    if (previous !== undefined)
      reportError(
        new InvalidArgumentError(
          `[checkpoint] worker ${id}: queue ${settings.queue} had a lease of ${previous} s, now ${seconds} s (this worker's leaseMs). Run every worker of a queue with the same leaseMs: the last one started sets the lease of new jobs, and each worker holds the jobs it takes to its own`,
        ),
        "lease",
      );
  }

  /** Holds a job to this worker's lease when it was sent with another (before the queue had ours). */
  async function holdToLease(job: QueueJob): Promise<void> {
    const seconds = settings.leaseMs / 1000;
    if (job.expireInSeconds === undefined || Number(job.expireInSeconds) === seconds) return;
    await pool!.query(
      `UPDATE "${settings.bossSchema}".job SET expire_in = $3 * interval '1 second' WHERE name = $1 AND id = $2 AND state = 'active'`,
      [settings.queue, job.id, seconds],
    );
  }

  async function runSlice(job: QueueJob): Promise<void> {
    const startedAt = Date.now();
    const data = readJobData(job.data);
    if (!data) {
      reportError(
        new InvalidArgumentError(
          `[checkpoint] job ${job.id} of queue ${settings.queue} has no runId; it was not sent by submitRun`,
        ),
        "job",
      );
      await boss!
        .fail(settings.queue, job.id, { error: "no runId" })
        .catch((error: unknown) => reportError(error, "queue"));
      return;
    }
    const { runId } = data;
    let epoch = 0;
    const tenant = slots && typeof data.tenant === "string" ? data.tenant : undefined;
    let slotHeld = false;
    const finish = (outcome: SliceReport["outcome"], extra: Partial<SliceReport> = {}) => {
      if (slotHeld)
        slots!
          .release(tenant!, runId, id)
          .catch((error: unknown) => reportError(error, `tenant slot of run ${runId}`));
      report({
        workerId: id,
        runId,
        jobId: job.id,
        epoch,
        outcome,
        startedAt,
        durationMs: Date.now() - startedAt,
        ...extra,
      });
    };
    if (tenant !== undefined) {
      try {
        slotHeld = await slots!.acquire(tenant, runId, id);
        // Its next wait at the cap starts again from a short backoff.
        if (slotHeld) delete data.deferrals;
        if (!slotHeld) {
          // The tenant is at its cap: the run waits in the queue, this worker takes other jobs.
          await deferJob(boss!, pool!, settings, job, data, 4);
          finish("deferred");
          return;
        }
      } catch (error) {
        // Left active, the job is retried when its lease expires: the run is not lost.
        reportError(error, `tenant slot of run ${runId}`);
        finish("failed", { error: error instanceof Error ? error.message : String(error) });
        return;
      }
    }
    let view: TrackedStore | undefined;
    const pause = new AbortController();
    const timer = setTimeout(() => pause.abort(), sliceMs);
    let result: RunResult | undefined;
    let thrown: unknown;
    try {
      await holdToLease(job);
      // One round trip claims the run and reads its log; the agent's own read of the log
      // (on resume) is served from it.
      const claimed = await store.claimAndRead(runId);
      epoch = claimed.epoch;
      const events = claimed.events;
      view = trackStore(store.fenced(runId, epoch), events);
      const agent = await options.agent(view, { runId, epoch, workerId: id });
      if (!agent || typeof agent.resume !== "function")
        throw new InvalidArgumentError(
          `[checkpoint] ${where}: the agent factory must return an agent made with createAgent`,
        );
      if (events.length === 0) {
        if (data.task === undefined) {
          await settle(job, runId, epoch, "complete", data, { outcome: "skipped" });
          finish("skipped", { error: `run ${runId} has no log and its job carries no task` });
          return;
        }
        result = await agent.run(data.task, {
          runId,
          pauseSignal: pause.signal,
          ...(data.context ? { context: data.context } : {}),
        });
      } else {
        result = await agent.resume(runId, { pauseSignal: pause.signal });
      }
    } catch (error) {
      thrown = error;
    } finally {
      clearTimeout(timer);
    }
    try {
      if (view?.fenced || isFenced(thrown)) {
        // Another worker owns the run now: touch neither the log nor the job.
        finish("fenced", { error: (view?.fenced ?? (thrown as Error)).message });
        return;
      }
      if (thrown !== undefined || !result) {
        reportError(thrown, `slice of run ${runId}`);
        const message = thrown instanceof Error ? thrown.message : String(thrown);
        if (epoch > 0 && !(await settle(job, runId, epoch, "fail", data, { error: message }))) {
          finish("fenced", { error: message });
          return;
        }
        finish("failed", { error: message });
        return;
      }
      if (result.why === "run_budget_unavailable" && !view?.ended) {
        // A run budget's store is down: the run took no step. It waits in the queue on a
        // backoff (up to 30 s) instead of coming straight back to a store that fails.
        await deferJob(boss!, pool!, settings, job, data, 30);
        finish("deferred", {
          status: result.status,
          ...(result.error ? { error: result.error } : {}),
        });
        return;
      }
      let outcome: SliceReport["outcome"];
      let action: "complete" | "continue" | "fail";
      let error: string | undefined;
      if (view?.ended) {
        [outcome, action] = ["ended", "complete"];
      } else if (result.status === "awaiting_approval") {
        [outcome, action] = ["parked", "complete"];
      } else if (view?.conflict) {
        [outcome, action, error] = ["conflict", "continue", view.conflict.message];
      } else if (result.status === "running") {
        [outcome, action] = ["paused", "continue"];
      } else {
        // The run stopped without a run-end (the store failed under it): let pg-boss retry.
        [outcome, action, error] = [
          "failed",
          "fail",
          result.error ?? `run ${runId} stopped as ${result.status} without a run-end`,
        ];
      }
      const settled = await settle(job, runId, epoch, action, data, {
        outcome,
        status: result.status,
        ...(error ? { error } : {}),
      });
      if (!settled)
        finish("fenced", {
          status: result.status,
          error: `run ${runId} was claimed by another worker before this slice settled`,
        });
      else finish(outcome, { status: result.status, ...(error ? { error } : {}) });
    } catch (error) {
      reportError(error, `settling job ${job.id} of run ${runId}`);
      finish("failed", { error: error instanceof Error ? error.message : String(error) });
    }
  }

  /** The database is down: since when, how many attempts failed, and the wait all loops share. */
  let outage: { since: number; failures: number; wait: Promise<void> | undefined } | undefined;
  const target = options.connectionString
    ? describeTarget(options.connectionString)
    : `schema ${store.schema}`;

  /** One failed attempt: every loop waits out one shared backoff, reported once. */
  async function unreachable(error: unknown): Promise<void> {
    if (outage?.wait) return outage.wait;
    outage ??= { since: Date.now(), failures: 0, wait: undefined };
    const current = outage;
    current.failures += 1;
    const retryInMs = Math.min(maxBackoffMs, pollingIntervalMs * 2 ** (current.failures - 1));
    const message = error instanceof Error ? error.message : String(error);
    status({
      type: "database-unreachable",
      workerId: id,
      error: message,
      failures: current.failures,
      retryInMs,
      downForMs: Date.now() - current.since,
    });
    reportError(
      new PostgresStoreError(
        `[checkpoint] worker ${id}: database unreachable (${target}: ${message}); ${current.failures} attempt(s) failed, retrying in ${retryInMs} ms. Slices in flight fail and their jobs are retried once the database is back`,
        { cause: error },
      ),
      "database",
    );
    current.wait = idle(retryInMs).then(() => {
      current.wait = undefined;
    });
    return current.wait;
  }

  function reachable(): void {
    if (!outage) return;
    const downForMs = Date.now() - outage.since;
    outage = undefined;
    status({ type: "database-reachable", workerId: id, downForMs });
  }

  async function loop(): Promise<void> {
    while (running) {
      if (outage?.wait) {
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
            pool!.query(text, values).catch((error: unknown) => {
              failed = { error };
              throw error;
            }),
        };
        jobs = await boss!.fetch(settings.queue, { batchSize: 1, db });
        if (failed) throw failed.error;
        reachable();
      } catch (error) {
        if (isConnectionError(error)) {
          await unreachable(error);
          continue;
        }
        reportError(error, "fetch");
      }
      const job = jobs[0];
      if (!job) {
        if (running) await idle(pollingIntervalMs);
        continue;
      }
      await runSlice(job);
    }
  }

  let starting: Promise<void> | undefined;
  return {
    id,
    store,
    start() {
      starting ??= (async () => {
        pool = await store.pool();
        boss = await openQueue(
          pool,
          settings,
          {
            supervise: true,
            maintenanceIntervalMs,
            onError: (error) => reportError(error, "pg-boss"),
          },
          where,
        );
        await adoptQueueLease();
        if (tenantLimit)
          slots = await tenantSlots(pool, store.schema, tenantLimit, settings.leaseMs);
        running = true;
        loops = Array.from({ length: concurrency }, () => loop());
      })();
      return starting;
    },
    async stop() {
      if (!starting) {
        if (ownsStore) await store.close();
        return;
      }
      await starting.catch(() => undefined);
      running = false;
      for (const wake of [...sleepers]) wake();
      await Promise.all(loops);
      await boss
        ?.stop({ graceful: false, close: false, wait: true })
        .catch((error: unknown) => reportError(error, "pg-boss stop"));
      if (ownsStore) await store.close();
    },
  };
}

/** Whether `error` is a FencedError, from any copy of the package. */
function isFenced(error: unknown): boolean {
  return LoopguardError.isInstance(error) && error.code === "fenced";
}

function readJobData(data: unknown): RunJobData | undefined {
  if (!data || typeof data !== "object") return undefined;
  const record = data as Record<string, unknown>;
  if (typeof record.runId !== "string" || record.runId === "") return undefined;
  return record as unknown as RunJobData;
}

/** A fenced view that remembers what happened to it during one slice. */
interface TrackedStore extends EventStore {
  confirmOwner(runId: string): Promise<void>;
  readonly runId: string;
  readonly epoch: number;
  /** Set when an append was refused because another worker claimed the run. */
  fenced: FencedError | undefined;
  /** Set when an append lost an `expectedSeq` race to a writer with no epoch. */
  conflict: AppendConflictError | undefined;
  /** Whether the log holds a run-end (read or written in this slice). */
  ended: boolean;
}

function trackStore(view: FencedEventStore, prefetched?: StoredEvent[]): TrackedStore {
  // The log read with the claim answers the first read of the slice (the agent's resume).
  let first = prefetched;
  const tracked: TrackedStore = {
    name: view.name,
    runId: view.runId,
    epoch: view.epoch,
    fenced: undefined,
    conflict: undefined,
    ended: false,
    async append(runId, events, appendOptions) {
      try {
        const result = await view.append(runId, events, appendOptions);
        if (events.some((event) => event.type === "run-end")) tracked.ended = true;
        return result;
      } catch (error) {
        if (isFenced(error)) tracked.fenced = error as FencedError;
        else if (AppendConflictError.isInstance(error))
          tracked.conflict = error as AppendConflictError;
        throw error;
      }
    },
    async read(runId) {
      let events: StoredEvent[];
      if (first && runId === view.runId) {
        events = first;
        first = undefined;
      } else events = await view.read(runId);
      if (events.some((event) => event.type === "run-end")) tracked.ended = true;
      return events;
    },
    list: (filter) => view.list(filter),
    async confirmOwner(runId) {
      try {
        await view.confirmOwner(runId);
      } catch (error) {
        if (isFenced(error)) tracked.fenced = error as FencedError;
        throw error;
      }
    },
  };
  if (prefetched?.some((event) => event.type === "run-end")) tracked.ended = true;
  return tracked;
}
