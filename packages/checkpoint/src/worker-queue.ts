/**
 * The run queue on pg-boss 10: the structural type of the few pg-boss calls the workers make,
 * the lazy import of the optional `pg-boss` peer, and the queue's settings (one queued and
 * one active job per run: the `stately` policy with the run id as singleton key).
 */
import { InvalidArgumentError, type JsonValue } from "@loopguard/core";
import { missingPeerError } from "./missing-peer-error.js";
import { connectGuarded, type PgPool, type PgQueryable, quoteSchema } from "./postgres-pool.js";

/** The data of one job: the run to advance, and its task for the first slice. */
export interface RunJobData {
  runId: string;
  /** The task of a run that has no log yet; the first slice writes its `run-start`. */
  task?: string;
  /** Roles and attributes of the run, for its `run-start`. */
  context?: { roles?: string[]; attributes?: Record<string, JsonValue> };
  /** The run's tenant (`submitRun({ tenant })`): the workers' `tenantConcurrency` counts it. */
  tenant?: string;
  /** The run's priority (`submitRun({ priority })`): higher is fetched first, on every slice. */
  priority?: number;
  /** How many times in a row the job waited for its tenant's concurrency cap (its backoff). */
  deferrals?: number;
  /**
   * When the run joined the queue (ms since the epoch, the database's clock) if it has waited
   * there across more than one job: a job deferred at its tenant's cap carries its first job's
   * time, so the queue wait counts from the submission, not from the last deferral.
   */
  queuedAt?: number;
}

/** A pg-boss job as `fetch` returns it. */
export interface QueueJob {
  id: string;
  name: string;
  data: unknown;
  /** The job's lease in seconds, as pg-boss fetched it (a numeric: may come as a string). */
  expireInSeconds?: number | string;
  /** When the job was sent (the database's clock); fetched with `includeMetadata`. */
  createdOn?: Date | string;
  /** When this fetch made the job active (the database's clock); fetched with `includeMetadata`. */
  startedOn?: Date | string;
}

