import type {
  BatchResult,
  BucketSpec,
  CounterSpec,
  LimitStore,
  ReserveResult,
  TakeResult,
} from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { checkLimitOperations, limitSpecs } from "@loopguard/core/plugin";
import { PostgresStoreError } from "./postgres-errors.js";
import { migrateLimits } from "./postgres-limit-migrations.js";
import {
  batchResultOf,
  flatOperation,
  inspectLimits,
  type LimitBucketRow,
  type LimitCounterRow,
  limitStatements,
  pruneRows,
} from "./postgres-limit-statements.js";
import {
  describeTarget,
  isConnectionError,
  lazyPool,
  openPool,
  type PgPool,
  type PostgresConnectionOptions,
  validateConnection,
} from "./postgres-pool.js";

/** Options of `postgresLimitStore`: those of `postgresEventStore`, plus a timeout. */
export interface PostgresLimitStoreOptions extends PostgresConnectionOptions {
  /**
   * How long one call may wait for a connection or a statement, in ms. Default 5000. A call
   * that takes longer rejects (the limit fails closed) instead of hanging a run behind a
   * partitioned database. Applies to a pool opened from `connectionString`; a pool you pass
   * keeps its own settings.
   */
  timeoutMs?: number;
}

export type { LimitBucketRow, LimitCounterRow } from "./postgres-limit-statements.js";

/** The PostgreSQL LimitStore, with the operator's view of its rows. */
export interface PostgresLimitStore extends LimitStore {
  readonly name: "postgres";
  /** The buckets and live counters whose keys start with `prefix` (all by default), for `loopguard limits`. */
  inspect(options?: {
    prefix?: string;
    now?: number;
    limit?: number;
  }): Promise<{ buckets: LimitBucketRow[]; counters: LimitCounterRow[] }>;
  /**
   * Deletes counters whose window has ended (with their reservations) and buckets that are
   * full again (a full bucket is the same as no bucket). Runs by itself at most once a minute
   * on a busy store; returns how many rows went.
   */
  prune(options?: { now?: number }): Promise<number>;
  /** Ends the pool when the store opened it; safe to call twice. */
  close(): Promise<void>;
}

const where = "postgresLimitStore";
const pruneEveryMs = 60_000;

/**
 * Creates a LimitStore on PostgreSQL: token buckets and windowed counters shared by every
 * worker that uses the same database and schema, so four workers together admit the rate
 * configured once, and a tenant's day is one counter for the whole fleet.
 *
 * One round trip per call: a `take` or `refund` is one `INSERT ... ON CONFLICT DO UPDATE ...
 * RETURNING` that refills and takes under the row's lock (concurrent takes queue on the row,
 * none is lost); `reserve` and `settle` are one call of a PL/pgSQL function that locks the
 * counter row. The same reservation id asked for more than it holds (a step taken over by a
 * worker that computed a larger worst case) grows to that amount if it fits, else is refused. Counters carry their window's end and are deleted after it. Errors reject with
 * a `[checkpoint]` message: the gate or budget that asked fails closed.
 *
 * @example
 * const limits = postgresLimitStore({ connectionString: process.env.DATABASE_URL, schema: "loopguard" });
 * const gate = rateLimit({ tool: "send_email", capacity: 20, refillPerSecond: 1 }, { store: limits });
 */
