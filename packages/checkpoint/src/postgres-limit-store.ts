import type {
  BucketSpec,
  CounterSpec,
  LimitStore,
  ReserveResult,
  TakeResult,
} from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import { limitSpecs } from "@loopguard/core/plugin";
import { PostgresStoreError } from "./postgres-errors.js";
import {
  describeTarget,
  isConnectionError,
  lazyPool,
  openPool,
  type PgPool,
  type PostgresConnectionOptions,
  statementName,
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

/** One bucket as `postgresLimitStore.inspect()` reports it. */
export interface LimitBucketRow {
  key: string;
  /** Tokens in the bucket at `now` (refilled). */
  tokens: number;
  capacity: number;
  refillPerSecond: number;
  updatedAt: number;
}

/** One windowed counter as `postgresLimitStore.inspect()` reports it. */
export interface LimitCounterRow {
  key: string;
  windowStart: number;
  windowEnd: number;
  cap: number;
  /** What settled reservations really spent. */
  settled: number;
  /** Open reservations (held by runs in progress, or by a crashed worker until they expire). */
  reserved: number;
  /** How many reservations are open. */
  openReservations: number;
}

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
/** The version of the limit tables and functions this package writes. */
const limitSchemaVersion = 2;
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
  const run = async <T>(what: string, key: string, work: (pool: PgPool) => Promise<T>) => {
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

  const maybePrune = (pool: PgPool, now: number) => {
    if (now - lastPrune < pruneEveryMs) return;
    lastPrune = now;
    pruneRows(pool, s, now).catch((error) => options.onError?.(error));
  };

  const bucketStatement = (what: "take" | "refund") => ({
    name: statementName(`limit_${what}`, schema),
    // $1 key, $2 capacity, $3 refill per second, $4 now, $5 count. The refill uses the row's
    // newest clock (greatest), so a worker whose clock lags never refills twice.
    text:
      what === "take"
        ? `INSERT INTO ${s}.limit_buckets AS b (key, tokens, updated_ms, capacity, refill_per_second, last_ok)
           VALUES ($1, CASE WHEN $5::float8 <= $2::float8 THEN $2::float8 - $5::float8 ELSE $2::float8 END, $4::bigint, $2::float8, $3::float8, $5::float8 <= $2::float8)
           ON CONFLICT (key) DO UPDATE SET
             tokens = CASE
               WHEN least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) >= $5::float8
               THEN least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) - $5::float8
               ELSE least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) END,
             last_ok = least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8) >= $5::float8,
             updated_ms = greatest(b.updated_ms, $4::bigint),
             capacity = $2::float8,
             refill_per_second = $3::float8
           RETURNING tokens, last_ok`
        : `INSERT INTO ${s}.limit_buckets AS b (key, tokens, updated_ms, capacity, refill_per_second, last_ok)
           VALUES ($1, $2::float8, $4::bigint, $2::float8, $3::float8, true)
           ON CONFLICT (key) DO UPDATE SET
             tokens = least($2::float8, b.tokens + greatest(0, $4::bigint - b.updated_ms) / 1000.0 * $3::float8 + $5::float8),
             updated_ms = greatest(b.updated_ms, $4::bigint),
             capacity = $2::float8,
             refill_per_second = $3::float8
           RETURNING tokens, last_ok`,
  });
  const takeStatement = bucketStatement("take");
  const refundStatement = bucketStatement("refund");
  const reserveStatement = {
    name: statementName("limit_reserve", schema),
    text: `SELECT ok, used FROM ${s}.lg_limit_reserve($1, $2::bigint, $3::bigint, $4::float8, $5::float8, $6, $7::bigint)`,
  };
  const settleStatement = {
    name: statementName("limit_settle", schema),
    text: `SELECT ${s}.lg_limit_settle($1, $2, $3::float8, $4::bigint)`,
  };

  return {
    name: "postgres",
    async take(key, spec, takeOptions): Promise<TakeResult> {
      checkKey(key);
      checkBucket(spec);
      const count = countOf(takeOptions?.count);
      const now = nowOf(takeOptions?.now);
      const row = await run("take", key, async (pool) => {
        const { rows } = await pool.query({
          ...takeStatement,
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
          ...refundStatement,
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
          ...reserveStatement,
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
        pool.query({ ...settleStatement, values: [key, id, actual, Math.floor(now)] }),
      );
    },
    async inspect(inspectOptions = {}) {
      const now = inspectOptions.now ?? Date.now();
      const prefix = inspectOptions.prefix ?? "";
      const limit = inspectOptions.limit ?? 200;
      return run("inspect", prefix, async (pool) => {
        const like = `${prefix.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
        const buckets = await pool.query(
          `SELECT key, least(capacity, tokens + greatest(0, $2::bigint - updated_ms) / 1000.0 * refill_per_second) AS tokens,
                  capacity, refill_per_second, updated_ms
           FROM ${s}.limit_buckets WHERE key LIKE $1 ORDER BY key LIMIT $3`,
          [like, Math.floor(now), limit],
        );
        const counters = await pool.query(
          `SELECT c.key, c.window_start, c.window_end, c.cap, c.settled, c.reserved,
                  (SELECT count(*) FROM ${s}.limit_reservations r WHERE r.key = c.key AND r.window_start = c.window_start) AS open
           FROM ${s}.limit_counters c WHERE c.key LIKE $1 AND c.window_end > $2::bigint
           ORDER BY c.key, c.window_start LIMIT $3`,
          [like, Math.floor(now), limit],
        );
        return {
          buckets: buckets.rows.map((row) => ({
            key: String(row.key),
            tokens: clean(Number(row.tokens)),
            capacity: Number(row.capacity),
            refillPerSecond: Number(row.refill_per_second),
            updatedAt: Number(row.updated_ms),
          })),
          counters: counters.rows.map((row) => ({
            key: String(row.key),
            windowStart: Number(row.window_start),
            windowEnd: Number(row.window_end),
            cap: Number(row.cap),
            settled: clean(Number(row.settled)),
            reserved: clean(Number(row.reserved)),
            openReservations: Number(row.open),
          })),
        };
      });
    },
    async prune(pruneOptions = {}) {
      const now = pruneOptions.now ?? Date.now();
      return run("prune", "*", (pool) => pruneRows(pool, s, now));
    },
    close,
  };
}

async function pruneRows(pool: PgPool, s: string, now: number): Promise<number> {
  const { rows } = await pool.query(
    // SKIP LOCKED: a prune never waits on a row a take, reserve or settle holds (and so never
    // deadlocks with them); what it skips goes at the next prune.
    `WITH gone_reservations AS (
       DELETE FROM ${s}.limit_reservations WHERE ctid IN (
         SELECT ctid FROM ${s}.limit_reservations WHERE window_end <= $1::bigint FOR UPDATE SKIP LOCKED)
       RETURNING 1
     ), gone_counters AS (
       DELETE FROM ${s}.limit_counters WHERE ctid IN (
         SELECT ctid FROM ${s}.limit_counters WHERE window_end <= $1::bigint FOR UPDATE SKIP LOCKED)
       RETURNING 1
     ), gone_buckets AS (
       DELETE FROM ${s}.limit_buckets WHERE ctid IN (
         SELECT ctid FROM ${s}.limit_buckets
         WHERE tokens + greatest(0, $1::bigint - updated_ms) / 1000.0 * refill_per_second >= capacity
         FOR UPDATE SKIP LOCKED)
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone_reservations) + (SELECT count(*) FROM gone_counters)
          + (SELECT count(*) FROM gone_buckets) AS n`,
    [Math.floor(now)],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Creates the limit tables and functions in `schema` if they are missing, under an advisory
 * lock so many workers starting at once do it once. Apart from the event store's migrations:
 * a limit store may live in a database of its own.
 */
async function migrateLimits(pool: PgPool, schema: string, s: string): Promise<void> {
  // Up to date already (the common case: a worker joining a running fleet): nothing to lock.
  // DDL such as CREATE INDEX IF NOT EXISTS takes its table lock before it finds the index
  // there, and would queue behind (and deadlock with) the fleet's reserves and settles.
  try {
    const { rows } = await pool.query(`SELECT version FROM ${s}.limit_meta`);
    if (Number(rows[0]?.version) >= limitSchemaVersion) return;
  } catch (error) {
    if (
      (error as { code?: string }).code !== "42P01" &&
      (error as { code?: string }).code !== "3F000"
    )
      throw error;
  }
  const statements = [
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    `CREATE TABLE IF NOT EXISTS ${s}.limit_buckets (
       key text PRIMARY KEY,
       tokens float8 NOT NULL,
       updated_ms bigint NOT NULL,
       capacity float8 NOT NULL,
       refill_per_second float8 NOT NULL,
       last_ok boolean NOT NULL
     )`,
    `CREATE TABLE IF NOT EXISTS ${s}.limit_counters (
       key text NOT NULL,
       window_start bigint NOT NULL,
       window_end bigint NOT NULL,
       cap float8 NOT NULL,
       settled float8 NOT NULL DEFAULT 0,
       reserved float8 NOT NULL DEFAULT 0,
       PRIMARY KEY (key, window_start)
     )`,
    `CREATE INDEX IF NOT EXISTS limit_counters_end_idx ON ${s}.limit_counters (window_end)`,
    `CREATE TABLE IF NOT EXISTS ${s}.limit_reservations (
       key text NOT NULL,
       id text NOT NULL,
       window_start bigint NOT NULL,
       window_end bigint NOT NULL,
       amount float8 NOT NULL,
       reserved_ms bigint NOT NULL,
       PRIMARY KEY (key, id)
     )`,
    `CREATE INDEX IF NOT EXISTS limit_reservations_end_idx ON ${s}.limit_reservations (window_end)`,
    // reserve: lock the counter row (creating it), then decide with the latest committed
    // reservations (each statement of a function reads a fresh snapshot under READ COMMITTED).
    `CREATE OR REPLACE FUNCTION ${s}.lg_limit_reserve(
       p_key text, p_start bigint, p_end bigint, p_cap float8, p_amount float8, p_id text, p_now bigint
     ) RETURNS TABLE (ok boolean, used float8) LANGUAGE plpgsql AS $fn$
     DECLARE
       c_settled float8;
       c_reserved float8;
       r_amount float8;
       r_start bigint;
     BEGIN
       INSERT INTO ${s}.limit_counters AS c (key, window_start, window_end, cap)
         VALUES (p_key, p_start, p_end, p_cap)
         ON CONFLICT (key, window_start) DO UPDATE SET cap = excluded.cap, window_end = excluded.window_end
         RETURNING c.settled, c.reserved INTO c_settled, c_reserved;
       SELECT r.amount, r.window_start INTO r_amount, r_start
         FROM ${s}.limit_reservations r WHERE r.key = p_key AND r.id = p_id;
       IF FOUND THEN
         -- The same id again (a retried or taken-over step) is one reservation. Asked for more
         -- than it holds (another worker's max_tokens), it grows to that if it fits, else is
         -- refused: what it holds must cover what the step may now spend.
         IF p_amount <= r_amount OR r_start <> p_start THEN
           RETURN QUERY SELECT true, c_settled + c_reserved;
           RETURN;
         END IF;
         IF c_settled + c_reserved - r_amount + p_amount > p_cap THEN
           RETURN QUERY SELECT false, c_settled + c_reserved;
           RETURN;
         END IF;
         UPDATE ${s}.limit_reservations SET amount = p_amount WHERE key = p_key AND id = p_id;
         UPDATE ${s}.limit_counters SET reserved = reserved - r_amount + p_amount
           WHERE key = p_key AND window_start = p_start;
         RETURN QUERY SELECT true, c_settled + c_reserved - r_amount + p_amount;
         RETURN;
       END IF;
       IF c_settled + c_reserved + p_amount > p_cap THEN
         RETURN QUERY SELECT false, c_settled + c_reserved;
         RETURN;
       END IF;
       INSERT INTO ${s}.limit_reservations (key, id, window_start, window_end, amount, reserved_ms)
         VALUES (p_key, p_id, p_start, p_end, p_amount, p_now);
       UPDATE ${s}.limit_counters SET reserved = reserved + p_amount
         WHERE key = p_key AND window_start = p_start;
       RETURN QUERY SELECT true, c_settled + c_reserved + p_amount;
     END
     $fn$`,
    // settle: the reservation goes, its counter trades the reserved amount for the actual one.
    `CREATE OR REPLACE FUNCTION ${s}.lg_limit_settle(p_key text, p_id text, p_actual float8, p_now bigint)
     RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       r_start bigint;
       r_amount float8;
     BEGIN
       -- Lock the counter before the reservation, in the order reserve takes them (else two
       -- calls on one counter can deadlock).
       SELECT window_start INTO r_start FROM ${s}.limit_reservations WHERE key = p_key AND id = p_id;
       IF NOT FOUND THEN RETURN; END IF;
       PERFORM 1 FROM ${s}.limit_counters WHERE key = p_key AND window_start = r_start FOR UPDATE;
       DELETE FROM ${s}.limit_reservations WHERE key = p_key AND id = p_id
         RETURNING amount INTO r_amount;
       IF NOT FOUND THEN RETURN; END IF;
       UPDATE ${s}.limit_counters
         SET reserved = greatest(0, reserved - r_amount), settled = settled + p_actual
         WHERE key = p_key AND window_start = r_start;
     END
     $fn$`,
  ];
  statements.push(
    `CREATE TABLE IF NOT EXISTS ${s}.limit_meta (id boolean PRIMARY KEY DEFAULT true CHECK (id), version integer NOT NULL)`,
    `INSERT INTO ${s}.limit_meta (id, version) VALUES (true, ${limitSchemaVersion})
     ON CONFLICT (id) DO UPDATE SET version = greatest(${s}.limit_meta.version, excluded.version)`,
  );
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  (client as unknown as { on?: (event: string, listener: (error: Error) => void) => void }).on?.(
    "error",
    onError,
  );
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
      `loopguard:limits:${schema}`,
    ]);
    for (const statement of statements) await client.query(statement);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch((rollbackError: Error) => {
      broken ??= rollbackError;
    });
    throw error;
  } finally {
    (
      client as unknown as {
        removeListener?: (event: string, listener: (error: Error) => void) => void;
      }
    ).removeListener?.("error", onError);
    client.release(broken ?? false);
  }
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
