/**
 * The connections of `submitRun` and `approveQueuedRun` given a connection string: one small
 * pool, its event store and a started pg-boss per connection string, schema and queue, reused
 * by every call (a submitter that makes thousands of calls opens them once), closed by
 * `closeSubmitConnections()` or when the process has nothing left to do. Their pool lets the
 * process exit while idle. Also the bounded retry of a call on a connection error.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { InvalidArgumentError } from "@loopguard/core";
import { PostgresStoreError } from "./postgres-errors.js";
import { type PostgresEventStore, postgresEventStore } from "./postgres-event-store.js";
import { describeTarget, isConnectionError, loadPg, type PgPool } from "./postgres-pool.js";
import { openQueue, type QueueClient, type ResolvedQueueOptions } from "./worker-queue.js";

/** How `submitRun` and `approveQueuedRun` retry a call that met a connection error. */
export interface SubmitRetryOptions {
  /** Attempts in all, the first included. Default 8. */
  maxAttempts?: number;
  /** The wait before the first retry; it doubles (with jitter) up to `maxDelayMs`. Default 100 ms. */
  baseDelayMs?: number;
  /** The longest wait between two attempts. Default 2 000 ms. */
  maxDelayMs?: number;
}

/** One cached connection: its pool, store and started queue client. */
interface SubmitConnection {
  pool: PgPool;
  store: PostgresEventStore;
  boss: Promise<QueueClient>;
}

const connections = new Map<string, SubmitConnection>();
let exitHook = false;

/**
 * The cached connection for a connection string, schema and queue (made on first use). A
 * connection whose queue could not start is forgotten, so the next call opens a new one.
 */
export async function submitConnection(
  connectionString: string,
  schema: string,
  settings: ResolvedQueueOptions,
  where: string,
): Promise<{ store: PostgresEventStore; boss: QueueClient }> {
  const key = JSON.stringify([connectionString, schema, settings.bossSchema, settings.queue]);
  let entry = connections.get(key);
  if (!entry) {
    const { Pool } = await loadPg(where);
    // Re-checked: another call may have made it while pg loaded.
    entry = connections.get(key);
    if (!entry) {
      const pool = new Pool({ connectionString, max: 2, allowExitOnIdle: true });
      // Errors of idle connections (a restarted server) are expected; the next query reconnects.
      pool.on?.("error", () => undefined);
      const store = postgresEventStore({ pool, schema });
      const made: SubmitConnection = {
        pool,
        store,
        boss: store.pool().then((ready) => openQueue(ready, settings, { supervise: false }, where)),
      };
      made.boss.catch(() => {
        if (connections.get(key) === made) connections.delete(key);
        void closeConnection(made);
      });
      connections.set(key, made);
      entry = made;
      if (!exitHook) {
        exitHook = true;
        // Idle pools let the process exit; this closes them when it is about to.
        process.once("beforeExit", () => {
          exitHook = false;
          void closeSubmitConnections();
        });
      }
    }
  }
  return { store: entry.store, boss: await entry.boss };
}

/**
 * Closes every connection `submitRun` and `approveQueuedRun` opened from a connection string
 * (they are reused across calls). Call it on shutdown; safe to call twice. A later call opens
 * new ones.
 *
 * @example
 * process.on("SIGTERM", async () => { await closeSubmitConnections(); process.exit(0); });
 */
export async function closeSubmitConnections(): Promise<void> {
  const open = [...connections.values()];
  connections.clear();
  await Promise.all(open.map(closeConnection));
}

async function closeConnection(connection: SubmitConnection): Promise<void> {
  const boss = await connection.boss.catch(() => undefined);
  await boss?.stop({ graceful: false, close: false, wait: true }).catch(() => undefined);
  await connection.store.close().catch(() => undefined);
  await connection.pool.end().catch(() => undefined);
}

/** Checks the retry settings; `false` means one attempt. */
export function resolveSubmitRetry(
  retry: SubmitRetryOptions | false | undefined,
  where: string,
): Required<SubmitRetryOptions> {
  if (retry === false) return { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
  if (retry !== undefined && (typeof retry !== "object" || retry === null))
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: retry must be false or { maxAttempts, baseDelayMs, maxDelayMs }, got ${JSON.stringify(retry)}`,
    );
  const resolved = {
    maxAttempts: retry?.maxAttempts ?? 8,
    baseDelayMs: retry?.baseDelayMs ?? 100,
    maxDelayMs: retry?.maxDelayMs ?? 2_000,
  };
  if (
    !Number.isInteger(resolved.maxAttempts) ||
    resolved.maxAttempts < 1 ||
    resolved.maxAttempts > 100
  )
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: retry.maxAttempts must be a whole number from 1 to 100 (default 8), got ${String(retry?.maxAttempts)}`,
    );
  for (const name of ["baseDelayMs", "maxDelayMs"] as const) {
    if (!Number.isInteger(resolved[name]) || resolved[name] < 0 || resolved[name] > 60_000)
      throw new InvalidArgumentError(
        `[checkpoint] ${where}: retry.${name} must be a whole number of milliseconds from 0 to 60000, got ${String(retry?.[name])}`,
      );
  }
  return resolved;
}

/**
 * Runs `attempt` until it succeeds, retrying a connection error (refused, reset, the server
 * shutting down or starting: ECONNREFUSED, ECONNRESET, 57P01, 57P03, ...) with a doubling,
 * jittered wait; anything else, or the last attempt's error, is thrown. `attempt` gets the
 * attempt's number (1-based), so it can tell a retry from the first try.
 */
export async function withConnectionRetry<T>(
  retry: Required<SubmitRetryOptions>,
  attempt: (number: number) => Promise<T>,
  giveUp: (error: unknown, attempts: number) => unknown = (error) => error,
): Promise<T> {
  let delay = retry.baseDelayMs;
  for (let number = 1; ; number += 1) {
    try {
      return await attempt(number);
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      if (number >= retry.maxAttempts) throw giveUp(error, number);
      await sleep(Math.round(delay * (0.5 + Math.random() / 2)));
      delay = Math.min(delay * 2, retry.maxDelayMs);
    }
  }
}

/** The error of a submission that met only connection errors: where, how often, what to do. */
export function unreachableSubmitError(
  error: unknown,
  attempts: number,
  connectionString: string | undefined,
  runId: string,
  where: string,
): PostgresStoreError {
  return new PostgresStoreError(
    `[checkpoint] ${where}: cannot reach PostgreSQL at ${describeTarget(connectionString)} after ${attempts} attempt(s) (${(error as Error)?.message ?? String(error)}); run ${runId} may or may not be queued: submit it again with the same runId (it is queued at most once), or raise retry.maxAttempts`,
    { cause: error },
  );
}