/** How pg-boss runs SQL: its `db` option, here over our own pool or transaction client. */
export interface QueueDb {
  executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

/** The pg-boss 10 calls the workers use (a `PgBoss` instance satisfies it). */
export interface QueueClient {
  start(): Promise<unknown>;
  stop(options?: {
    graceful?: boolean;
    close?: boolean;
    wait?: boolean;
    timeout?: number;
  }): Promise<void>;
  on(event: "error", listener: (error: Error) => void): unknown;
  createQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  getQueue?(name: string): Promise<{ expireInSeconds?: number | null } | null>;
  updateQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  send(name: string, data: object, options: Record<string, unknown>): Promise<string | null>;
  getJobById?(name: string, id: string): Promise<unknown>;
  fetch(name: string, options?: Record<string, unknown>): Promise<QueueJob[]>;
  complete(name: string, id: string, data?: object, options?: { db?: QueueDb }): Promise<unknown>;
  fail(name: string, id: string, data?: object, options?: { db?: QueueDb }): Promise<unknown>;
}

/** Settings of the run queue shared by `createWorker`, `submitRun` and `approveQueuedRun`. */
export interface RunQueueOptions {
  /** The pg-boss queue name. Default `loopguard-runs`. */
  queue?: string;
  /** The schema pg-boss keeps its tables in. Default `<schema>_boss` (e.g. `loopguard_boss`). */
  bossSchema?: string;
  /**
   * How long a job may stay active before pg-boss gives it to another worker. Default 30 000 ms;
   * whole seconds. The workers' setting governs every slice: a worker sets it on the queue when
   * it starts and on every job it takes. On a submitter it only sets the lease of a queue that
   * no worker has started on yet.
   */
  leaseMs?: number;
  /** Lease expiries (crashed or paused workers) a run survives before its job fails. Default 20. */
  retryLimit?: number;
}

/** Resolved queue settings. */
export interface ResolvedQueueOptions {
  queue: string;
  bossSchema: string;
  leaseMs: number;
  retryLimit: number;
}

/** Checks queue settings and fills in defaults. */
export function resolveQueueOptions(
  options: RunQueueOptions,
  schema: string,
  where: string,
): ResolvedQueueOptions {
  const queue = options.queue ?? "loopguard-runs";
  if (typeof queue !== "string" || !/^[A-Za-z0-9_.-]{1,100}$/.test(queue)) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: queue ${JSON.stringify(queue)} must be 1 to 100 letters, digits, "_", "." or "-"`,
    );
  }
  const bossSchema = options.bossSchema ?? `${schema}_boss`;
  quoteSchema(bossSchema, `${where} (bossSchema)`);
  const leaseMs = options.leaseMs ?? 30_000;
  if (!Number.isInteger(leaseMs) || leaseMs < 1_000 || leaseMs % 1_000 !== 0) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: leaseMs must be a whole number of seconds in milliseconds (pg-boss leases are in seconds), at least 1000, got ${JSON.stringify(leaseMs)}`,
    );
  }
  const retryLimit = options.retryLimit ?? 20;
  if (!Number.isInteger(retryLimit) || retryLimit < 0)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: retryLimit must be a non-negative integer, got ${JSON.stringify(retryLimit)}`,
    );
  return { queue, bossSchema, leaseMs, retryLimit };
}

/**
 * The options of a job a submitter sends: no lease of its own, so the queue's lease (the
 * workers') applies.
 */
export function submitJobSettings(settings: ResolvedQueueOptions): Record<string, unknown> {
  const { expireInSeconds: _workersSetIt, ...rest } = jobSettings(settings);
  return rest;
}

/** The options of every job of the queue (and of the queue itself). */
export function jobSettings(settings: ResolvedQueueOptions): Record<string, unknown> {
  return {
    expireInSeconds: settings.leaseMs / 1000,
    retryLimit: settings.retryLimit,
    retryDelay: 0,
    retryBackoff: false,
  };
}

/** pg-boss's `db` option over a pool or a transaction's client. */
export function queueDb(queryable: PgQueryable): QueueDb {
  return { executeSql: (text, values) => queryable.query(text, values) };
}

/** Options of `openQueue`. */
export interface OpenQueueOptions {
  /** Runs pg-boss's maintenance (lease expiry) on this instance; workers do, submitters do not. */
  supervise: boolean;
  /** How often pg-boss checks for expired leases. Default 5 000 ms; whole seconds, at least 1000. */
  maintenanceIntervalMs?: number;
  onError?: (error: unknown) => void;
}

/**
 * Starts a pg-boss 10 instance on our pool (no second pool) and creates the run queue with the
 * `stately` policy: at most one queued and one active job per singleton key (the run id).
 */
export async function openQueue(
  db: PgPool,
  settings: ResolvedQueueOptions,
  options: OpenQueueOptions,
  where: string,
): Promise<QueueClient> {
  let PgBoss: new (config: Record<string, unknown>) => QueueClient;
  try {
    const module = (await import("pg-boss")) as unknown as { default?: unknown };
    PgBoss = (module.default ?? module) as typeof PgBoss;
  } catch (error) {
    throw missingPeerError("pg-boss", where, error);
  }
  const maintenanceIntervalMs = options.maintenanceIntervalMs ?? 5_000;
  const boss = new PgBoss({
    db: queueDb(db),
    schema: settings.bossSchema,
    supervise: options.supervise,
    schedule: false,
    migrate: true,
    maintenanceIntervalSeconds: Math.max(1, Math.round(maintenanceIntervalMs / 1000)),
  });
  boss.on("error", (error) => options.onError?.(error));
  // pg-boss 10 installs its schema outside its own lock (CREATE SCHEMA races when several
  // processes start at once on a fresh database), so starts are serialised here.
  const client = await connectGuarded(db);
  const key = `loopguard:pg-boss:${settings.bossSchema}`;
  try {
    await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [key]);
    await boss.start();
    await ensureQueue(boss, settings);
  } finally {
    await client
      .query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key])
      .catch(() => undefined);
    client.release();
  }
  return boss;
}

const created = new WeakMap<object, Set<string>>();

/** Creates the run queue once per pg-boss instance (idempotent in the database too). */
export async function ensureQueue(
  boss: QueueClient,
  settings: ResolvedQueueOptions,
): Promise<void> {
  const names = created.get(boss) ?? new Set<string>();
  created.set(boss, names);
  if (names.has(settings.queue)) return;
  await boss.createQueue(settings.queue, { policy: "stately", ...jobSettings(settings) });
  names.add(settings.queue);
}

/**
 * How long a job's run waited in the queue before this fetch took it, in ms, on the database's
 * clock (so workers on other machines agree): from the run's `queuedAt` (carried across
 * deferrals) or the job's creation to the fetch. Undefined when the job came without its times.
 */
export function queueWaitOf(job: QueueJob, data: RunJobData): number | undefined {
  const startedOn = timeOf(job.startedOn);
  const queuedAt =
    typeof data.queuedAt === "number" && Number.isFinite(data.queuedAt)
      ? data.queuedAt
      : timeOf(job.createdOn);
  if (startedOn === undefined || queuedAt === undefined) return undefined;
  return Math.max(0, Math.round(startedOn - queuedAt));
}

/** A timestamp pg-boss returned (a Date from node-postgres, or a string) in ms; undefined when absent or unreadable. */
export function timeOf(value: Date | string | undefined): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}