export function postgresLimitStore(options: PostgresLimitStoreOptions): PostgresLimitStore {
  const { schema, quoted: s } = validateConnection(options, where);
  const timeoutMs = options.timeoutMs ?? 5000;
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`,
    );
  // Spread over the minute, so a fleet started at once does not prune at once.
  let lastPrune = Date.now() - Math.random() * pruneEveryMs;

  const { ready, close } = lazyPool({
    store: "limit",
    schema,
    open: () =>
      openPool(options, where, { connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs }),
    prepare: (pool) => migrateLimits(pool, schema, s),
  });

  // Every failure becomes a `[checkpoint]` error that says which call on which key failed;
  // callers (rateLimit, tenantBudget) refuse on it: limits fail closed.
  const run = limitCall(options, schema, ready);

  const maybePrune = (pool: PgPool, now: number) => {
    if (now - lastPrune < pruneEveryMs) return;
    lastPrune = now;
    pruneRows(pool, s, now).catch((error) => options.onError?.(error));
  };

  const statements = limitStatements(s, schema);
  return {
    name: "postgres",
    async take(key, spec, takeOptions): Promise<TakeResult> {
      checkKey(key);
      checkBucket(spec);
      const count = countOf(takeOptions?.count);
      const now = nowOf(takeOptions?.now);
      const row = await run("take", key, async (pool) => {
        const { rows } = await pool.query({
          ...statements.take,
          values: [key, spec.capacity, spec.refillPerSecond, Math.floor(now), count],
        });
        return rows[0];
      });
      const tokens = clean(Number(row?.tokens));
      if (row?.last_ok === true) return { ok: true, remaining: tokens, retryAfterMs: 0 };
      return {
        ok: false,
        remaining: tokens,
        retryAfterMs: Math.ceil(clean(((count - tokens) / spec.refillPerSecond) * 1000)),
      };
    },
    async refund(key, spec, refundOptions) {
      checkKey(key);
      checkBucket(spec);
      const count = countOf(refundOptions?.count);
      const now = nowOf(refundOptions?.now);
      await run("refund", key, (pool) =>
        pool.query({
          ...statements.refund,
          values: [key, spec.capacity, spec.refillPerSecond, Math.floor(now), count],
        }),
      );
    },
    async reserve(key, spec, amount, reserveOptions): Promise<ReserveResult> {
      checkKey(key);
      checkCounter(spec);
      if (typeof amount !== "number" || !Number.isFinite(amount) || amount < 0)
        throw new InvalidArgumentError(
          `[checkpoint] ${where}.reserve(${JSON.stringify(key)}): amount must be a finite number >= 0, got ${String(amount)}`,
        );
      if (typeof reserveOptions?.id !== "string" || reserveOptions.id === "")
        throw new InvalidArgumentError(
          `[checkpoint] ${where}.reserve(${JSON.stringify(key)}): options.id must be a non-empty string (one per reservation, so a retried call does not count twice)`,
        );
      const now = nowOf(reserveOptions.now);
      const row = await run("reserve", key, async (pool) => {
        const { rows } = await pool.query({
          ...statements.reserve,
          values: [
            key,
            Math.floor(spec.windowStart),
            Math.floor(spec.windowStart + spec.windowMs),
            spec.cap,
            amount,
            reserveOptions.id,
            Math.floor(now),
          ],
        });
        maybePrune(pool, now);
        return rows[0];
      });
      return { ok: row?.ok === true, used: clean(Number(row?.used)) };
    },
    async settle(key, id, actual, settleOptions) {
      checkKey(key);
      if (typeof actual !== "number" || !Number.isFinite(actual) || actual < 0)
        throw new InvalidArgumentError(
          `[checkpoint] ${where}.settle(${JSON.stringify(key)}): actual must be a finite number >= 0, got ${String(actual)}`,
        );
      if (typeof id !== "string" || id === "")
        throw new InvalidArgumentError(
          `[checkpoint] ${where}.settle(${JSON.stringify(key)}): id must be a non-empty string`,
        );
      const now = nowOf(settleOptions?.now);
      await run("settle", key, (pool) =>
        pool.query({ ...statements.settle, values: [key, id, actual, Math.floor(now)] }),
      );
    },
    async inspect(inspectOptions = {}) {
      return run("inspect", inspectOptions.prefix ?? "", (pool) =>
        inspectLimits(pool, s, inspectOptions),
      );
    },
    async prune(pruneOptions = {}) {
      const now = pruneOptions.now ?? Date.now();
      return run("prune", "*", (pool) => pruneRows(pool, s, now));
    },
    async batch(operations, batchOptions): Promise<BatchResult> {
      const ops = checkLimitOperations(operations, `[checkpoint] ${where}`);
      const now = nowOf(batchOptions?.now);
      const row = await run(
        "batch",
        ops.map((operation) => operation.key).join(","),
        async (pool) => {
          const { rows } = await pool.query({
            ...statements.batch,
            values: [JSON.stringify(ops.map(flatOperation)), Math.floor(now)],
          });
          maybePrune(pool, now);
          return rows[0];
        },
      );
      return batchResultOf(row?.result, ops);
    },
    close,
  };
}

/** Rounds away float noise below a billionth, so `0.1 + 0.2 - 0.3` reads as 0. */
function clean(value: number): number {
  const rounded = Math.round(value * 1e9) / 1e9;
  return Object.is(rounded, -0) ? 0 : rounded;
}

function checkKey(key: string): void {
  if (typeof key !== "string" || key === "")
    throw new InvalidArgumentError(`[checkpoint] ${where}: key must be a non-empty string`);
}

function checkBucket(spec: BucketSpec): void {
  limitSpecs.bucket(spec, `[checkpoint] ${where}`);
}

function checkCounter(spec: CounterSpec): void {
  limitSpecs.counter(spec, `[checkpoint] ${where}`);
}

function countOf(count: number | undefined): number {
  return limitSpecs.count(count, `[checkpoint] ${where}`);
}

function nowOf(now: number | undefined): number {
  return limitSpecs.now(now, `[checkpoint] ${where}`);
}

/**
 * Runs one call on the store's pool; every failure becomes a `[checkpoint]` error that says
 * which call on which key failed. Callers (rateLimit, tenantBudget) refuse on it: limits fail
 * closed.
 */
function limitCall(
  options: PostgresLimitStoreOptions,
  schema: string,
  ready: () => Promise<PgPool>,
): <T>(what: string, key: string, work: (pool: PgPool) => Promise<T>) => Promise<T> {
  return async (what, key, work) => {
    try {
      return await work(await ready());
    } catch (error) {
      if (InvalidArgumentError.isInstance(error)) throw error;
      if (error instanceof PostgresStoreError) throw error;
      const message = (error as Error)?.message ?? String(error);
      if (isConnectionError(error) || /timeout/i.test(message))
        throw new PostgresStoreError(
          `[checkpoint] ${where}.${what}(${JSON.stringify(key)}): cannot reach PostgreSQL at ${describeTarget(options.connectionString)} (${message}); the limit cannot be checked, so it is refused (fails closed). Is the server running and the URL right?`,
          { cause: error },
        );
      throw new PostgresStoreError(
        `[checkpoint] ${where}.${what}(${JSON.stringify(key)}) failed in schema ${schema}: ${message}`,
        { cause: error },
      );
    }
  };
}
